"""Fencing: never two GARMs on one database (ADR 0019).

The unit running GARM holds a lease in the peer relation that every leader hook renews; the
lease end Juju committed goes to a local file that a systemd watchdog checks without Juju. A
new leader starts GARM only when the holder says it stopped, or after the holder's lease ended
plus a margin. The charm runs through `ops.testing` with a clock the test sets; the watchdog's
script runs under `sh` with a fake `systemctl`.
"""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

import ops
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ops import testing
from scenario.errors import UncaughtCharmError
from scenario.mocking import _MockModelBackend  # pyright: ignore[reportPrivateUsage]

import charm
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from relations.peers import lease as fencing
from relations.peers.handover import HostClaim, stopped_for
from relations.peers.keys import RUNNING_KEY, STOPPED_FOR_KEY
from relations.peers.lease import LEASE_LENGTH, TAKEOVER_MARGIN, TAKING_LEASE, Lease
from unit.doubles.fake_systemctl import FAILURE_OUTPUT, install_fake_systemctl
from unit.walks.charm import RECONCILE_TICK, Config, Ctx, Resources, on_postgresql
from workload.host import CommandError, Paths, WorkloadError
from workload.lease import GarmLease

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
LONG_AGO = datetime.timedelta(hours=1)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[datetime.datetime]:
    """The charm's clock: the test moves it by replacing the one element."""
    now = [NOW]
    monkeypatch.setattr(charm, "utc_now", lambda: now[0])
    return now


CLAIM = HostClaim("garm/0", NOW - LONG_AGO)


def peer_relation(
    lease: Lease | None,
    running: dict[int, bool],
    *,
    claim: str = "garm/0",
    stopped_for_claim: frozenset[int] = frozenset(),
) -> testing.PeerRelation:
    """garm-peers: a claim for `claim` made long ago, the lease, the other units' flags.

    Units in `stopped_for_claim` echo the claim: they stopped GARM as non-leaders, seeing it.
    """
    app_data = {
        **HostClaim(claim, CLAIM.since).as_app_data(),
        **(lease.as_app_data() if lease else {}),
    }
    return testing.PeerRelation(
        "garm-peers",
        local_app_data=app_data,
        peers_data={
            unit: {
                RUNNING_KEY: str(flag).lower(),
                **(stopped_for(CLAIM) if unit in stopped_for_claim else {}),
            }
            for unit, flag in running.items()
        },
    )


def published_lease(out: testing.State) -> Lease | None:
    """The lease in the output's peer application data."""
    (relation,) = [r for r in out.relations if isinstance(r, testing.PeerRelation)]
    return Lease.from_app_data(relation.local_app_data)


def leader(resources: Resources, config: Config, relation: testing.PeerRelation) -> testing.State:
    """The leader on PostgreSQL (bootstrapped secrets) with the peer relation."""
    return on_postgresql(resources, config, relation)[0]


# Renewal --------------------------------------------------------------------------------------


def test_the_holder_renews_and_hands_the_watchdog_only_the_committed_end(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    clock: list[datetime.datetime],
):
    """Arrange: garm/0 leads and holds a committed lease ending in 4 minutes.

    Act: update-status. Assert: GARM runs (Active); the published lease is renewed to
    now + LEASE_LENGTH; the local lease file holds the committed end, not the new one.
    """
    garm.bootstrap("admin", "existing-admin-Password-9fK2mQ")
    committed = Lease("garm/0", NOW + datetime.timedelta(minutes=4))
    relation = peer_relation(committed, {1: False})

    out = ctx.run(ctx.on.update_status(), leader(resources, config, relation))

    assert "apply" in workload.calls
    assert published_lease(out) == Lease("garm/0", NOW + LEASE_LENGTH)
    assert workload.lease.end() == committed.until


def test_a_fresh_lease_is_kept_as_it_is_so_standbys_get_no_hook_from_it(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    clock: list[datetime.datetime],
):
    """Arrange: garm/0 leads and holds a committed lease with 9 minutes left.

    Act: update-status; then the same at 3 minutes and 1 second later.

    Assert: GARM runs on the committed end; the first hook leaves the peer application data as
    it was (every change of it runs a hook on each standby); the later one renews the lease.
    """
    garm.bootstrap("admin", "existing-admin-Password-9fK2mQ")
    committed = Lease("garm/0", NOW + datetime.timedelta(minutes=9))
    relation = peer_relation(committed, {1: False})

    first = ctx.run(ctx.on.update_status(), leader(resources, config, relation))
    clock[0] = NOW + datetime.timedelta(minutes=3, seconds=1)
    later = ctx.run(ctx.on.update_status(), leader(resources, config, relation))

    (peers,) = [r for r in first.relations if isinstance(r, testing.PeerRelation)]
    assert dict(peers.local_app_data) == dict(relation.local_app_data)
    assert "apply" in workload.calls
    assert workload.lease.end() == committed.until
    assert published_lease(later) == Lease("garm/0", clock[0] + LEASE_LENGTH)


