"""The alert rules and the charm's metrics text, checked by Prometheus' own `promtool`.

promtool comes from Debian's `prometheus` package, which `.ci/run` installs when it is absent.
Without it these cases skip here and fail in CI (`tests/must_run.py`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from must_run import cannot_run
from reconcile.charm_metrics import MetricsState, ScalesetFacts, render
from relations import cos_agent

RULES = cos_agent.SOURCES.metrics_rules
RULE_TESTS = Path(__file__).parent / "alert_rules"
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
