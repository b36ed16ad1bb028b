"""A pause keeps its promises (ADR 0024, ADR 0042): GARM's lease renewed, the drain clock held.

The leader runs through `ops.testing` against the simulator, whose frozen clock the charm
reads; a label change retires `small`'s old scale set while a job runs on it.
"""

from __future__ import annotations

import dataclasses
import datetime
import json

import ops
import pytest
from ops import testing

import charm
import unit.walks.configurators as configurators_walks
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from relations.peers.keys import HOLDS_KEY, PAUSED_SINCE_KEY
from relations.peers.lease import RENEW_WHEN_LEFT, Lease
from unit.doubles.fake_systemctl import TickMachine
from unit.walks.charm import RECONCILE_TICK
from unit.walks.configurators import configurator, leader_state, relabelled, sim_now
from workload.tick import TICK_TIMEOUT

app_key = configurators_walks.app_key
sim = configurators_walks.sim

__all__ = ["app_key", "sim"]  # fixtures
DRAIN = datetime.timedelta(hours=7)
PAUSE = datetime.timedelta(hours=8)


def with_peers(state: testing.State, now: datetime.datetime) -> testing.State:
    """The state with the peer relation: this unit holds a committed lease for 30 days."""
    lease = Lease("garm/0", now + datetime.timedelta(days=30))
    peers = testing.PeerRelation("garm-peers", local_app_data=lease.as_app_data())
    return dataclasses.replace(state, relations={*state.relations, peers})


def peer_data(state: testing.State) -> dict[str, str]:
    """The peer relation's application data."""
    (peers,) = [r for r in state.relations if isinstance(r, testing.PeerRelation)]
    return dict(peers.local_app_data)


def retired_with_a_job(
    sim: GarmSim, resources: frozenset[testing.Resource], key: str
) -> tuple[testing.Context[charm.GarmCharm], testing.State, str, datetime.datetime]:
    """`small` relabelled while its runner runs a job, until the old set is retired.

    Returns:
        The context, the state, the old scale set's name and when it was retired.
    """
    ctx, state = relabelled(sim, resources, key)
    (old,) = sim.state.scalesets.values()
    sim.start_job(old.name)
    state = with_peers(
        ctx.run(ctx.on.relation_changed(next(iter(state.relations))), state), sim_now(sim)
    )
    for _ in range(5):
        if not sim.state.scalesets[old.id].enabled:
            break
        sim.advance(61)
        state = ctx.run(ctx.on.update_status(), state)
    assert not sim.state.scalesets[old.id].enabled, "the old scale set is retired"
    return ctx, state, old.name, sim_now(sim)


def test_without_a_pause_the_drain_deadline_forces_the_busy_runner(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
):
    """Arrange: the old scale set retired with a job running. Act: update-status 8 h later.

    Assert: its runner is force-removed (the contrast for the test below).
    """
    ctx, state, old, _ = retired_with_a_job(sim, resources, app_key)
    sim.advance(PAUSE.total_seconds())

    ctx.run(ctx.on.update_status(), state)

    assert sim.instances(old) == []


def test_resume_after_the_drain_timeout_moves_the_deadline_by_the_pause(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
):
    """Arrange: the old scale set retired with a job running; the operator pauses.

    Act: 8 h later (past the 7 h drain-timeout), resume.
    Assert: the busy runner stays; resume's output says the drain clock stood still for 8 h
    and the old set now drains until its retirement + 15 h; the pause is kept as a hold.
    """
    ctx, state, old, retired_at = retired_with_a_job(sim, resources, app_key)
    paused = ctx.run(ctx.on.action("pause"), state)
    sim.advance(PAUSE.total_seconds())

    resumed = ctx.run(ctx.on.action("resume"), paused)

    assert len(sim.instances(old)) == 1
    assert ctx.action_results is not None
    assert ctx.action_results["drain-clock-held"] == "28800s"
    deadlines = json.loads(ctx.action_results["drain-deadlines"])
    moved = datetime.datetime.fromisoformat(deadlines[old])
    assert abs(moved - (retired_at + DRAIN + PAUSE)) <= datetime.timedelta(seconds=1)
    data = peer_data(resumed)
    assert PAUSED_SINCE_KEY not in data
    assert len(json.loads(data[HOLDS_KEY])) == 1
    assert resumed.unit_status.name == "active"


@pytest.mark.parametrize("interval", ["0", "1h"])
def test_while_paused_the_tick_renews_the_lease_in_time(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
    tick_machine: TickMachine,
    interval: str,
):
    """Arrange: a paused leader whose reconcile-interval is 0 (no tick) or an hour.

    Act: a hook under the pause. Assert: the tick's timer is installed, and fires (with its
    jitter and its own timeout) well within the lease's renewal window, so no update-status
    interval lets the watchdog stop GARM during the pause.
    """
    ctx = testing.Context(charm.GarmCharm)
    state = with_peers(
        leader_state(sim, resources, configurator(app_key), **{"reconcile-interval": interval}),
        sim_now(sim),
    )
    paused = ctx.run(ctx.on.action("pause"), state)

    ctx.run(ctx.on.update_status(), paused)

    timer = tick_machine.tick.paths.timer_file.read_text()
    period = int(timer.split("OnUnitInactiveSec=", 1)[1].split("s", 1)[0])
    jitter = int(timer.split("RandomizedDelaySec=", 1)[1].split("s", 1)[0])
    apart = datetime.timedelta(seconds=period + jitter) + TICK_TIMEOUT
    assert apart < RENEW_WHEN_LEFT


def test_a_tick_under_a_pause_renews_a_lease_running_out(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
):
    """Arrange: a paused leader whose committed lease ends in 5 minutes.

    Act: the reconcile tick. Assert: the lease is renewed; the status is the pause's.
    """
    ctx = testing.Context(charm.GarmCharm)
    now = sim_now(sim)
    lease = Lease("garm/0", now + datetime.timedelta(minutes=5))
    peers = testing.PeerRelation(
        "garm-peers",
        local_app_data={
            **lease.as_app_data(),
            PAUSED_SINCE_KEY: now.isoformat(),
        },
    )
    state = dataclasses.replace(
        leader_state(sim, resources, configurator(app_key)), relations={peers}
    )

    out = ctx.run(RECONCILE_TICK, state)

    renewed = Lease.from_app_data(peer_data(out))
    assert renewed is not None
    assert renewed.until > lease.until
    assert isinstance(out.unit_status, ops.MaintenanceStatus)