def test_a_leader_with_an_invalid_config_still_renews_its_lease(
    ctx: Ctx,
    workload: RecordingWorkload,
    resources: Resources,
    config: Config,
    clock: list[datetime.datetime],
):
    """Arrange: garm/0 leads, holds a committed lease, runs GARM; its config becomes invalid.

    Act: config-changed. Assert: Blocked on the option; GARM not stopped; lease renewed.
    """
    workload.running = True
    committed = Lease("garm/0", NOW + datetime.timedelta(minutes=4))
    relation = peer_relation(committed, {1: False})
    state = leader(resources, {**config, "port": 0}, relation)

    out = ctx.run(ctx.on.config_changed(), state)

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert workload.running
    assert published_lease(out) == Lease("garm/0", NOW + LEASE_LENGTH)
    assert workload.lease.end() == committed.until


# The hand-over --------------------------------------------------------------------------------


def test_a_new_leader_waits_for_a_live_lease_even_past_the_claim_deadline(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    clock: list[datetime.datetime],
):
    """Arrange: garm/0 claimed GARM an hour ago; garm/1 holds a lease ending in 5 minutes.

    garm/1 still says it runs GARM (cut off: it cannot answer).
    Act: update-status. Assert: GARM not started, no GARM call; Waiting names garm/1 and when
    its lease ends plus the margin; the lease is left to garm/1.
    """
    held = Lease("garm/1", NOW + datetime.timedelta(minutes=5))
    relation = peer_relation(held, {1: True})

    out = ctx.run(ctx.on.update_status(), leader(resources, config, relation))

    free = held.until + TAKEOVER_MARGIN
    assert out.unit_status == ops.WaitingStatus(
        f"taking over GARM: garm/1 may run it until its lease ends ({free:%H:%M:%S} UTC)"
    )
    assert "apply" not in workload.calls
    assert garm.calls() == []
    assert published_lease(out) == held


def test_a_partitioned_holder_is_replaced_only_after_its_lease_and_the_margin(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    clock: list[datetime.datetime],
):
    """Arrange: garm/1 holds a lease and says it runs GARM; it never answers again.

    Act: update-status just before the lease end + margin, just after, and once more.
    Assert: waits, then takes the lease without starting GARM, then starts GARM with the
    committed lease in the local file.
    """
    garm.bootstrap("admin", "existing-admin-Password-9fK2mQ")
    held = Lease("garm/1", NOW)
    state = leader(resources, config, peer_relation(held, {1: True}))

    clock[0] = NOW + TAKEOVER_MARGIN - datetime.timedelta(seconds=1)
    waiting = ctx.run(ctx.on.update_status(), state)
    clock[0] = NOW + TAKEOVER_MARGIN
    taking = ctx.run(ctx.on.update_status(), waiting)
    started_after_taking = "apply" in workload.calls
    clock[0] += datetime.timedelta(minutes=1)
    running = ctx.run(ctx.on.update_status(), taking)

    assert isinstance(waiting.unit_status, ops.WaitingStatus)
    assert "garm/1 may run it" in waiting.unit_status.message
    assert taking.unit_status == ops.WaitingStatus(TAKING_LEASE)
    assert published_lease(taking) == Lease("garm/0", NOW + TAKEOVER_MARGIN + LEASE_LENGTH)
    assert not started_after_taking
    assert running.unit_status == ops.ActiveStatus()
    assert workload.lease.end() == NOW + TAKEOVER_MARGIN + LEASE_LENGTH


