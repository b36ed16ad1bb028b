"""How often the charm asks GitHub about scale sets, and restarts GARM for dropped ones (ADR 0029).

The scale-set pass itself is proven against the in-memory GARM, the simulator and both real
binaries (`test_scaleset_github_dropped.py`, the contract and e2e suites). Here its outcome is
given: every pass reports an old scale set that GitHub dropped and GARM kept. What is checked is
the charm's side, hook after hook on its clock: it asks GitHub at most once a quarter hour, and
restarts GARM for dropped sets at most once an hour, remembering both in its stored state.
"""

from __future__ import annotations

import datetime
from typing import Any

import ops
import pytest
from ops import testing

import charm
import charm_reconcile
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile.garm_objects import ObjectsOutcome
from scaleset_reconciler import Phase, PredecessorReport, ReconcileReport, SpecReport
from unit.walks.charm import bootstrap_secrets, bootstrapped

NOON = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


class _Passes:
    """Stands for the scale-set pass: reports a dropped, kept set; records whether asked."""

    def __init__(self) -> None:
        self.asked: list[bool] = []

    def __call__(self, *args: Any, ask_github_scalesets: bool = False, **kwargs: Any) -> Any:
        self.asked.append(ask_github_scalesets)
        kept = PredecessorReport(
            "small-0ld", 7, Phase.DELETING, delete_failures=1, missing_at_github=True
        )
        report = ReconcileReport(
            specs=[SpecReport("small", Phase.DELETING, live_name="small-new", predecessors=[kept])]
        )
        return ObjectsOutcome("", "", "", "", report)


@pytest.mark.parametrize("dropped", [True, False])
def test_garm_restarts_once_an_hour_at_most_and_github_is_asked_each_quarter_hour(
    ctx: testing.Context[charm.GarmCharm],
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    dropped: bool,
):
    """Arrange: a bootstrapped leader whose every pass reports an old set GitHub dropped.

    Act: update-status at noon, 12:10, 12:59 and 13:01 (the charm's clock).

    Assert: GitHub is asked at noon and 12:59 only; GARM is restarted at noon and at 13:01
    only, each time after the pass; with nothing dropped it is never restarted.
    """
    bootstrapped(garm)
    passes = _Passes()
    now = [NOON]
    monkeypatch.setattr(charm, "utc_now", lambda: now[0])
    monkeypatch.setattr(charm_reconcile, "reconcile_objects", passes)
    if not dropped:
        monkeypatch.setattr(charm_reconcile, "dropped_and_kept", lambda report: [])
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )
    restarts: list[int] = []

    for minutes in (0, 10, 59, 61):
        now[0] = NOON + datetime.timedelta(minutes=minutes)
        state = ctx.run(ctx.on.update_status(), state)
        restarts.append(workload.calls.count("restart"))

    assert passes.asked == [True, False, True, False]
    assert restarts == ([1, 1, 1, 2] if dropped else [0, 0, 0, 0])
    assert state.unit_status == ops.ActiveStatus()


def test_githubs_first_answers_are_kept_between_hooks_for_the_next_check(
    ctx: testing.Context[charm.GarmCharm],
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: a bootstrapped leader whose checks note GitHub naming set 7 missing at noon.

    Act: update-status at noon, 12:10 (no check) and 12:16.
    Assert: the first check starts with no sightings; the one at 12:16 gets noon's, as the
    charm kept them in its stored state (GitHub's verdict takes two checks: ADR 0029).
    """
    bootstrapped(garm)
    given: list[object] = []

    def passes(*args: Any, ask_github_scalesets: bool = False, **kwargs: Any) -> Any:
        if ask_github_scalesets:
            given.append(kwargs["missing_sightings"])
        sightings = {7: NOON} if ask_github_scalesets else None
        return ObjectsOutcome("", "", "", "", ReconcileReport(), missing_sightings=sightings)

    now = [NOON]
    monkeypatch.setattr(charm, "utc_now", lambda: now[0])
    monkeypatch.setattr(charm_reconcile, "reconcile_objects", passes)
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    for minutes in (0, 10, 16):
        now[0] = NOON + datetime.timedelta(minutes=minutes)
        state = ctx.run(ctx.on.update_status(), state)

    assert given == [{}, {7: NOON}]
