"""systemd through charmlibs-systemd: one call, whose refusal becomes the caller's short error.

charmlibs-systemd runs `systemctl` from PATH (tests put a fake one first). Its `SystemdError`
carries systemctl's whole stdout and stderr: too long for a status and not ours to vouch for,
so only the command is named, and the journal has the details. GARM's service, the reconcile
tick, the metrics exporter and the lease watchdog are all driven this way: this is the one module
of `workload/` that imports charmlibs (.importlinter lets only it through).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from charmlibs import systemd

# The systemctl verbs the charm runs.
Verb = Literal["daemon-reload", "enable", "disable", "restart", "start"]
# Each verb's charmlibs-systemd function: the verb is named once, by the caller.
_ACTIONS: dict[str, Callable[..., bool]] = {
    "daemon-reload": systemd.daemon_reload,
    "enable": systemd.service_enable,
    "disable": systemd.service_disable,
    "restart": systemd.service_restart,
    "start": systemd.service_start,
}


def call(
    verb: Verb,
    *args: str,
    error: Callable[[str], Exception],
    journal: str,
) -> None:
    """Run `systemctl <verb> <args>`; a failure raises `error("systemctl <verb> ... failed")`.

    Args:
        verb: the systemctl verb, run through its charmlibs-systemd function.
        args: its arguments (units, flags).
        error: the caller's error type (or any factory taking the message).
        journal: the unit whose journal the message points to.

    Raises:
        Exception: `error(...)`, when systemctl failed or could not run.
    """
    try:
        _ACTIONS[verb](*args)
    except (systemd.SystemdError, OSError):
        command = " ".join((verb, *args))
        raise error(f"systemctl {command} failed (see journalctl -u {journal})") from None


def keep_running(
    unit: str, *, changed: bool, error: Callable[[str], Exception], journal: str
) -> None:
    """After its unit files were written: put `unit` in force, or start it if it stopped.

    Changed files take effect at once: systemd reloads, and the unit is enabled and restarted
    (a timer's new period, a service's new program). Otherwise only a stopped unit is started.

    Raises:
        Exception: `error(...)`, naming the systemctl command that failed.
    """
    if changed:
        call("daemon-reload", error=error, journal=journal)
        call("enable", unit, error=error, journal=journal)
        call("restart", unit, error=error, journal=journal)
    elif not running(unit):
        call("start", unit, error=error, journal=journal)


def running(unit: str) -> bool:
    """Whether systemd reports `unit` active; without systemctl nothing can be running."""
    try:
        return systemd.service_running(unit)
    except OSError:
        return False
