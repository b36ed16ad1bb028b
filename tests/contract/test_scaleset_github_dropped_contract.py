"""The scale-set reconciler when GitHub dropped a scale set (its offline deletion), over HTTP.

GitHub forgets a scale set whose listener stayed offline for days. GARM then keeps a retired
one through every delete and recreates any one at GitHub, under the same name, when its worker
starts again (a GARM restart): garm-behaviour B33, checked on both real binaries by
`test_targets_github_dropped.py`. These tests run the charm's planner and executor against the
simulator, which models both.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from contract.conftest import Garm
from contract.test_scaleset_reconciler_contract import (
    NEW_LABELS,
    SETTINGS,
    converge,
    make_spec,
    names,
    run,
    sim_now,
)
from garm_api import GarmClient
from garm_sim import GarmSim
from scaleset_reconciler import (
    GithubScaleSetRef,
    ReconcileReport,
    blocked_message,
    dropped_and_kept,
    reconcile,
)
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec


@pytest.fixture
def client(garm: Garm) -> GarmClient:
    """A garm_api client logged in to the bootstrapped simulator."""
    return GarmClient(garm.url, garm.token, connect_timeout=2, read_timeout=5)


def _github_id(garm: Garm, name: str) -> int:
    return next(s.github_id for s in garm.sim.state.scalesets.values() if s.name == name)


def test_a_retired_set_github_dropped_blocks_until_a_restart_then_goes(
    garm: Garm, client: GarmClient
):
    """Arrange: a label change retired the old scale set; it drained; GitHub dropped it.

    Act: passes a retry apart until three deletes were kept; restart GARM; one more pass.

    Assert: the old set stays through the kept deletes and the status says to restart garm;
    after the restart the next delete removes it and nothing is Blocked.
    """
    sim = garm.sim
    relabelled = [make_spec(labels=NEW_LABELS, min_idle_runners=0)]
    converge(client, sim, [make_spec(min_idle_runners=0)])
    old = live_name(make_spec())
    old_github_id = _github_id(garm, old)
    run(client, sim, relabelled)
    sim.state.github.drop(old_github_id)
    reports = []
    for _ in range(4):
        sim.advance(61 * 4)  # past the doubling retry waits: 1, 2, 4 minutes
        reports.append(run(client, sim, relabelled))
    kept = old in names(sim)
    blocked = blocked_message(reports[-1])

    sim.restart()
    sim.advance(61 * 8)
    after = run(client, sim, relabelled)

    assert kept
    assert "GitHub dropped it? restart garm" in blocked
    assert old not in names(sim)
    assert blocked_message(after) == ""


def test_a_live_set_github_dropped_comes_back_under_its_name_after_a_restart(
    garm: Garm, client: GarmClient
):
    """Arrange: a converged live scale set with an idle runner; GitHub dropped it.

    Act: restart GARM; one pass.

    Assert: GARM holds the same scale set (same name, same GARM id) linked to a new GitHub
    scale set; the pass is converged and created or deleted nothing (no new attempt name).
    """
    sim = garm.sim
    spec = make_spec()
    converge(client, sim, [spec])
    name = live_name(spec)
    before = {s.name: s.id for s in sim.state.scalesets.values()}
    old_github_id = _github_id(garm, name)
    sim.state.github.drop(old_github_id)

    sim.restart()
    report = run(client, sim, [spec])

    assert {s.name: s.id for s in sim.state.scalesets.values()} == before
    assert _github_id(garm, name) not in (0, old_github_id)
    assert _github_id(garm, name) in sim.state.github.scale_sets
    assert report.converged


def test_a_live_set_github_dropped_is_replaced_under_a_new_name_without_a_restart_first(
    garm: Garm, client: GarmClient
):
    """Arrange: a converged live scale set with an idle runner; GitHub dropped it.

    Act: passes a minute apart that ask the simulator's GitHub (as the charm asks GitHub) until
    the old set's delete was kept and GitHub's answer names it; GARM restarts (the charm's
    restart); passes.

    Assert: a new attempt is created and linked to a scale set GitHub has, before any
    restart; the old set is kept through a delete until the restart, then deleted; the pass
    after is converged.
    """
    sim = garm.sim
    spec = make_spec()
    converge(client, sim, [spec])
    old = live_name(spec)
    sim.state.github.drop(_github_id(garm, old))
    new = live_name(spec, attempt=1)

    reports = [asking(client, sim, [spec])]
    created_at_github = _github_id(garm, new) in sim.state.github.scale_sets
    for _ in range(8):
        sim.advance(61)
        reports.append(asking(client, sim, [spec]))
        if dropped_and_kept(reports[-1]):
            break
    kept = old in names(sim)
    sim.restart()
    sim.advance(61 * 4)
    after = [run(client, sim, [spec]) for _ in range(2)]

    assert reports[0].spec("small").missing_at_github
    assert created_at_github
    assert kept
    assert dropped_and_kept(reports[-1]) == [old]
    assert names(sim) == {new}
    assert after[-1].converged


def asking(client: GarmClient, sim: GarmSim, specs: Sequence[ScalesetSpec]) -> ReconcileReport:
    """One pass that asks the simulator's GitHub which scale sets it no longer has."""

    def missing(refs: Sequence[GithubScaleSetRef]) -> frozenset[int]:
        return frozenset(
            r.scaleset_id for r in refs if r.github_id not in sim.state.github.scale_sets
        )

    return reconcile(
        client,
        specs,
        now=sim_now(sim),
        settings=SETTINGS,
        sweep_orphans=True,
        missing_at_github=missing,
    )
