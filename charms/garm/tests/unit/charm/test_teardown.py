"""Teardown: the action and the application's removal retire, empty and delete the charm's sets.

GARM is the simulator over real HTTP; its worker runs (and its clock and the charm's move) each
time the charm sleeps between passes, so a teardown's wait is a few simulated seconds.
"""

from __future__ import annotations

import dataclasses
import datetime
import json

import pytest
from ops import testing

import charm
from contract.garm_http import call
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from relations.peers.keys import TEARDOWN_SINCE_KEY
from relations.peers.lease import Lease
from relations.peers.pause import Maintenance
from scaleset_reconciler.marker import Marker
from unit.walks.charm import Ctx, Resources, bootstrap_secrets, bootstrapped

START = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
TIMEOUT = "teardown-timeout"


@dataclasses.dataclass
class Clock:
    """The charm's clock; each sleep moves it and runs GARM's worker for the same time."""

    garm: GarmSim
    now: datetime.datetime = START

    def utc_now(self) -> datetime.datetime:
        """The charm's now."""
        return self.now

    def sleep(self, seconds: float) -> None:
        """Let `seconds` pass for the charm and GARM alike."""
        self.now += datetime.timedelta(seconds=seconds)
        self.garm.advance(seconds)


@pytest.fixture
def clock(garm: GarmSim, monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The charm's time and sleep, tied to the simulator's worker."""
    fake = Clock(garm)
    monkeypatch.setattr(charm, "utc_now", fake.utc_now)
    monkeypatch.setattr(charm.time, "sleep", fake.sleep)
    return fake


def _scaleset(garm: GarmSim, name: str, *, marker: Marker | None, min_idle: int = 1) -> int:
    """An enabled scale set with `min_idle` runners up and idle; the charm's when `marker`."""
    token = garm.token()
    repo = garm.seed_entity("repository", "fake-repo", "fake-org")
    body = {
        "name": name,
        "provider_name": "openstack",
        "image": "ubuntu:22.04",
        "flavor": "small",
        "os_type": "linux",
        "labels": ["x64"],
        "min_idle_runners": min_idle,
        "max_runners": 3,
        "enabled": True,
    }
    created = call(garm.url, "POST", f"/repositories/{repo}/scalesets", body, token=token)
    assert created.status == 200, created.raw
    scaleset_id = created.json["id"]
    if marker is not None:
        update = {"extended_state": marker.render()}
        call(garm.url, "PUT", f"/scalesets/{scaleset_id}", update, token=token)
    for _ in range(3):
        garm.advance(1)
    return scaleset_id


def _leader(resources: Resources, config: dict[str, str | int], **options: str) -> testing.State:
    """The leader that runs GARM: it holds GARM's lease (ADR 0019) in the peer data."""
    lease = Lease("garm/0", START + datetime.timedelta(days=1))
    return testing.State(
        leader=True,
        resources=resources,
        config={**config, **options},
        secrets=bootstrap_secrets(),
        relations={testing.PeerRelation("garm-peers", local_app_data=lease.as_app_data())},
    )


def _deleted_runners(garm: GarmSim) -> list[str]:
    return [
        request.path.rsplit("/", 1)[-1].split("?")[0]
        for request in garm.requests
        if request.method == "DELETE" and "/instances/" in request.path
    ]


def test_teardown_deletes_the_charms_scale_sets_and_leaves_hand_made_ones(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
    clock: Clock,
):
    """Arrange: GARM holds two of the charm's scale sets with idle runners and a hand-made one.

    Act: the teardown action.

    Assert: the charm's sets and their runners are gone; the hand-made set is as it was (enabled,
    its runner kept); the result names what went and that nothing remains; the status says so.
    """
    bootstrapped(garm)
    _scaleset(garm, "small-0123a", marker=Marker(logical="small", application="cfg-small"))
    _scaleset(garm, "large-0456b", marker=Marker(logical="large", application="cfg-large"))
    hand_made = _scaleset(garm, "by-hand", marker=None)
    hand_made_runners = {i.name for i in garm.instances(hand_made)}

    out = ctx.run(ctx.on.action("teardown"), _leader(resources, config))

    assert [s.name for s in garm.state.scalesets.values()] == ["by-hand"]
    assert garm.scaleset(hand_made).enabled
    assert {i.name for i in garm.instances()} == hand_made_runners
    results = ctx.action_results or {}
    assert results["deleted"] == "large-0456b,small-0123a"
    assert results["remaining"] == "[]"
    assert results["hand-made"] == "by-hand"
    assert out.unit_status.name == "active"
    assert out.unit_status.message.startswith("torn down")


def test_teardown_waits_for_a_busy_runner_then_names_it_without_stopping_its_job(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
    clock: Clock,
):
    """Arrange: the charm's scale set has a busy runner and an idle one; teardown-timeout 1m.

    Act: the teardown action; then the job ends and the action runs again.

    Assert: the first run fails after waiting, listing the busy runner with its scale set and
    VM and how to remove it; it was never asked to be removed; the scale set stays, disabled.
    The second run (teardown-timeout 10m) deletes the scale set once GARM removed the runner.
    """
    bootstrapped(garm)
    scaleset_id = _scaleset(
        garm, "small-0123a", marker=Marker(logical="small", application="cfg"), min_idle=2
    )
    busy = garm.start_job(scaleset_id)
    vm = next(i.provider_id for i in garm.instances(scaleset_id) if i.name == busy)
    began = clock.now

    with pytest.raises(testing.ActionFailed, match="1 runners remain in 1 scale sets"):
        ctx.run(ctx.on.action("teardown"), _leader(resources, config, **{TIMEOUT: "1m"}))

    assert clock.now - began >= datetime.timedelta(minutes=1)
    remaining = json.loads((ctx.action_results or {})["remaining"])
    assert [(r["runner"], r["scaleset"], r["vm"]) for r in remaining] == [
        (busy, "small-0123a", vm)
    ]
    assert f"openstack server delete {vm}" in remaining[0]["remove"]
    assert busy not in _deleted_runners(garm)
    assert not garm.scaleset(scaleset_id).enabled

    garm.finish_job(busy)
    # A disabled scale set has no listener: GARM sees the job's end at its 5-minute consolidation.
    ctx.run(ctx.on.action("teardown"), _leader(resources, config, **{TIMEOUT: "10m"}))

    assert garm.state.scalesets == {}
    assert (ctx.action_results or {})["deleted"] == "small-0123a"


def test_removing_the_application_tears_down_in_the_stop_hook(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
    clock: Clock,
):
    """Arrange: the charm's scale set with an idle runner; Juju plans no unit (removal).

    Act: the leader's stop hook. Assert: the scale set and its runner are gone from GARM.
    """
    bootstrapped(garm)
    _scaleset(garm, "small-0123a", marker=Marker(logical="small", application="cfg"))
    state = dataclasses.replace(_leader(resources, config), planned_units=0)

    out = ctx.run(ctx.on.stop(), state)

    assert garm.state.scalesets == {}
    assert garm.instances() == []
    shown = [status.message for status in [*ctx.unit_status_history, out.unit_status]]
    assert "removing: tearing down the charm's scale sets until 12:30 UTC at most" in shown


@pytest.mark.parametrize(
    ("leader", "planned"), [(True, 1), (False, 0)], ids=["unit-removed", "not-leader"]
)
def test_a_stop_hook_that_is_no_removal_of_the_application_touches_nothing(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
    clock: Clock,
    leader: bool,
    planned: int,
):
    """Arrange: the charm's scale set; one unit goes while others stay, or a non-leader stops.

    Act: the stop hook. Assert: GARM saw no write.
    """
    bootstrapped(garm)
    _scaleset(garm, "small-0123a", marker=Marker(logical="small", application="cfg"))
    garm.reset_log()
    state = dataclasses.replace(_leader(resources, config), leader=leader, planned_units=planned)

    ctx.run(ctx.on.stop(), state)

    assert garm.write_calls() == []


def test_resume_ends_a_teardown(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
    clock: Clock,
):
    """Arrange: a teardown ran (its time is in the peer data). Act: resume.

    Assert: the peer data no longer holds the teardown, so hooks create scale sets again.
    """
    bootstrapped(garm)
    out = ctx.run(ctx.on.action("teardown"), _leader(resources, config))
    peers = next(iter(out.relations))
    assert TEARDOWN_SINCE_KEY in peers.local_app_data

    out = ctx.run(ctx.on.action("resume"), out)

    assert TEARDOWN_SINCE_KEY not in next(iter(out.relations)).local_app_data


def test_removal_logs_each_runner_it_leaves_with_its_vm_and_how_to_remove_it(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: the charm's scale set with a busy runner; teardown-timeout 0; the app goes.

    Act: the stop hook. Assert: the busy runner is kept, and an ERROR names it, its VM and
    the command that deletes the VM.
    """
    bootstrapped(garm)
    scaleset_id = _scaleset(garm, "small-0123a", marker=Marker(logical="small", application="c"))
    busy = garm.start_job(scaleset_id)
    vm = next(i.provider_id for i in garm.instances(scaleset_id) if i.name == busy)
    state = dataclasses.replace(_leader(resources, config, **{TIMEOUT: "0"}), planned_units=0)

    ctx.run(ctx.on.stop(), state)

    assert busy in {i.name for i in garm.instances()}
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert any(busy in e and f"openstack server delete {vm}" in e for e in errors), errors


def test_removal_never_fails_the_stop_hook_when_garm_is_gone(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: GARM does not answer; the application goes. Act: the stop hook.

    Assert: the hook ends without an error; the log says the teardown was not done.
    """
    bootstrapped(garm)
    garm.stop()
    state = dataclasses.replace(_leader(resources, config), planned_units=0)

    ctx.run(ctx.on.stop(), state)

    assert any("teardown on removal not done" in r.getMessage() for r in caplog.records)


def test_teardown_is_refused_while_paused(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
    clock: Clock,
):
    """Arrange: the operator paused; the charm's scale set. Act: teardown.

    Assert: refused naming resume; GARM saw no write.
    """
    bootstrapped(garm)
    _scaleset(garm, "small-0123a", marker=Marker(logical="small", application="cfg"))
    garm.reset_log()
    state = _leader(resources, config)
    peers = next(iter(state.relations))
    paused = dataclasses.replace(
        peers, local_app_data={**peers.local_app_data, **Maintenance(START).as_app_data()}
    )

    with pytest.raises(testing.ActionFailed, match="run resume first, then teardown"):
        ctx.run(ctx.on.action("teardown"), dataclasses.replace(state, relations={paused}))

    assert garm.write_calls() == []
