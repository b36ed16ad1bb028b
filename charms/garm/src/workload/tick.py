"""The reconcile tick: a systemd timer on the leader that dispatches a charm event.

Juju runs hooks only when something happens (and `update-status` every 5 minutes by default),
so each step of a scale-set changeover would wait for the next hook. The timer runs

    timeout <bound> juju-exec <unit> JUJU_DISPATCH_PATH=hooks/reconcile-tick ./dispatch

every `reconcile-interval`: `juju-exec` takes the unit's hook lock, so a tick never overlaps a
hook, and the charm handles `reconcile-tick` with the same holistic reconcile as every other
event (docs/adr/0006-reconcile-tick-timer.md). The service is a oneshot and the timer counts
from the end of the last run, so ticks never pile up; a random delay of up to a tenth of the
interval keeps many units from ticking in step.

No ops imports: the charm hands in the unit's name, its directory and the interval.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from pathlib import Path

from workload import sandbox, systemctl
from workload.host import read_intact, read_text, write_atomic

logger = logging.getLogger(__name__)

TICK_EVENT = "reconcile-tick"
SERVICE_NAME = "garm-reconcile-tick"
TIMER_NAME = f"{SERVICE_NAME}.timer"
# A tick waits for the hook lock and then runs one reconcile: generous, but never forever.
TICK_TIMEOUT = datetime.timedelta(minutes=5)
JUJU_EXEC = "/usr/bin/juju-exec"
# systemd unit files: root's, readable by all.
UNIT_MODE = 0o644


class TickError(Exception):
    """A unit file could not be written, or systemd refused (its output is in the journal)."""


@dataclasses.dataclass(frozen=True)
class TickPaths:
    """Where the timer's unit files live, under one root (the machine's `/` in production)."""

    root: Path = Path("/")

    @property
    def service_file(self) -> Path:
        """The oneshot service that dispatches the event."""
        return self.root / "etc" / "systemd" / "system" / f"{SERVICE_NAME}.service"

    @property
    def timer_file(self) -> Path:
        """The timer that starts it."""
        return self.root / "etc" / "systemd" / "system" / TIMER_NAME


@dataclasses.dataclass(frozen=True)
class TickSchedule:
    """What the timer runs and how often.

    Attributes:
        unit_name: the Juju unit the event is dispatched to (`garm/0`).
        charm_dir: the charm's directory, which holds `dispatch`.
        interval: the time between the end of one tick and the start of the next.
    """

    unit_name: str
    charm_dir: Path
    interval: datetime.timedelta

    @property
    def jitter(self) -> datetime.timedelta:
        """The largest random delay added to each tick: a tenth of the interval."""
        return self.interval / 10


def render_service(schedule: TickSchedule) -> str:
    """Return the oneshot service that dispatches `reconcile-tick` through juju-exec."""
    seconds = int(TICK_TIMEOUT.total_seconds())
    command = f"JUJU_DISPATCH_PATH=hooks/{TICK_EVENT} {schedule.charm_dir / 'dispatch'}"
    return f"""\
[Unit]
Description=Reconcile tick of the garm charm ({schedule.unit_name})
After=network.target

[Service]
Type=oneshot
ExecStart=/usr/bin/timeout {seconds}s {JUJU_EXEC} {schedule.unit_name} "{command}"
{sandbox.TICK}"""


def render_timer(schedule: TickSchedule) -> str:
    """Return the timer: every interval after the last tick ended, jittered, second-accurate."""
    interval = max(1, int(schedule.interval.total_seconds()))
    jitter = int(schedule.jitter.total_seconds())
    return f"""\
[Unit]
Description=Reconcile tick of the garm charm every {interval}s

[Timer]
OnActiveSec={interval}s
OnUnitInactiveSec={interval}s
RandomizedDelaySec={jitter}s
AccuracySec=1s
Unit={SERVICE_NAME}.service

[Install]
WantedBy=timers.target
"""


class ReconcileTick:
    """Installs, updates and removes the timer."""

    def __init__(self, paths: TickPaths | None = None) -> None:
        self.paths = paths or TickPaths()

    def install(self, schedule: TickSchedule) -> bool:
        """Write the units if they changed and make sure the timer runs.

        Returns:
            True when the units were (re)written.

        Raises:
            TickError: a unit file could not be written, or systemd refused (the command is
                named, its output is not).
        """
        files = {
            self.paths.service_file: render_service(schedule),
            self.paths.timer_file: render_timer(schedule),
        }
        changed = False
        for path, text in files.items():
            if read_intact(path, UNIT_MODE) == text.encode():
                continue
            # A drifted mode, owner or a symlink is put right too (never written through);
            # systemd reloads only when what it read, through any link, was not the unit.
            changed |= read_text(path) != text
            _write(path, text)
        # restart when changed, not start: a changed interval must take effect now.
        systemctl.keep_running(TIMER_NAME, changed=changed, error=TickError, journal=TIMER_NAME)
        if changed:
            logger.info("reconcile tick every %ss", int(schedule.interval.total_seconds()))
        return changed

    def remove(self) -> None:
        """Stop and remove the timer (non-leaders, `reconcile-interval=0`, removal).

        Best effort, like the workload's removal: a failure is logged, never raised, and the
        next hook tries again because the files are still there.
        """
        if not (self.paths.timer_file.exists() or self.paths.service_file.exists()):
            return
        try:
            _systemd("disable", "--now", TIMER_NAME)
        except TickError as error:
            logger.warning("%s", error)
            return
        self.paths.timer_file.unlink(missing_ok=True)
        self.paths.service_file.unlink(missing_ok=True)
        try:
            _systemd("daemon-reload")
        except TickError as error:
            logger.warning("%s", error)
        logger.info("reconcile tick removed")


def _write(path: Path, text: str) -> None:
    try:
        write_atomic(path, text.encode(), UNIT_MODE)
    except OSError as error:
        # The charm logs a TickError and goes on; anything else would fail the whole hook.
        # The cause (a HostWriteError) names the path and the space to free: a status too.
        raise TickError(str(error)) from error


def _systemd(verb: systemctl.Verb, *args: str) -> None:
    systemctl.call(verb, *args, error=TickError, journal=TIMER_NAME)
