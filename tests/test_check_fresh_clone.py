"""scripts/check_fresh_clone.py: what a fresh clone's suites may report, and its environment."""

from __future__ import annotations

import configparser
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
SCRIPT = REPOSITORY / "scripts" / "check_fresh_clone.py"
PASSED = {
    "GARM_BIN",
    "GARM_BIN_V021",
    "GARM_BIN_NEWER",
    "GARM_PROVIDER_OPENSTACK_BIN",
    "GITHUB_OPENAPI_DIR",
}
V021_REASON = (
    "real-GARM mode needs a GARM v0.2.1 server binary: set GARM_BIN_V021=/path/to/garm "
    "(or GARM_BIN), or put it in /tmp/x/shared/garm/bin"
)
NEWER_REASON = V021_REASON.replace("v0.2.1", "newer").replace("V021", "NEWER")
PROVIDER_REASON = (
    "the real provider needs garm-provider-openstack-* in /tmp/x (or GARM_PROVIDER_OPENSTACK_BIN)"
)
PROMTOOL_REASON = "promtool not found: install Debian's prometheus package"
OPENAPI_REASON = (
    "GitHub's OpenAPI description (@octokit/openapi@23.0.2) is not in GITHUB_OPENAPI_DIR: run "
    "`export GITHUB_OPENAPI_DIR=$(scripts/fetch_github_openapi.sh)`"
)
EVERY_PART = (V021_REASON, NEWER_REASON, PROVIDER_REASON, PROMTOOL_REASON, OPENAPI_REASON)


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """The script, loaded as a module."""
    spec = importlib.util.spec_from_file_location("check_fresh_clone", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses resolve their annotations through sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def junit(tmp_path: Path, cases: str) -> Path:
    """A JUnit report as pytest writes it, holding `cases`."""
    report = tmp_path / "report.xml"
    report.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        f"{cases}</testsuite></testsuites>"
    )
    return report


def outcome_with(script: ModuleType, *reasons: str):
    """An outcome in which each reason skipped one case."""
    outcome = script.Outcome(cases=len(reasons))
    for reason in reasons:
        outcome.skips[reason] += 1
    return outcome


def test_an_error_in_a_fixture_is_reported_with_its_message(script: ModuleType, tmp_path: Path):
    """Arrange: a report with a passed case, a skipped one and one erroring in setup.

    Act: read it.
    Assert: three cases; the error is a problem naming the case and the KeyError; the skip
    is counted under its reason without pytest's prefix.
    """
    report = junit(
        tmp_path,
        '<testcase classname="tests.e2e.test_garm_day2" name="test_upgrade"><error '
        "message=\"failed on setup with &quot;KeyError: 'v0.2.1'&quot;\">trace</error>"
        '</testcase><testcase classname="a" name="ok"/><testcase classname="b" name="s">'
        f'<skipped type="pytest.skip" message="Skipped: {PROMTOOL_REASON}"/></testcase>',
    )

    outcome = script.read_reports([report])

    assert outcome.cases == 3
    (problem,) = outcome.problems
    assert problem.startswith("error: tests.e2e.test_garm_day2::test_upgrade")
    assert "KeyError: 'v0.2.1'" in problem
    assert dict(outcome.skips) == {PROMTOOL_REASON: 1}


def test_every_real_part_skipped_with_its_reason_passes(script: ModuleType):
    """Arrange: one skip per real part (PostgreSQL, masked by the newer GARM, absent).

    Act: check, tox having succeeded.
    Assert: no problem.
    """
    problems = script.check(outcome_with(script, *EVERY_PART), PASSED, tox_returncode=0)

    assert problems == []


@pytest.mark.parametrize(
    ("reasons", "passed", "expected"),
    [
        pytest.param(("",), PASSED, "a case skipped without a reason", id="no-reason"),
        pytest.param(
            ("systemd-analyze is not installed here",),
            PASSED,
            "a skip that names no real part",
            id="unknown-reason",
        ),
        pytest.param(
            (),
            PASSED - {"GARM_PROVIDER_OPENSTACK_BIN"},
            "tox does not pass GARM_PROVIDER_OPENSTACK_BIN",
            id="variable-not-passed",
        ),
    ],
)
def test_a_skip_a_newcomer_could_not_act_on_is_a_problem(
    script: ModuleType, reasons: tuple[str, ...], passed: set[str], expected: str
):
    """Arrange: every real part skipped, plus `reasons`; tox passing `passed`.

    Act: check.
    Assert: the one problem says what is wrong with the skip.
    """
    outcome = outcome_with(script, *EVERY_PART, *reasons)

    problems = script.check(outcome, passed, tox_returncode=0)

    assert len(problems) == 1
    assert problems[0].startswith(expected)


