"""The leader keeps GitHub's view of each scale set between checks and shows it (ADR 0041).

The view itself is proven against the fake GitHub and the in-memory GARM
(`test_github_view.py`). Here the pass is a stand-in: when it asks GitHub about scale sets it
reports a view; the charm must keep it, hand it to the next pass, and show it in
`list-scalesets`.
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
from reconcile.github.view import GithubView
from scaleset_reconciler import ReconcileReport
from unit.walks.charm import bootstrap_secrets, bootstrapped

NOON = datetime.datetime(2026, 12, 2, 12, 0, tzinfo=datetime.UTC)
VIEW = GithubView(
    "small", "small-app", NOON.isoformat(), 2, 1, 1, 0, 0, 1, 1, True, NOON.isoformat(), ""
)


class _Passes:
    """Stands for the scale-set pass: asking GitHub about scale sets gives VIEW."""

    def __init__(self) -> None:
        self.handed: list[dict[str, GithubView]] = []

    def __call__(
        self, *args: Any, ask_github_scalesets: bool = False, github_view: Any = None, **kw: Any
    ) -> ObjectsOutcome:
        self.handed.append(dict(github_view or {}))
        views = {VIEW.key: VIEW} if ask_github_scalesets else None
        return ObjectsOutcome("", "", "", "", ReconcileReport(), github_view=views)


def test_the_view_is_kept_handed_on_and_listed(
    ctx: testing.Context[charm.GarmCharm],
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: a bootstrapped leader whose question to GitHub gives a view of `small`.

    Act: update-status at noon (GitHub asked) and 12:05 (not due); then list-scalesets.

    Assert: the first pass starts from no view, the second from noon's; list-scalesets shows
    it under `github-view` with the names operators read.
    """
    bootstrapped(garm)
    passes = _Passes()
    now = [NOON]
    monkeypatch.setattr(charm, "utc_now", lambda: now[0])
    monkeypatch.setattr(charm_reconcile, "reconcile_objects", passes)
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    for minutes in (0, 5):
        now[0] = NOON + datetime.timedelta(minutes=minutes)
        state = ctx.run(ctx.on.update_status(), state)
    ctx.run(ctx.on.action("list-scalesets"), state)

    assert passes.handed == [{}, {VIEW.key: VIEW}]
    assert ctx.action_results is not None
    (row,) = json.loads(ctx.action_results["github-view"])
    assert row["scaleset"] == "small"
    assert (row["jobs-waiting"], row["garm-idle"], row["disagree"]) == (2, 1, True)
    assert row["waiting-since"] == NOON.isoformat()
