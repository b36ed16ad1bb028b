"""What GARM's /metrics shows per runner and for a scale set GitHub dropped, on the real binaries.

The charm's alert rules (`prometheus_alert_rules/garm.rules`) read only GARM's own metrics:
the per-runner `garm_runner_status` series and the GitHub error counters. Their labels and
when they move were taken from both real binaries; the default run checks v0.2.1, the release
the charm pins, only (about 13 s: GARM makes its first runner about 12 s after the create).
Add `real-newer` to `_TARGETS` to check the newer build as well.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.conftest import REAL_TARGETS, Target, open_target

_SERIES = re.compile(r"^(?P<name>\w+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


_TARGETS = [target for target in REAL_TARGETS if target.id == "real-v0.2.1"]


@pytest.fixture(params=_TARGETS)
def metered(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """A bootstrapped real GARM whose /metrics is on, unauthenticated, refreshed every second."""
    with open_target(request.param, tmp_path / "garm", metrics_period="1s") as target:
        yield target.bootstrap()


def _series(target: Target, metric: str) -> list[tuple[dict[str, str], float]]:
    with urllib.request.urlopen(f"{target.url}/metrics", timeout=5) as answer:  # noqa: S310
        body = answer.read().decode()
    found: list[tuple[dict[str, str], float]] = []
    for line in body.splitlines():
        match = _SERIES.match(line)
        if match and match["name"] == metric:
            found.append((dict(_LABEL.findall(match["labels"])), float(match["value"])))
    return found


def _session_errors(target: Target) -> float:
    return sum(
        value
        for labels, value in _series(target, "garm_github_errors_total")
        if labels["operation"] == "CreateMessageSession"
    )


def test_runner_series_and_a_dropped_scale_set_in_garms_metrics(metered: Target):
    """Arrange: an enabled scale set with min idle 1, so GARM makes a runner.

    Act: read /metrics once the runner shows; GitHub forgets the scale set; read again.

    Assert: each runner has one `garm_runner_status` series (value 1) naming it, its GARM
    scale-set id, its instance `status` and its `runner_status`; once GitHub lost the set,
    GARM's listener fails to open its message session and counts it in
    `garm_github_errors_total{operation="CreateMessageSession"}`.
    """
    created = metered.create_scaleset("metered", enabled=True, min_idle_runners=1)
    assert metered.wait_until(lambda: _series(metered, "garm_runner_status") != [])
    (runner,) = _series(metered, "garm_runner_status")
    errors_before = _session_errors(metered)
    assert metered.real is not None
    metered.real.github.drop_scale_set(created["scale_set_id"])

    failing = metered.wait_until(lambda: _session_errors(metered) > errors_before, timeout=60)

    labels, value = runner
    assert value == 1
    assert labels["name"].startswith("garm-")
    assert labels["scaleset_id"] == str(created["id"])
    assert {"status", "runner_status", "provider", "pool_owner"} <= labels.keys()
    assert failing
