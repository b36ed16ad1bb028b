"""The leader checks for offline runners every 5 minutes and keeps its sightings (ADR 0040).

The check itself is proven against the fake GitHub (`test_offline_runners.py`). Here the pass
is a stand-in that reports a sighting: the charm must check at most every 5 minutes on its
clock, hand each check the sightings the last one kept, and show them in `list-scalesets`.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from ops import testing

import charm
import charm_reconcile
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile.garm_objects import ObjectsOutcome
from reconcile.github.offline_runners import OfflineReport
from scaleset_reconciler import ReconcileReport
from unit.walks.charm import bootstrap_secrets, bootstrapped

NOON = datetime.datetime(2026, 12, 2, 12, 0, tzinfo=datetime.UTC)
SEEN = {"garm-000000000001": NOON.isoformat()}


class _Passes:
    """Stands for the scale-set pass: a check sees one runner offline since noon."""

    def __init__(self) -> None:
        self.handed: list[dict[str, str] | None] = []

    def __call__(self, *args: Any, offline_since: Any = None, **kwargs: Any) -> ObjectsOutcome:
        self.handed.append(None if offline_since is None else dict(offline_since))
        offline = None if offline_since is None else OfflineReport(True, (), {}, SEEN)
        return ObjectsOutcome("", "", "", "", ReconcileReport(), offline)


def test_the_check_runs_every_5_minutes_with_the_kept_sightings(
    ctx: testing.Context[charm.GarmCharm],
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: a bootstrapped leader whose checks see one runner offline since noon.

    Act: update-status at noon, 12:02, 12:05 and 12:06; then list-scalesets.

    Assert: checks at noon (nothing kept) and 12:05 (the noon sighting), none between;
    list-scalesets shows the sighting under `offline-runners`.
    """
    bootstrapped(garm)
    passes = _Passes()
    now = [NOON]
    monkeypatch.setattr(charm, "utc_now", lambda: now[0])
    monkeypatch.setattr(charm_reconcile, "reconcile_objects", passes)
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    for minutes in (0, 2, 5, 6):
        now[0] = NOON + datetime.timedelta(minutes=minutes)
        state = ctx.run(ctx.on.update_status(), state)
    ctx.run(ctx.on.action("list-scalesets"), state)

    assert passes.handed == [{}, None, SEEN, None]
    assert ctx.action_results is not None
    assert json.loads(ctx.action_results["offline-runners"]) == SEEN
