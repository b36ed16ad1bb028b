"""Stuck runners (ADR 0023): removed after `runner-stuck-timeout`, never one with a job."""

from __future__ import annotations

import dataclasses
import datetime

from doubles.memory_garm import MemoryGarm
from garm_api.models import Instance
from scaleset_reconciler import Phase, blocked_message
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.stuck import plan_stuck
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)
TIMEOUT = datetime.timedelta(minutes=30)
BOOT = datetime.timedelta(minutes=20)
STUCK = dataclasses.replace(SETTINGS, runner_stuck_timeout=TIMEOUT)


def _runner(
    name: str, minutes_ago: float, status: str, runner_status: str, fault: bytes = b""
) -> Instance:
    changed = NOW - datetime.timedelta(minutes=minutes_ago)
    return Instance(
        id=name,
        name=name,
        status=status,
        runner_status=runner_status,
        scale_set_id=1,
        pool_id="",
        provider_name="lxd",
        provider_id=name,
        agent_id=0,
        provider_fault=fault,
        created_at=changed,
        updated_at=changed,
    )


def _plan(*runners: Instance):
    return plan_stuck(runners, now=NOW, timeout=TIMEOUT, bootstrap_timeout=BOOT)


def test_only_runners_past_the_timeout_in_removable_states_are_removed():
    """Arrange: runners in every kind of state, some past 30 min, some not.

    Act: plan.

    Assert: the errored, never-registered and never-deleted ones past the timeout are removed;
    the one `creating` for long is counted (GARM refuses its removal); recent, idle and busy
    ones are left alone.
    """
    step = _plan(
        _runner("error-old", 31, "error", "failed"),
        _runner("error-new", 10, "error", "failed"),
        _runner("pending-old", 60, "running", "pending"),
        _runner("deleting-old", 31, "pending_delete", "terminated"),
        _runner("creating-old", 60, "creating", ""),
        _runner("idle-old", 600, "running", "idle"),
        _runner("busy-old", 600, "error", "active"),
    )

    assert step.removals == ("deleting-old", "error-old", "pending-old")
    assert step.unremovable == 1


def test_booting_runners_are_left_to_garms_own_reaping_first():
    """Arrange: a runner `pending` at GitHub for 24 min (bootstrap timeout 20 min), timeout 10.

    Act: plan at 24 and at 26 minutes.

    Assert: not before bootstrap timeout + 5 min (GARM reaps it itself); removed after.
    """
    short = datetime.timedelta(minutes=10)

    early = plan_stuck(
        [_runner("a", 24, "running", "pending")], now=NOW, timeout=short, bootstrap_timeout=BOOT
    )
    late = plan_stuck(
        [_runner("a", 26, "running", "pending")], now=NOW, timeout=short, bootstrap_timeout=BOOT
    )

    assert (early.removals, late.removals) == ((), ("a",))


def test_failed_runners_are_left_to_garms_own_reaping_first():
    """Arrange: runners `failed` for 24 min, `running` and `error` (bootstrap 20), timeout 10.

    GARM after v0.2.1 reaps `failed` runners itself past the bootstrap timeout (B43).

    Act: plan at 24 and at 26 minutes.

    Assert: not before bootstrap timeout + 5 min; both removed after.
    """
    short = datetime.timedelta(minutes=10)

    def plan_at(minutes: float):
        runners = [
            _runner("a", minutes, "running", "failed"),
            _runner("b", minutes, "error", "failed"),
        ]
        return plan_stuck(runners, now=NOW, timeout=short, bootstrap_timeout=BOOT)

    early, late = plan_at(24), plan_at(26)

    assert (early.removals, late.removals) == ((), ("a", "b"))


def test_a_runner_garm_is_deleting_gets_no_boot_grace():
    """Arrange: a runner `pending_delete`/`pending` for 11 min (bootstrap 20), timeout 10.

    GARM's reaping skips runners already being deleted (B43).

    Act: plan.

    Assert: it is removed after the timeout alone.
    """
    short = datetime.timedelta(minutes=10)

    step = plan_stuck(
        [_runner("a", 11, "pending_delete", "pending")],
        now=NOW,
        timeout=short,
        bootstrap_timeout=BOOT,
    )

    assert step.removals == ("a",)


def test_runners_that_keep_failing_name_the_providers_last_fault():
    """Arrange: two errored runners with faults, none online. Act: plan.

    Assert: the newest fault's first line; with an idle runner beside them, no fault.
    """
    failing = [
        _runner("a", 5, "error", "", b"old fault"),
        _runner("b", 1, "error", "", b"quota exceeded: instances\ntrace..."),
    ]

    step = _plan(*failing)
    serving = _plan(*failing, _runner("c", 1, "running", "idle"))

    assert step.failing_fault == "quota exceeded: instances"
    assert serving.failing_fault == ""


def test_a_stuck_errored_runner_is_force_removed_and_counted_by_the_pass():
    """Arrange: a converged scale set (min idle 1) whose runner errored 31 minutes ago.

    Act: a pass with runner-stuck-timeout 30m.

    Assert: GARM is asked to force-remove it; the spec counts one removal; GARM then replaces it.
    """
    spec = make_spec(min_idle_runners=1)
    garm = MemoryGarm()
    converge(garm, [spec])
    garm.advance(61)
    (runner,) = garm.runners_of(live_name(spec))
    runner.status, runner.runner_status = "error", "failed"
    garm.advance(31 * 60)

    report = run(garm, [spec], settings=STUCK)

    assert ("delete_instance", (runner.name, True)) in garm.calls
    assert report.spec("small").stuck_removed == 1
    garm.advance(61)
    assert [r.status for r in garm.runners_of(live_name(spec))] == ["running"]


def test_a_busy_runner_is_never_removed_as_stuck():
    """Arrange: a converged scale set whose runner runs a job for 10 hours.

    Act: a pass with runner-stuck-timeout 30m.

    Assert: no delete is sent for it.
    """
    spec = make_spec(min_idle_runners=1)
    garm = MemoryGarm()
    converge(garm, [spec])
    garm.advance(61)
    busy = garm.start_job(garm.by_name(live_name(spec)).id)
    garm.advance(10 * 3600)

    run(garm, [spec], settings=STUCK)

    assert not [c for c in garm.calls if c[0] == "delete_instance" and c[1][0] == busy]


def test_a_set_whose_runners_keep_failing_is_blocked_naming_the_fault():
    """Arrange: a scale set (min idle 2) whose two runners errored just now. Act: a pass.

    Assert: Blocked naming the scale set, `runners keep failing` and the fault's gist, at most
    120 characters.
    """
    spec = make_spec(min_idle_runners=2)
    garm = MemoryGarm()
    converge(garm, [spec])
    garm.advance(61)
    for runner in garm.runners_of(live_name(spec)):
        runner.status, runner.runner_status = "error", "failed"

    report = run(garm, [spec], settings=STUCK)

    text = blocked_message(report)
    assert report.spec("small").phase is Phase.BLOCKED
    assert text.startswith("'small': runners keep failing: no fault recorded")
    assert len(text) <= 120