def test_a_holder_that_says_it_stopped_hands_over_at_once(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    clock: list[datetime.datetime],
):
    """Arrange: garm/1 holds a lease ending in 9 minutes; it stopped GARM seeing garm/0's claim.

    Act: relation-changed, then the next hook. Assert: garm/0 takes the lease (not running
    yet), then runs GARM.
    """
    garm.bootstrap("admin", "existing-admin-Password-9fK2mQ")
    relation = peer_relation(
        Lease("garm/1", NOW + datetime.timedelta(minutes=9)),
        {1: False},
        stopped_for_claim=frozenset({1}),
    )

    taking = ctx.run(
        ctx.on.relation_changed(relation, remote_unit=1), leader(resources, config, relation)
    )
    running = ctx.run(ctx.on.update_status(), taking)

    assert taking.unit_status == ops.WaitingStatus(TAKING_LEASE)
    assert published_lease(taking) == Lease("garm/0", NOW + LEASE_LENGTH)
    assert running.unit_status == ops.ActiveStatus()


def test_a_holder_flag_false_without_the_claim_echo_is_not_trusted(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    clock: list[datetime.datetime],
):
    """Arrange: garm/1 holds a lease ending in 9 minutes; its flag says false, but no echo.

    It never echoed garm/0's claim: it may have restarted GARM in a hook Juju never committed.

    Act: relation-changed. Assert: garm/0 waits for the lease to end; GARM not started.
    """
    relation = peer_relation(Lease("garm/1", NOW + datetime.timedelta(minutes=9)), {1: False})

    out = ctx.run(
        ctx.on.relation_changed(relation, remote_unit=1), leader(resources, config, relation)
    )

    assert isinstance(out.unit_status, ops.WaitingStatus)
    assert "garm/1 may run it until its lease ends" in out.unit_status.message
    assert "apply" not in workload.calls
    assert published_lease(out) == Lease("garm/1", NOW + datetime.timedelta(minutes=9))


@pytest.mark.parametrize("event", ["relation-changed", "reconcile-tick"])
def test_a_former_leader_stops_garm_and_drops_its_lease(
    ctx: Ctx, workload: RecordingWorkload, resources: Resources, config: Config, event: str
):
    """Arrange: garm/0 ran GARM under a lease; garm/1 leads now.

    Act: the claim's relation-changed, or garm/0's own timer tick.
    Assert: GARM stopped, the local lease gone, garm/0 says it stopped, echoing the claim.
    """
    workload.running = True
    workload.lease.until = NOW + LEASE_LENGTH
    relation = peer_relation(Lease("garm/0", NOW + LEASE_LENGTH), {1: False}, claim="garm/1")
    state, _ = on_postgresql(resources, config, relation, leader=False)
    hook = (
        ctx.on.relation_changed(relation, remote_unit=1)
        if event == "relation-changed"
        else RECONCILE_TICK
    )

    out = ctx.run(hook, state)

    assert not workload.running
    assert workload.lease.end() is None
    (written,) = [r for r in out.relations if isinstance(r, testing.PeerRelation)]
    assert written.local_unit_data[RUNNING_KEY] == "false"
    assert written.local_unit_data[STOPPED_FOR_KEY] == CLAIM.since.isoformat()


def test_a_former_leader_whose_stop_failed_does_not_say_it_stopped(
    ctx: Ctx, workload: RecordingWorkload, resources: Resources, config: Config
):
    """Arrange: garm/0 ran GARM under a lease; garm/1 leads now; systemd cannot stop GARM.

    Act: the claim's relation-changed on garm/0.
    Assert: the local lease is gone (the watchdog stops GARM when systemd can), and garm/0
    says it still runs GARM, with no echo of the claim: the new leader waits for the lease.
    """
    workload.running = True
    workload.stop_fails = True
    workload.lease.until = NOW + LEASE_LENGTH
    relation = peer_relation(Lease("garm/0", NOW + LEASE_LENGTH), {1: False}, claim="garm/1")
    state, _ = on_postgresql(resources, config, relation, leader=False)

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=1), state)

    assert workload.running
    assert workload.lease.end() is None
    (written,) = [r for r in out.relations if isinstance(r, testing.PeerRelation)]
    assert written.local_unit_data[RUNNING_KEY] == "true"
    assert STOPPED_FOR_KEY not in written.local_unit_data


