"""reconcile_tick: the timer's unit files and what systemctl is asked, under a temporary root."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from unit.doubles.fake_systemctl import FAILURE_OUTPUT, FakeSystemctl, install_fake_systemctl
from workload.tick import ReconcileTick, TickError, TickPaths, TickSchedule

CHARM_DIR = Path("/var/lib/juju/agents/unit-garm-0/charm")
EVERY_MINUTE = TickSchedule("garm/0", CHARM_DIR, datetime.timedelta(minutes=1))
TIMER = "garm-reconcile-tick.timer"


@pytest.fixture
def systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSystemctl:
    """A fake systemctl first on PATH."""
    return install_fake_systemctl(tmp_path / "bin", monkeypatch)


@pytest.fixture
def tick(tmp_path: Path) -> ReconcileTick:
    """The tick with its unit files under a temporary root."""
    return ReconcileTick(TickPaths(tmp_path / "root"))


def test_install_dispatches_the_event_through_juju_exec_bounded(
    tick: ReconcileTick, systemctl: FakeSystemctl
):
    """Arrange: nothing installed. Act: install every minute.

    Assert: a oneshot service runs juju-exec for the unit with the tick's dispatch path under a
    timeout; the timer fires a minute after the last run ended, jittered by up to 6 s, to the
    second; systemd reloaded, the timer enabled and (re)started.
    """
    changed = tick.install(EVERY_MINUTE)

    service = tick.paths.service_file.read_text()
    timer = tick.paths.timer_file.read_text()
    assert changed
    assert "Type=oneshot" in service
    assert (
        "ExecStart=/usr/bin/timeout 300s /usr/bin/juju-exec garm/0 "
        f'"JUJU_DISPATCH_PATH=hooks/reconcile-tick {CHARM_DIR}/dispatch"'
    ) in service
    assert "OnUnitInactiveSec=60s" in timer
    assert "RandomizedDelaySec=6s" in timer
    assert "AccuracySec=1s" in timer
    assert oct(tick.paths.timer_file.stat().st_mode & 0o777) == "0o644"
    assert systemctl.calls() == [["daemon-reload"], ["enable", TIMER], ["restart", TIMER]]


def test_install_again_unchanged_asks_systemd_nothing_but_whether_it_runs(
    tick: ReconcileTick, systemctl: FakeSystemctl
):
    """Arrange: the timer installed and running. Act: install the same schedule.

    Assert: nothing rewritten; the only systemctl call is the is-active check.
    """
    tick.install(EVERY_MINUTE)
    before = len(systemctl.calls())

    changed = tick.install(EVERY_MINUTE)

    assert not changed
    assert systemctl.calls()[before:] == [["--quiet", "is-active", TIMER]]


def test_a_stopped_timer_is_started_again(tick: ReconcileTick, systemctl: FakeSystemctl):
    """Arrange: the timer installed, then stopped behind the charm's back. Act: install.

    Assert: started again without rewriting anything.
    """
    tick.install(EVERY_MINUTE)
    systemctl.active = False

    tick.install(EVERY_MINUTE)

    assert systemctl.calls()[-1] == ["start", TIMER]
    assert systemctl.active


def test_a_new_interval_rewrites_the_timer_and_restarts_it(
    tick: ReconcileTick, systemctl: FakeSystemctl
):
    """Arrange: a timer every minute. Act: install every 30 s. Assert: rewritten, restarted."""
    tick.install(EVERY_MINUTE)

    changed = tick.install(TickSchedule("garm/0", CHARM_DIR, datetime.timedelta(seconds=30)))

    assert changed
    assert "OnUnitInactiveSec=30s" in tick.paths.timer_file.read_text()
    assert systemctl.calls()[-1] == ["restart", TIMER]


def test_remove_disables_the_timer_and_deletes_its_units(
    tick: ReconcileTick, systemctl: FakeSystemctl
):
    """Arrange: an installed timer. Act: remove. Assert: disabled --now, files gone, reload."""
    tick.install(EVERY_MINUTE)

    tick.remove()

    assert not tick.paths.timer_file.exists()
    assert not tick.paths.service_file.exists()
    assert systemctl.calls()[-2:] == [["disable", "--now", TIMER], ["daemon-reload"]]
    assert not systemctl.active


def test_remove_without_a_timer_asks_systemd_nothing(
    tick: ReconcileTick, systemctl: FakeSystemctl
):
    """Arrange: no timer (a non-leader every hook). Act: remove. Assert: no systemctl call."""
    tick.remove()

    assert systemctl.calls() == []


def test_a_refused_install_names_the_command_not_its_output(
    tick: ReconcileTick, systemctl: FakeSystemctl
):
    """Arrange: systemctl enable fails. Act: install. Assert: TickError naming the command."""
    systemctl.fail("enable")

    with pytest.raises(TickError) as raised:
        tick.install(EVERY_MINUTE)

    assert str(raised.value).startswith(f"systemctl enable {TIMER} failed")
    assert FAILURE_OUTPUT not in str(raised.value)


def test_a_unit_file_that_cannot_be_written_is_a_tick_error(
    tick: ReconcileTick, systemctl: FakeSystemctl
):
    """Arrange: a file where systemd's unit directory should be. Act: install.

    Assert: TickError naming the file (what the charm logs and goes on from); no systemctl call.
    """
    units = tick.paths.service_file.parent
    units.parent.mkdir(parents=True)
    units.write_text("not a directory")

    with pytest.raises(TickError, match=r"cannot write .*garm-reconcile-tick\.service"):
        tick.install(EVERY_MINUTE)

    assert systemctl.calls() == []


def test_a_refused_remove_keeps_the_files_for_the_next_hook(
    tick: ReconcileTick, systemctl: FakeSystemctl
):
    """Arrange: an installed timer; systemctl disable fails. Act: remove.

    Assert: no exception (removal is best effort); the files stay so the next hook retries.
    """
    tick.install(EVERY_MINUTE)
    systemctl.fail("disable")

    tick.remove()

    assert tick.paths.timer_file.exists()
