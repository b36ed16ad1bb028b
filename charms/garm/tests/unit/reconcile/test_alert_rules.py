"""The alert rules and the charm's metrics text, checked by Prometheus' own `promtool`.

promtool comes from Debian's `prometheus` package, which `.ci/run` installs when it is absent.
Without it these cases skip here and fail in CI (`tests/must_run.py`).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from doubles.memory_garm import MemoryGarm
from must_run import cannot_run
from reconcile.charm_metrics import CompletedPass, MetricsState, ScalesetFacts, after_pass, render
from relations import cos_agent
from scaleset_reconciler.naming import live_name
from unit.walks.scalesets import converge, make_spec
from unit.walks.scalesets import run as run_pass

RULES = cos_agent.SOURCES.metrics_rules
RULE_TESTS = Path(__file__).parents[1] / "alert_rules"
CHARM_RULES = RULES / "garm_charm.rules"


@pytest.fixture
def promtool() -> str:
    """The path of promtool; skipped (failed in CI) without it."""
    found = shutil.which("promtool")
    if found is None:
        cannot_run(
            "promtool not found: install Debian's prometheus package (apt-get install prometheus)"
        )
    return found


def run(
    promtool: str, *args: str, stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run promtool with `args`, bounded in time."""
    return subprocess.run(
        [promtool, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_every_rule_file_is_valid_for_prometheus(promtool: str):
    """Arrange: every rule file the charm publishes. Act: promtool check rules.

    Assert: all pass (GARM's rules and the charm's).
    """
    files = sorted(str(path) for path in RULES.glob("*.rules"))

    done = run(promtool, "check", "rules", *files)

    assert len(files) == 2
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_charms_alerts_fire_when_they_should_and_never_while_paused(promtool: str):
    """Arrange: the promtool cases of alert_rules/ (firing, silent, paused, per alert).

    Act: promtool test rules. Assert: every case passes.
    """
    done = run(promtool, "test", "rules", "garm_charm_test.yaml", cwd=RULE_TESTS)

    assert done.returncode == 0, done.stdout + done.stderr


def test_every_charm_alert_has_a_firing_and_a_paused_case():
    """Arrange: the charm's rules and their promtool cases. Act: read both.

    Assert: each alert is expected to fire in some case and checked silent in a paused one,
    so a new rule without cases fails here.
    """
    rules = yaml.safe_load(CHARM_RULES.read_text())
    alerts = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    cases = yaml.safe_load((RULE_TESTS / "garm_charm_test.yaml").read_text())["tests"]

    fired = {
        check["alertname"]
        for case in cases
        for check in case["alert_rule_test"]
        if check["exp_alerts"]
    }
    paused = {
        check["alertname"]
        for case in cases
        if "paused" in case["name"]
        for check in case["alert_rule_test"]
    }

    assert fired == alerts
    assert paused == alerts


def test_the_metrics_text_parses_as_prometheus_reads_it(promtool: str):
    r"""Arrange: metrics with `\`, `"` and a line feed in label values, a fractional timestamp.

    Act: promtool check metrics (Prometheus' own parser and linter) on the rendered text.
    Assert: it passes.
    """
    facts = ScalesetFacts(
        'a\\b"c\nd', 'app"', 3, 1, True, 7, 2, 6, "Mon-Fri 08:00-18:00 UTC", True
    )
    text = render(MetricsState((facts,), 1796151982.25), paused=False)

    done = run(promtool, "check", "metrics", stdin=text)

    assert done.returncode == 0, done.stdout + done.stderr


def test_a_stuck_refresh_beside_busy_outdated_runners_fires(promtool: str, tmp_path: Path):
    """Arrange: min idle 4, 2 runners busy; replacements never boot; the image changes.

    Act: reconcile passes against the in-memory GARM; the exporter's text from the last one
    held for 150 minutes; promtool evaluates the rule on it.
    Assert: 2 idle outdated runners wait beside 2 busy ones, and the alert fires: the busy
    runners are left out once, not twice.
    """
    garm = MemoryGarm()
    before = make_spec(min_idle_runners=4, max_runners=6, application="cfg-small")
    converge(garm, [before])
    garm.advance(61)
    for _ in range(2):
        garm.start_job_when_ready(garm.by_name(live_name(before)).id)
    garm.stuck_boots = True
    after = dataclasses.replace(before, image="ubuntu:24.04")
    report = run_pass(garm, [after])
    for _ in range(2):
        garm.advance(61)
        report = run_pass(garm, [after])
    assert (report.spec("small").outdated_runners, report.spec("small").busy_outdated_runners) == (
        2,
        2,
    )
    completed = CompletedPass(report, (after,), garm.now)
    text = render(after_pass(MetricsState(), completed), paused=False)
    series = [
        {"series": _with_juju(line.split(" ")[0]), "values": f"{line.split(' ')[1]}x150"}
        for line in text.splitlines()
        if line.startswith(("garm_charm_scaleset_outdated", "garm_charm_scaleset_busy"))
    ]
    rules = str(CHARM_RULES)
    case = {
        "rule_files": [rules],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {
                        "eval_time": "80m",
                        "alertname": "GarmCharmRefreshNotProgressing",
                        "exp_alerts": [
                            {"exp_labels": _FIRING_LABELS, "exp_annotations": _ANNOTATIONS}
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "case.yaml").write_text(yaml.safe_dump(case))

    done = run(promtool, "test", "rules", "case.yaml", cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr


_JUJU = 'juju_model_uuid="u",juju_application="garm",juju_unit="garm/0"'
_FIRING_LABELS = {
    "severity": "warning",
    "scaleset": "small",
    "application": "cfg-small",
    "juju_model_uuid": "u",
    "juju_application": "garm",
    "juju_unit": "garm/0",
}


_ANNOTATIONS = {
    "summary": "The rolling refresh of scale set small is not progressing",
    "description": (
        "Scale set small (cfg-small) has had 2 idle outdated runner(s) for an hour without one "
        "being replaced. New runners are probably not coming online: check `juju status garm`, "
        "the provider's faults in `juju run garm/leader list-scalesets` and the image and "
        "flavor in the configurator."
    ),
}


def _with_juju(series: str) -> str:
    """A series of the exporter's text with the labels COS adds to it."""
    return series[:-1] + "," + _JUJU + "}"