def test_a_leader_cut_off_from_the_controller_stops_garm(
    ctx: Ctx,
    workload: RecordingWorkload,
    resources: Resources,
    config: Config,
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: garm/0 runs GARM under a lease; `is-leader` fails (the controller is gone).

    The hook tool fails, not a method of ops: ops itself asks again when it collects statuses.

    Act: the reconcile tick. Assert: GARM stopped and the local lease gone; the hook then fails
    (ops cannot collect the app status either), so Juju runs it again.
    """
    workload.running = True
    workload.lease.until = NOW + LEASE_LENGTH

    def unreachable(_: object) -> bool:
        raise ops.ModelError("ERROR cannot connect to the controller")

    monkeypatch.setattr(_MockModelBackend, "is_leader", unreachable)
    relation = peer_relation(Lease("garm/0", NOW + LEASE_LENGTH), {1: False})

    with pytest.raises(UncaughtCharmError, match="cannot connect to the controller"):
        ctx.run(RECONCILE_TICK, leader(resources, config, relation))

    assert not workload.running
    assert workload.lease.end() is None


def test_a_lease_that_cannot_be_written_keeps_garm_stopped(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    clock: list[datetime.datetime],
):
    """Arrange: garm/0 holds a committed lease; the lease file cannot be written.

    Act: update-status. Assert: Blocked naming the lease; GARM not started.
    """
    workload.lease.error = WorkloadError("cannot write GARM's lease (No space left on device)")
    relation = peer_relation(Lease("garm/0", NOW + datetime.timedelta(minutes=4)), {1: False})

    out = ctx.run(ctx.on.update_status(), leader(resources, config, relation))

    assert out.unit_status == ops.BlockedStatus(
        "cannot run GARM: cannot write GARM's lease (No space left on device)"
    )
    assert "apply" not in workload.calls


# The watchdog (no Juju) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lease_file", "stops"),
    [
        (f"{int((NOW + LEASE_LENGTH).timestamp()) + 10**9}\n", False),
        (f"{int(NOW.timestamp())}\n", True),
        (None, True),
        ("not a time\n", True),
    ],
    ids=["lease-ahead", "lease-ended", "no-lease", "garbled"],
)
def test_the_watchdog_stops_garm_when_the_lease_is_not_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lease_file: str | None, stops: bool
):
    """Arrange: the watchdog installed by holding a lease; then the lease file as given.

    Act: run the watchdog's script with `sh`. Assert: `systemctl stop garm.service` exactly
    when the lease's end is not in the future.
    """
    systemctl = install_fake_systemctl(tmp_path / "bin", monkeypatch)
    lease = GarmLease(Paths(tmp_path / "root"))
    lease.hold_until(NOW)
    if lease_file is None:
        lease.drop()
    else:
        lease.files.lease.write_text(lease_file)

    subprocess.run(["/bin/sh", str(lease.files.script)], check=True)

    assert (["stop", "garm.service"] in systemctl.calls()) is stops
    assert ["enable", "--now", "garm-lease-watch.timer"] in systemctl.calls()
    assert lease.files.script.stat().st_mode & 0o777 == 0o700


def test_the_lease_file_is_root_only_and_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: a machine root. Act: hold a lease twice, then drop it.

    Assert: 0600, the end read back to the second; the timer installed once; gone when dropped.
    """
    systemctl = install_fake_systemctl(tmp_path / "bin", monkeypatch)
    lease = GarmLease(Paths(tmp_path / "root"))

    lease.hold_until(NOW)
    lease.hold_until(NOW + LEASE_LENGTH)
    mode = lease.files.lease.stat().st_mode & 0o777
    end = lease.end()
    lease.drop()

    assert (mode, end) == (0o600, NOW + LEASE_LENGTH)
    assert lease.end() is None
    assert [call for call in systemctl.calls() if call[:1] == ["enable"]] == [
        ["enable", "--now", "garm-lease-watch.timer"]
    ]


@pytest.mark.parametrize("drift", ["mode", "symlink"])
def test_a_drifted_watchdog_script_is_put_right_and_the_timer_reloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drift: str
):
    """Arrange: the watchdog installed; then its script loosened to 0755, or made a symlink.

    (The symlink's target has the same text, which comparing the text alone would not see.)
    Act: hold the lease again. Assert: the script is a regular 0700 file with the watchdog's
    text again, systemd reloaded and the timer enabled again.
    """
    systemctl = install_fake_systemctl(tmp_path / "bin", monkeypatch)
    lease = GarmLease(Paths(tmp_path / "root"))
    lease.hold_until(NOW)
    script = lease.files.script
    text = script.read_text()
    elsewhere = tmp_path / "elsewhere"
    if drift == "mode":
        script.chmod(0o755)
    else:
        elsewhere.write_text(text)
        script.unlink()
        script.symlink_to(elsewhere)
    before = len(systemctl.calls())

    lease.hold_until(NOW + LEASE_LENGTH)

    assert not script.is_symlink()
    assert (script.stat().st_mode & 0o777, script.read_text()) == (0o700, text)
    assert systemctl.calls()[before:] == [
        ["daemon-reload"],
        ["enable", "--now", "garm-lease-watch.timer"],
    ]


