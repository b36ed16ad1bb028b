"""The leader keeps each App installation's GitHub quota between hooks and shows it (ADR 0039).

What the checks do with the quota is proven against the fake GitHub (`test_github_api_budget.py`).
Here the scale-set pass is a stand-in that records what GitHub would have said into the quotas
it is given: the charm must hand the next hook's pass the figures the last one saw, and
`list-scalesets` must show them with the checks skipped.
"""

from __future__ import annotations

import datetime
import json
import time
from typing import Any

import pytest
from ops import testing

import charm
import charm_reconcile
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile.garm_objects import ObjectsOutcome
from reconcile.github.http import QuotaReserved, Quotas
from scaleset_reconciler import ReconcileReport
from unit.walks.charm import bootstrap_secrets, bootstrapped

RESET = int(time.time()) + 1800


class _Passes:
    """Stands for the scale-set pass: it hears 1000 of 5000 left and skips a check.

    It records the figures each pass started from.
    """

    def __init__(self) -> None:
        self.started_from: list[dict[int, int]] = []

    def __call__(self, *args: Any, quotas: Quotas, **kwargs: Any) -> ObjectsOutcome:
        self.started_from.append({k: v.remaining for k, v in quotas.known().items()})
        assert quotas.skipped() == {}
        headers = {
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "1000",
            "X-RateLimit-Reset": str(RESET),
        }
        quotas.record(7, headers)
        with pytest.raises(QuotaReserved):
            quotas.require(7)
        quotas.skip(7, "finished jobs of acme")
        return ObjectsOutcome("", "", "", "", ReconcileReport())


def test_the_next_pass_starts_from_the_kept_quota_and_list_scalesets_shows_it(
    ctx: testing.Context[charm.GarmCharm],
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: a bootstrapped leader whose pass hears 1000 of 5000 left and skips a check.

    Act: two update-status hooks, then list-scalesets.

    Assert: the first pass starts knowing nothing, the second from 1000 left, each with no
    skips of its own; list-scalesets shows the installation's limit, remaining, reserve (a
    quarter of the limit), the window's end and the skipped check.
    """
    bootstrapped(garm)
    passes = _Passes()
    monkeypatch.setattr(charm_reconcile, "reconcile_objects", passes)
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    for _ in range(2):
        state = ctx.run(ctx.on.update_status(), state)
    ctx.run(ctx.on.action("list-scalesets"), state)

    assert passes.started_from == [{}, {7: 1000}]
    assert ctx.action_results is not None
    assert json.loads(ctx.action_results["github-api"]) == [
        {
            "installation": 7,
            "limit": 5000,
            "remaining": 1000,
            "reserve": 1250,
            "reset": datetime.datetime.fromtimestamp(RESET, datetime.UTC).isoformat(),
            "skipped": ["finished jobs of acme"],
        }
    ]
