"""The reconcile tick through ops.testing: where the timer is kept, and what a tick does."""

from __future__ import annotations

import dataclasses
from typing import Any

import ops
import pytest
from ops import testing

import charm
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from unit.doubles.fake_systemctl import TickMachine
from unit.walks.charm import RECONCILE_TICK, bootstrap_secrets, bootstrapped

TIMER = "garm-reconcile-tick.timer"


@dataclasses.dataclass
class Unit:
    """A unit of a GARM this charm bootstrapped earlier, and its tick's machine."""

    ctx: testing.Context[charm.GarmCharm]
    garm: GarmSim
    workload: RecordingWorkload
    machine: TickMachine
    resources: frozenset[testing.Resource]
    config: dict[str, Any]

    def run(self, event: Any, *, leader: bool = True, **config: str) -> testing.State:
        """Run one event on this unit, with `config` (underscores for dashes) over the base."""
        options = self.config | {name.replace("_", "-"): value for name, value in config.items()}
        state = testing.State(
            leader=leader,
            resources=self.resources,
            config=options,
            secrets=bootstrap_secrets(),
        )
        return self.ctx.run(event, state)

    @property
    def timer_text(self) -> str:
        """The timer unit file as written, or "" when there is none."""
        timer = self.machine.tick.paths.timer_file
        return timer.read_text() if timer.exists() else ""


@pytest.fixture
def unit(
    ctx: testing.Context[charm.GarmCharm],
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    tick_machine: TickMachine,
) -> Unit:
    """A bootstrapped GARM's unit, whose tick nothing has installed yet."""
    bootstrapped(garm)
    return Unit(ctx, garm, workload, tick_machine, resources, config)


def test_the_leader_installs_the_tick_at_the_default_interval(unit: Unit):
    """Arrange: a bootstrapped leader, reconcile-interval not set. Act: config-changed.

    Assert: a timer every 60 s dispatching reconcile-tick to this unit; enabled and started.
    """
    out = unit.run(unit.ctx.on.config_changed())

    assert out.unit_status == ops.ActiveStatus()
    service = unit.machine.tick.paths.service_file.read_text()
    assert "/usr/bin/juju-exec garm/0 " in service
    assert "JUJU_DISPATCH_PATH=hooks/reconcile-tick " in service
    assert "OnUnitInactiveSec=60s" in unit.timer_text
    assert ["enable", TIMER] in unit.machine.systemctl.calls()
    assert unit.machine.systemctl.active


def test_interval_zero_removes_the_tick(unit: Unit):
    """Arrange: a leader with the tick installed. Act: reconcile-interval=0, config-changed.

    Assert: the timer is disabled and its files are gone; the unit still reconciles (Active).
    """
    unit.run(unit.ctx.on.config_changed())

    out = unit.run(unit.ctx.on.config_changed(), reconcile_interval="0")

    assert out.unit_status == ops.ActiveStatus()
    assert unit.timer_text == ""
    assert ["disable", "--now", TIMER] in unit.machine.systemctl.calls()


def test_a_non_leader_removes_the_tick(unit: Unit):
    """Arrange: a former leader whose tick is installed. Act: update-status as a non-leader.

    Assert: the timer is removed: only the leader reconciles.
    """
    unit.run(unit.ctx.on.config_changed())

    unit.run(unit.ctx.on.update_status(), leader=False)

    assert unit.timer_text == ""
    assert not unit.machine.systemctl.active


def test_remove_removes_the_tick(unit: Unit):
    """Arrange: a leader with the tick installed. Act: remove. Assert: timer and files gone."""
    unit.run(unit.ctx.on.config_changed())

    unit.run(unit.ctx.on.remove())

    assert not unit.machine.tick.paths.service_file.exists()
    assert unit.timer_text == ""
    assert "remove" in unit.workload.calls


def test_an_invalid_config_leaves_the_tick_as_it_is(unit: Unit):
    """Arrange: a leader with the tick installed. Act: a bad reconcile-interval.

    Assert: Blocked naming the option; the timer stays as it was (nothing changes meanwhile).
    """
    unit.run(unit.ctx.on.config_changed())
    before = unit.timer_text

    out = unit.run(unit.ctx.on.config_changed(), reconcile_interval="soon")

    assert out.unit_status.name == "blocked"
    assert out.unit_status.message.startswith("invalid config reconcile-interval:")
    assert unit.timer_text == before


def test_a_converged_tick_lists_scale_sets_once_and_writes_nothing(unit: Unit):
    """Arrange: a bootstrapped leader with nothing to change.

    Act: the timer dispatches reconcile-tick.
    Assert: the same reconcile as a hook: Active; GARM saw one scale-set list and no write
    but the login.
    """
    unit.run(unit.ctx.on.update_status())
    unit.garm.reset_log()

    out = unit.run(RECONCILE_TICK)

    assert out.unit_status == ops.ActiveStatus()
    assert unit.garm.calls().count("GET /api/v1/scalesets") == 1
    assert unit.garm.write_calls() == ["POST /api/v1/auth/login"]


def test_a_failing_systemctl_does_not_stop_the_reconcile(unit: Unit):
    """Arrange: systemctl refuses to enable units. Act: config-changed on the leader.

    Assert: GARM is still reconciled (Active); the next hook will try the timer again.
    """
    unit.machine.systemctl.fail("enable")

    out = unit.run(unit.ctx.on.config_changed())

    assert out.unit_status == ops.ActiveStatus()
    assert not unit.machine.systemctl.active