def test_a_systemd_refusal_names_the_watchdogs_command_not_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: systemctl fails to enable. Act: hold a lease.

    Assert: CommandError (a WorkloadError: GARM is not started) naming the command and the
    journal, without systemctl's output; the lease itself is written.
    """
    systemctl = install_fake_systemctl(tmp_path / "bin", monkeypatch)
    systemctl.fail("enable")
    lease = GarmLease(Paths(tmp_path / "root"))

    with pytest.raises(CommandError) as raised:
        lease.hold_until(NOW)

    assert str(raised.value) == (
        "systemctl enable --now garm-lease-watch.timer failed (see journalctl -u garm-lease-watch)"
    )
    assert FAILURE_OUTPUT not in str(raised.value)
    assert lease.end() == NOW


# The decision and its bound -------------------------------------------------------------------

minutes = st.integers(min_value=-30, max_value=30).map(lambda m: datetime.timedelta(minutes=m))


@settings(max_examples=200, deadline=None)
@given(
    holder=st.sampled_from(["garm/0", "garm/1"]),
    ends_in=minutes,
    holder_stopped=st.booleans(),
)
def test_never_runs_while_another_units_lease_may_still_run_garm(
    holder: str, ends_in: datetime.timedelta, holder_stopped: bool
):
    """Arrange: any committed lease, the holder stopped or not. Act: decide for garm/0.

    Assert: garm/0 runs only on its own committed, unexpired lease, up to that lease's end;
    whatever it publishes names garm/0; another unit's lease is taken only when that unit
    stopped or its lease ended at least the margin ago.
    """
    committed = Lease(holder, NOW + ends_in)

    decision = fencing.decide("garm/0", committed, holder_stopped, now=NOW)

    if decision.run_until is not None:
        assert holder == "garm/0"
        assert decision.run_until == committed.until > NOW
    if decision.publish is not None:
        assert decision.publish == Lease("garm/0", NOW + LEASE_LENGTH)
        if holder != "garm/0":
            assert holder_stopped or committed.until + TAKEOVER_MARGIN <= NOW


@settings(max_examples=100, deadline=None)
@given(
    hooks=st.lists(st.integers(min_value=1, max_value=9 * 60), min_size=1, max_size=8).map(
        lambda gaps: [datetime.timedelta(seconds=s) for s in gaps]
    ),
    cut_after=st.integers(min_value=0, max_value=7),
    new_leader_every=st.integers(min_value=10, max_value=120),
)
def test_a_partitioned_holders_local_lease_ends_before_a_new_leader_starts(
    hooks: list[datetime.timedelta], cut_after: int, new_leader_every: int
):
    """Arrange: garm/1 leads and renews at hook times `hooks` apart, cut off after `cut_after`.

    Once cut off, its hooks still write the local file from what was committed, nothing more.
    Act: garm/0, elected at the cut, decides every `new_leader_every` seconds until it runs.
    Assert: garm/1's local lease (the watchdog's deadline) ends at least the margin before
    garm/0 first runs GARM, and within LEASE_LENGTH of garm/1's last committed hook.
    """
    now, committed, local_end = NOW, None, None
    last_commit = NOW
    for index, gap in enumerate(hooks[: cut_after + 1]):
        now += gap
        decision = fencing.decide("garm/1", committed, False, now=now)
        local_end = decision.run_until or local_end
        if index < cut_after:
            committed, last_commit = decision.publish or committed, now
    run_at = None
    for _ in range(2000):
        now += datetime.timedelta(seconds=new_leader_every)
        decision = fencing.decide("garm/0", committed, False, now=now)
        if decision.run_until is not None:
            run_at = now
            break
        committed = decision.publish or committed
    assert run_at is not None
    if local_end is not None:
        assert local_end + TAKEOVER_MARGIN <= run_at
        assert local_end <= last_commit + LEASE_LENGTH


def test_an_unreadable_lease_counts_as_none():
    """Arrange: peer data with a naive or garbled end. Act: parse. Assert: None."""
    assert Lease.from_app_data({"garm-lease-holder": "garm/1", "garm-lease-until": "soon"}) is None
    assert (
        Lease.from_app_data(
            {"garm-lease-holder": "garm/1", "garm-lease-until": "2026-12-01T10:00"}
        )
        is None
    )
    assert Lease.from_app_data({}) is None
