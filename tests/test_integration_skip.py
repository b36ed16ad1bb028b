"""Without Juju only tests/integration is skipped; the suites collected with it still run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

TESTS = Path(__file__).resolve().parent
REPOSITORY = TESTS.parent


def test_without_juju_only_the_integration_tests_skip(tmp_path: Path):
    """Arrange: PATH without `juju`; a cheap test file and tests/integration collected together.

    Act: run pytest on both in a fresh interpreter (about 3 s).
    Assert: the other file's tests ran and passed; every integration test skipped, saying why.
    """
    report = tmp_path / "report.xml"
    other = TESTS / "test_check_release_checksums.py"

    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(other), str(TESTS / "integration"), "-q",
         "-p", "no:cacheprovider", "--junit-xml", str(report)],
        cwd=REPOSITORY, env={**os.environ, "PATH": _path_without_juju()},
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip

    assert run.returncode == 0, run.stdout + run.stderr
    outcomes = _outcomes(report)
    others = {name: outcome for name, outcome in outcomes.items() if "integration." not in name}
    integration = {name: outcome for name, outcome in outcomes.items() if name not in others}
    assert others, outcomes
    assert set(others.values()) == {"passed"}, others
    assert integration, outcomes
    assert set(integration.values()) == {
        "skipped: no juju CLI on this machine: integration tests need a Juju controller"
    }, integration


def _path_without_juju() -> str:
    """This PATH without the directories holding a `juju` (the other tests need the rest)."""
    kept = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and not (Path(entry) / "juju").exists()
    ]
    return os.pathsep.join(kept)


def _outcomes(report: Path) -> dict[str, str]:
    """Each test case's `classname.name` -> `passed`, or `skipped: <reason>`, or `failed`."""
    outcomes: dict[str, str] = {}
    for case in ElementTree.parse(report).iter("testcase"):  # noqa: S314 (our own report)
        name = f"{case.get('classname')}.{case.get('name')}"
        skipped = case.find("skipped")
        if skipped is not None:
            outcomes[name] = f"skipped: {skipped.get('message', '')}"
        elif case.find("failure") is not None or case.find("error") is not None:
            outcomes[name] = "failed"
        else:
            outcomes[name] = "passed"
    return outcomes
