"""Handing GARM over between units after a leadership change (ADR 0005)."""

from __future__ import annotations

import datetime

import ops
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ops import testing

from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from relations.peers.handover import (
    TAKEOVER_DEADLINE,
    HostClaim,
    Verdict,
    decide,
    has_stopped_for,
    stopped_for,
)
from relations.peers.keys import HOST_KEY, HOST_SINCE_KEY, RUNNING_KEY, STOPPED_FOR_KEY
from relations.peers.lease import TAKING_LEASE
from unit.walks.charm import (
    OTHER_URLS,
    PASSWORD,
    Config,
    Ctx,
    Resources,
    bootstrap_secrets,
    on_postgresql,
)

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def claim_data(unit: str, age: datetime.timedelta) -> dict[str, str]:
    """Peer application data claiming GARM for `unit`, made `age` ago."""
    since = datetime.datetime.now(datetime.UTC) - age
    return {HOST_KEY: unit, HOST_SINCE_KEY: since.isoformat()}


def peers(
    app_data: dict[str, str], running: dict[int, bool], *, local_running: bool | None = None
) -> testing.PeerRelation:
    """The garm-peers relation with the other units' running flags."""
    local = {} if local_running is None else {RUNNING_KEY: str(local_running).lower()}
    return testing.PeerRelation(
        "garm-peers",
        local_app_data=app_data,
        local_unit_data=local,
        peers_data={unit: {RUNNING_KEY: str(flag).lower()} for unit, flag in running.items()},
    )


@pytest.fixture
def bootstrapped_garm(garm: GarmSim) -> GarmSim:
    """A GARM an earlier leader already bootstrapped on the shared database."""
    garm.bootstrap("admin", PASSWORD, urls=OTHER_URLS)
    return garm


# The charm ------------------------------------------------------------------------------------


def test_new_leader_waits_while_the_former_leader_runs_garm(
    ctx: Ctx,
    workload: RecordingWorkload,
    bootstrapped_garm: GarmSim,
    resources: Resources,
    config: Config,
):
    """Arrange: garm/0 is elected; garm/1 ran GARM and still says so.

    Act: leader-elected. Assert: garm/0 claims GARM, does not start it, calls no GARM API and
    waits naming garm/1; it says it does not run GARM.
    """
    relation = peers(claim_data("garm/1", datetime.timedelta(hours=3)), {1: True})

    out = ctx.run(ctx.on.leader_elected(), on_postgresql(resources, config, relation)[0])

    assert out.unit_status == ops.WaitingStatus(
        "taking over GARM: waiting for garm/1 to stop it (at most 5 min)"
    )
    assert "apply" not in workload.calls
    assert bootstrapped_garm.calls() == []
    written = out.get_relation(relation.id)
    assert isinstance(written, testing.PeerRelation)
    assert written.local_app_data[HOST_KEY] == "garm/0"
    assert written.local_unit_data[RUNNING_KEY] == "false"


def test_new_leader_starts_garm_once_the_former_leader_stopped(
    ctx: Ctx,
    workload: RecordingWorkload,
    bootstrapped_garm: GarmSim,
    resources: Resources,
    config: Config,
):
    """Arrange: garm/0 claimed GARM a minute ago; garm/1 now says it stopped.

    Act: the peer relation changes; the next hook. Assert: garm/0 takes GARM's lease first
    (ADR 0019), then starts GARM on PostgreSQL with the claim kept, says it runs GARM, Active.
    """
    app_data = claim_data("garm/0", datetime.timedelta(minutes=1))
    relation = peers(app_data, {1: False}, local_running=False)

    taking = ctx.run(
        ctx.on.relation_changed(relation, remote_unit=1),
        on_postgresql(resources, config, relation)[0],
    )
    out = ctx.run(ctx.on.update_status(), taking)

    assert taking.unit_status == ops.WaitingStatus(TAKING_LEASE)
    assert out.unit_status == ops.ActiveStatus()
    assert workload.applied[-1].postgres is not None
    written = out.get_relation(relation.id)
    assert isinstance(written, testing.PeerRelation)
    assert {key: written.local_app_data[key] for key in app_data} == app_data
    assert written.local_unit_data[RUNNING_KEY] == "true"


