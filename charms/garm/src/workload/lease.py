"""GARM's lease on this machine, and the watchdog that stops GARM without Juju (ADR 0019).

The leader renews its lease in the peer relation at every hook; the charm then writes the
lease's end, as Juju committed it, to a root-only file here. A systemd timer runs a small
shell script every `WATCH_PERIOD` that stops `garm.service` once that end has passed (or the
file is missing or unreadable). It needs neither Juju nor Python: a unit cut off from the
controller, which can renew nothing, stops GARM within the lease by itself.

No ops imports: the charm hands in the lease's end.
"""

from __future__ import annotations

import datetime
import logging
from pathlib import Path

from text_numbers import parse_whole_number
from workload import sandbox, systemctl
from workload.host import (
    SERVICE_NAME,
    CommandError,
    Paths,
    read_intact,
    read_regular,
    write_atomic,
)

logger = logging.getLogger(__name__)
# The last second a datetime holds (9999-12-31T23:59:59Z).
_LAST_SECOND = 253402300799

WATCH_NAME = "garm-lease-watch"
WATCH_TIMER = f"{WATCH_NAME}.timer"
# How often the watchdog looks; part of the margin a new leader adds to the lease.
WATCH_PERIOD = datetime.timedelta(seconds=15)
# systemd unit files: root's, readable by all.
UNIT_MODE = 0o644


class LeaseFiles:
    """Where the lease and the watchdog live, under the machine's root."""

    def __init__(self, paths: Paths) -> None:
        self.lease = paths.charm_state / "garm-lease"
        self.script = paths.charm_state / "garm-lease-watch"
        units = paths.root / "etc" / "systemd" / "system"
        self.service = units / f"{WATCH_NAME}.service"
        self.timer = units / WATCH_TIMER


def render_script(files: LeaseFiles) -> str:
    """The watchdog: stop GARM unless the lease file holds an end (epoch seconds) to come."""
    return f"""\
#!/bin/sh
# Written by the garm charm: GARM runs only while this unit holds its lease (ADR 0019).
until=$(cat '{files.lease}' 2>/dev/null)
case "$until" in ''|*[!0-9]*) until=0 ;; esac
if [ "$until" -le "$(date +%s)" ]; then
  exec systemctl stop {SERVICE_NAME}.service
fi
"""


def render_service(files: LeaseFiles) -> str:
    """The oneshot service that runs the watchdog script."""
    return f"""\
[Unit]
Description=Stop GARM when this unit's lease has ended (garm charm)

[Service]
Type=oneshot
ExecStart=/bin/sh {files.script}
{sandbox.WATCHDOG}"""


def render_timer() -> str:
    """The timer: every WATCH_PERIOD, to the second, from boot on."""
    period = int(WATCH_PERIOD.total_seconds())
    return f"""\
[Unit]
Description=Check GARM's lease every {period}s (garm charm)

[Timer]
OnActiveSec={period}s
OnUnitActiveSec={period}s
AccuracySec=1s
Unit={WATCH_NAME}.service

[Install]
WantedBy=timers.target
"""


class GarmLease:
    """The lease file and its watchdog timer."""

    def __init__(self, paths: Paths) -> None:
        self.files = LeaseFiles(paths)

    def hold_until(self, end: datetime.datetime) -> None:
        """Let GARM run here until `end`; make sure the watchdog enforces it.

        Raises:
            WorkloadError: the lease or the watchdog could not be written (GARM must then not
                be started).
            CommandError: systemd refused to run the watchdog.
        """
        _write(self.files.lease, f"{int(end.timestamp())}\n", 0o600)
        self._watch()

    def end(self) -> datetime.datetime | None:
        """The lease's end as the file holds it; None when there is none."""
        found = read_regular(self.files.lease)
        text = found[0].decode(errors="replace").strip() if found is not None else ""
        try:  # "²".isdigit() is true too, and a time past 9999 is no datetime
            seconds = parse_whole_number(text, maximum=_LAST_SECOND)
        except ValueError:
            return None
        return datetime.datetime.fromtimestamp(seconds, datetime.UTC)

    def drop(self) -> None:
        """No lease here any more: the watchdog stops GARM if anything started it."""
        self.files.lease.unlink(missing_ok=True)

    def remove(self) -> None:
        """Drop the lease and remove the watchdog (the unit is going); best effort."""
        self.drop()
        if self.files.timer.exists():
            try:
                _systemd("disable", "--now", WATCH_TIMER)
            except CommandError as error:
                logger.warning("%s", error)
        for path in (self.files.timer, self.files.service, self.files.script):
            path.unlink(missing_ok=True)

    def _watch(self) -> None:
        wanted = {
            self.files.script: (render_script(self.files), 0o700),
            self.files.service: (render_service(self.files), UNIT_MODE),
            self.files.timer: (render_timer(), UNIT_MODE),
        }
        changed = False
        for path, (text, mode) in wanted.items():
            # Drift (mode, owner, a symlink) is put right too, ADR 0021: the script runs as root.
            if read_intact(path, mode) != text.encode():
                _write(path, text, mode)
                changed = True
        if changed:
            _systemd("daemon-reload")
            _systemd("enable", "--now", WATCH_TIMER)
            logger.info("GARM's lease watchdog installed (every %ss)", WATCH_PERIOD.seconds)
        elif not systemctl.running(WATCH_TIMER):
            _systemd("start", WATCH_TIMER)


def _write(path: Path, text: str, mode: int) -> None:
    # A HostWriteError (a WorkloadError) names the path and, on a full disk, what to free.
    write_atomic(path, text.encode(), mode)


def _systemd(verb: systemctl.Verb, *args: str) -> None:
    systemctl.call(verb, *args, error=CommandError, journal=WATCH_NAME)