def test_a_real_part_the_clone_found_is_a_problem(script: ModuleType):
    """Arrange: no case reported promtool missing (it was on PATH).

    Act: check.
    Assert: the problem says the clone found promtool; PostgreSQL, masked, is not required.
    """
    outcome = outcome_with(script, V021_REASON, NEWER_REASON, PROVIDER_REASON, OPENAPI_REASON)

    problems = script.check(outcome, PASSED, tox_returncode=0)

    assert problems == ["no case reported the promtool missing: the clone found it"]


def test_a_failed_suite_is_a_problem_without_blaming_the_later_ones(script: ModuleType):
    """Arrange: a failed case; tox stopped there, so the promtool suite never reported.

    Act: check with tox's exit status 1.
    Assert: the failure and tox's exit are the problems; no real part is said to be found.
    """
    outcome = outcome_with(script, V021_REASON)
    outcome.problems.append("failure: a::b: assert False")

    problems = script.check(outcome, PASSED, tox_returncode=1)

    assert problems == [
        "failure: a::b: assert False",
        "tox exited 1: a suite failed or could not start",
    ]


def test_the_fresh_environment_has_no_real_part(script: ModuleType, tmp_path: Path):
    """Arrange: an environment with CI, binary variables and promtool's directory on PATH.

    Act: make the fresh environment.
    Assert: CI and the variables are gone, PostgreSQL's directory is the empty one, promtool's
    directory is off PATH and the others stay in order.
    """
    tools, other = tmp_path / "tools", tmp_path / "other"
    for directory in (tools, other):
        directory.mkdir()
    (tools / "promtool").touch()
    environ = {
        "CI": "true",
        "GARM_BIN_DIR": "/work/shared/garm/bin",
        "GARM_BIN_V021": "/bin/garm",
        "GARM_PROVIDER_OPENSTACK_BIN": "/bin/provider",
        "HOME": "/root",
        "PATH": f"{other}:{tools}:/usr/bin",
    }

    fresh = script.fresh_environment(environ, tmp_path / "empty")

    assert fresh == {
        "HOME": "/root",
        "PATH": f"{other}:/usr/bin",
        "POSTGRESQL_BIN_DIR": str(tmp_path / "empty"),
    }
    assert not any((tmp_path / "empty").iterdir())


def test_tox_config_output_names_passed_and_set_variables(script: ModuleType):
    """Arrange: `tox config -k pass_env set_env` output as tox 4 prints it.

    Act: read the variable names.
    Assert: pass_env's entries and set_env's names, nothing else.
    """
    shown = (
        "[testenv:unit]\npass_env =\n  CI\n  GARM_BIN_V021\n  PIP_*\n"
        "set_env =\n  GARM_BIN_DIR=/x/garm/bin\n  PYTHONDONTWRITEBYTECODE=1\n"
    )

    names = script.config_variables(shown)

    assert names == {"CI", "GARM_BIN_V021", "PIP_*", "GARM_BIN_DIR", "PYTHONDONTWRITEBYTECODE"}


def test_the_fresh_clone_env_runs_every_charm_suite_that_can_skip_a_real_part():
    """Arrange: the charms' unit test files that call must_run (they need a real part).

    Act: read the fresh-clone environment's commands from tox.ini.
    Assert: each such file is among them, so the fresh leg sees its skips.
    """
    charm_vars = {"garm": "{[vars]garm}", "garm-configurator": "{[vars]configurator}"}
    needing = {
        f"{charm_vars[path.relative_to(REPOSITORY / 'charms').parts[0]]}/"
        + "/".join(path.relative_to(REPOSITORY / "charms").parts[1:])
        for path in (REPOSITORY / "charms").glob("*/tests/unit/**/*.py")
        if re.search(r"^from must_run import", path.read_text(), re.MULTILINE)
    }
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPOSITORY / "tox.ini")

    commands = tox["testenv:fresh-clone"]["commands"]

    assert needing, "the charms' unit suites have cases that need a real part"
    assert {name for name in needing if name not in commands} == set()