def test_new_leader_starts_garm_after_the_deadline(
    ctx: Ctx,
    workload: RecordingWorkload,
    bootstrapped_garm: GarmSim,
    resources: Resources,
    config: Config,
):
    """Arrange: garm/0 claimed GARM longer ago than the deadline; garm/1 never answered.

    garm/1 holds no lease (a revision before leases).
    Act: update-status twice. Assert: GARM started anyway (garm/1's machine is presumed down),
    once garm/0's lease is committed.
    """
    relation = peers(claim_data("garm/0", TAKEOVER_DEADLINE), {1: True})

    taking = ctx.run(ctx.on.update_status(), on_postgresql(resources, config, relation)[0])
    out = ctx.run(ctx.on.update_status(), taking)

    assert out.unit_status == ops.ActiveStatus()
    assert "apply" in workload.calls


def test_former_leader_stops_garm_when_another_unit_claims_it(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: garm/0 ran GARM and lost leadership; garm/1 claimed GARM.

    Act: the peer relation changes. Assert: GARM stopped, garm/0 says so, no GARM call.
    """
    workload.running = True
    relation = peers(
        claim_data("garm/1", datetime.timedelta(seconds=5)), {1: False}, local_running=True
    )
    state, _ = on_postgresql(resources, config, relation, leader=False)

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=1), state)

    assert not workload.running
    assert out.unit_status == ops.ActiveStatus("standby: the leader runs GARM")
    written = out.get_relation(relation.id)
    assert isinstance(written, testing.PeerRelation)
    assert written.local_unit_data[RUNNING_KEY] == "false"
    assert garm.calls() == []


def test_former_leader_stops_garm_even_when_its_config_is_invalid(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a former leader still running GARM; its config is invalid.

    Act: config-changed. Assert: Blocked on the option, and GARM stopped all the same.
    """
    workload.running = True
    relation = peers(claim_data("garm/1", datetime.timedelta(seconds=5)), {1: False})
    state = testing.State(
        leader=False, resources=resources, config={**config, "port": 0}, relations=[relation]
    )

    out = ctx.run(ctx.on.config_changed(), state)

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert "port" in out.unit_status.message
    assert not workload.running


def test_sqlite_leader_never_starts_afresh_while_the_data_is_on_another_unit(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: garm/1 ran GARM on SQLite and is still in the model; garm/0 is elected.

    Act: leader-elected. Assert: Blocked naming both units, GARM not started, no GARM call.
    """
    relation = peers(claim_data("garm/1", datetime.timedelta(days=2)), {1: False})
    state = testing.State(
        leader=True,
        resources=resources,
        config=config,
        relations=[relation],
        secrets=bootstrap_secrets(),
    )

    out = ctx.run(ctx.on.leader_elected(), state)

    assert out.unit_status == ops.BlockedStatus(
        "GARM's SQLite data is on garm/1: remove garm/0 to hand leadership back, or remove "
        "garm/1 to start afresh"
    )
    assert "apply" not in workload.calls
    assert garm.calls() == []


# The decision ---------------------------------------------------------------------------------


def test_sqlite_host_that_left_the_model_is_replaced():
    """Arrange: the claim names a unit no longer in the relation; SQLite.

    Act: decide. Assert: this leader runs GARM under a new claim.
    """
    old = HostClaim("garm/3", NOW - datetime.timedelta(days=1))

    decision = decide("garm/0", old, {"garm/1": False}, sqlite=True, now=NOW)

    assert decision.verdict is Verdict.RUN
    assert decision.claim == HostClaim("garm/0", NOW)


def test_unreadable_claim_counts_as_none():
    """Arrange: peer data with a naive or garbled timestamp. Act: parse. Assert: None."""
    assert HostClaim.from_app_data({HOST_KEY: "garm/1", HOST_SINCE_KEY: "yesterday"}) is None
    assert (
        HostClaim.from_app_data({HOST_KEY: "garm/1", HOST_SINCE_KEY: "2026-11-30T10:00"}) is None
    )
    assert HostClaim.from_app_data({}) is None


units = st.sampled_from([f"garm/{n}" for n in range(4)])


@given(
    me=units,
    holder=st.one_of(st.none(), units),
    age=st.integers(min_value=0, max_value=3600),
    running=st.dictionaries(units, st.booleans()),
    sqlite=st.booleans(),
)
def test_never_runs_beside_a_unit_that_says_it_runs_garm_before_the_deadline(
    me: str, holder: str | None, age: int, running: dict[str, bool], sqlite: bool
):
    """Arrange: any claim, any peers' flags. Act: decide.

    Assert: RUN only when no other unit says it runs GARM or this leader's claim is past the
    deadline; the published claim always names this leader unless Blocked; a claim already
    held by this leader keeps its start time.
    """
    running.pop(me, None)
    claim = None if holder is None else HostClaim(holder, NOW - datetime.timedelta(seconds=age))

    decision = decide(me, claim, running, sqlite=sqlite, now=NOW)

    if decision.verdict is Verdict.BLOCKED:
        assert sqlite
        assert claim is not None
        assert claim.unit in running
        return
    assert decision.claim.unit == me
    if claim is not None and claim.unit == me:
        assert decision.claim == claim
    past_deadline = NOW - decision.claim.since >= TAKEOVER_DEADLINE
    if decision.verdict is Verdict.RUN:
        assert past_deadline or not any(running.values())
    else:
        assert not past_deadline
        assert any(running.values())


# --- Found by mutation testing (mutmut): exact decisions and peer data ---
# (was test_service_handover_exact.py)
# The hand-over's decisions and peer data, pinned where the first mutation run let changes by.
#
# Written from the survivors of a mutation run of `relations.service_handover`, now
# `relations.peers.handover` (docs/reference/testing.md).


def test_a_leader_blocked_by_sqlite_on_another_unit_keeps_that_units_claim():
    """Arrange: SQLite; `garm/0` holds the claim and is still in the relation, stopped.

    Act: `garm/1`, the new leader, decides.
    Assert: Blocked, and the claim it publishes is still `garm/0`'s, unchanged: the data stays
    on `garm/0`, so a later decision still knows where it is.
    """
    claim = HostClaim("garm/0", NOW - datetime.timedelta(hours=1))

    decision = decide("garm/1", claim, {"garm/0": False}, sqlite=True, now=NOW)

    assert (decision.verdict, decision.claim) == (Verdict.BLOCKED, claim)


def test_waiting_for_several_units_names_each_once():
    """Arrange: `garm/2` and `garm/0` still run GARM; the new claim is a minute old.

    Act: `garm/1` decides. Assert: Wait, naming both units (sorted, comma-separated) and the
    five-minute bound, word for word.
    """
    claim = HostClaim("garm/1", NOW - datetime.timedelta(minutes=1))

    decision = decide("garm/1", claim, {"garm/2": True, "garm/0": True}, sqlite=False, now=NOW)

    assert (decision.verdict, decision.message) == (
        Verdict.WAIT,
        "taking over GARM: waiting for garm/0, garm/2 to stop it (at most 5 min)",
    )


def test_a_unit_that_stopped_for_a_claim_says_so_for_that_claim_only():
    """Arrange: the leader's claim, and an older one.

    Act: the peer data a unit writes after stopping GARM, with the claim and with none.
    Assert: with the claim, the data names its time and `has_stopped_for` reads it back for that
    claim only; without a claim, the unit writes nothing and has stopped for no claim.
    """
    claim = HostClaim("garm/1", NOW)
    older = HostClaim("garm/0", NOW - datetime.timedelta(hours=1))

    data = stopped_for(claim)

    assert data == {STOPPED_FOR_KEY: "2026-11-30T12:00:00+00:00"}
    assert (has_stopped_for(data, claim), has_stopped_for(data, older)) == (True, False)
    assert stopped_for(None) == {}
    assert has_stopped_for({}, claim) is False
