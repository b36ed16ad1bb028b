"""The charm's metrics exporter on this machine: its files, its hardened systemd service.

The leader writes its per-scale-set facts (`reconcile.charm_metrics`) to a root-owned, 0644
metrics file; `workload/metrics_server.py`, copied to a root-owned program file, serves it on
127.0.0.1:`EXPORTER_PORT` as a systemd service with no privileges at all (a dynamic user, a
read-only file system, loopback only), docs/adr/0030-charm-metrics-exporter.md. The counter's
memory is a 0600 JSON file beside the metrics file.

systemd is driven through `workload.systemctl` (charmlibs-systemd, which runs `systemctl` from
PATH; tests put a fake one first). No ops imports: the charm hands in the text to write.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Final

from workload import sandbox, systemctl
from workload.host import WorkloadError, ensure_directory, read_intact, write_atomic

logger = logging.getLogger(__name__)

# GARM's API defaults to 9997 (`port`, which the charm refuses to set to this one).
EXPORTER_PORT: Final = 9998
SERVICE_NAME: Final = "garm-charm-exporter"
UNIT: Final = f"{SERVICE_NAME}.service"
PYTHON: Final = "/usr/bin/python3"
# Root's files, readable by the service's dynamic user: the program, the unit, the metrics.
PUBLIC_MODE: Final = 0o644
DIRECTORY_MODE: Final = 0o755
# The counter's memory: only the charm reads it.
STATE_MODE: Final = 0o600
SERVER_SOURCE: Final = Path(__file__).with_name("metrics_server.py")


class ExporterError(Exception):
    """A file could not be written or systemd refused; the message is safe for the log."""


@dataclasses.dataclass(frozen=True)
class ExporterPaths:
    """Where the exporter's files live, under one root (the machine's `/` in production)."""

    root: Path = Path("/")

    @property
    def directory(self) -> Path:
        """The metrics file's directory: root's, 0755 so the service's user reaches the file."""
        return self.root / "var" / "lib" / "garm-charm-metrics"

    @property
    def metrics_file(self) -> Path:
        """What the exporter serves: Prometheus' text format, no secrets."""
        return self.directory / "garm-charm.prom"

    @property
    def state_file(self) -> Path:
        """The last pass's facts and the stuck-runner counter (`MetricsState` as JSON)."""
        return self.directory / "state.json"

    @property
    def program(self) -> Path:
        """The server, copied out of the charm (the service reads nothing of the charm's)."""
        return self.root / "usr" / "local" / "lib" / "garm-charm" / "metrics_server.py"

    @property
    def unit_file(self) -> Path:
        """The systemd unit."""
        return self.root / "etc" / "systemd" / "system" / UNIT


def render_unit(paths: ExporterPaths, port: int = EXPORTER_PORT) -> str:
    """The hardened unit: a dynamic user, nothing writable, loopback IPv4 only.

    The service reads two root-owned 0644 files (its program and the metrics) and the
    machine's Python; GARM's configuration and state, where the secrets are, are made
    inaccessible on top of the dynamic user not being allowed to read them.
    """
    return f"""\
[Unit]
Description=Metrics exporter of the garm charm (per-scale-set facts for Prometheus)
After=network.target

[Service]
Type=simple
ExecStart={PYTHON} -I -S {paths.program} --file {paths.metrics_file} --port {port}
Restart=on-failure
RestartSec=5s
DynamicUser=yes
UMask=0077
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
InaccessiblePaths=-/etc/garm -/var/lib/garm -/var/lib/garm-charm
PrivateTmp=yes
PrivateDevices=yes
PrivateUsers=yes
PrivateIPC=yes
{sandbox.PROTECT_KERNEL}
RestrictAddressFamilies=AF_INET
IPAddressDeny=any
IPAddressAllow=localhost
{sandbox.RESTRICT}
CapabilityBoundingSet=
AmbientCapabilities=
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
SystemCallErrorNumber=EPERM
DevicePolicy=closed
KeyringMode=private
MemoryMax=64M
TasksMax=32

[Install]
WantedBy=multi-user.target
"""


class CharmExporter:
    """Installs, updates and removes the exporter; writes what it serves."""

    def __init__(self, paths: ExporterPaths | None = None, port: int = EXPORTER_PORT) -> None:
        self.paths = paths or ExporterPaths()
        self.port = port

    def install(self) -> bool:
        """Write the program and the unit if they changed and make sure the service runs.

        Returns:
            True when a file was (re)written (the service was then restarted).

        Raises:
            ExporterError: a file could not be written, or systemd refused.
        """
        files = {
            self.paths.program: SERVER_SOURCE.read_bytes(),
            self.paths.unit_file: render_unit(self.paths, self.port).encode(),
        }
        changed = False
        for path, content in files.items():
            # A drifted mode, owner or a symlink is put right too (never written through).
            if read_intact(path, PUBLIC_MODE) != content:
                _write(path, content, PUBLIC_MODE)
                changed = True
        self._ensure_directory()
        systemctl.keep_running(UNIT, changed=changed, error=ExporterError, journal=UNIT)
        if changed:
            logger.info("charm metrics exporter on 127.0.0.1:%d", self.port)
        return changed

    def remove(self) -> None:
        """Stop and remove the service and what it serves (non-leaders, no COS, removal).

        Best effort: a failure is logged, never raised; the next hook tries again because the
        unit file is still there. The counter's memory stays, for a leader that comes back.
        """
        if not self.paths.unit_file.exists():
            self.paths.metrics_file.unlink(missing_ok=True)
            return
        try:
            _systemd("disable", "--now", UNIT)
        except ExporterError as error:
            logger.warning("%s", error)
            return
        for path in (self.paths.unit_file, self.paths.program, self.paths.metrics_file):
            path.unlink(missing_ok=True)
        try:
            _systemd("daemon-reload")
        except ExporterError as error:
            logger.warning("%s", error)
        logger.info("charm metrics exporter removed")

    def publish(self, text: str) -> bool:
        """Replace the metrics file with `text` (atomically) when it differs; whether it did.

        Raises:
            ExporterError: the file could not be written.
        """
        content = text.encode()
        if read_intact(self.paths.metrics_file, PUBLIC_MODE) == content:
            return False
        self._ensure_directory()
        _write(self.paths.metrics_file, content, PUBLIC_MODE)
        return True

    def read_state(self) -> str:
        """The kept state's text; empty when there is none (or it is not as written)."""
        content = read_intact(self.paths.state_file, STATE_MODE)
        return "" if content is None else content.decode(errors="replace")

    def keep_state(self, text: str) -> None:
        """Keep the state for the next pass.

        Raises:
            ExporterError: the file could not be written.
        """
        self._ensure_directory()
        _write(self.paths.state_file, text.encode(), STATE_MODE)

    def _ensure_directory(self) -> None:
        directory = self.paths.directory
        try:
            ensure_directory(directory, DIRECTORY_MODE)
        except WorkloadError as error:
            # A HostWriteError cause names the path and the space to free: a status too.
            raise ExporterError(str(error)) from error


def _write(path: Path, content: bytes, mode: int) -> None:
    try:
        write_atomic(path, content, mode)
    except OSError as error:
        raise ExporterError(str(error)) from error


def _systemd(verb: systemctl.Verb, *args: str) -> None:
    systemctl.call(verb, *args, error=ExporterError, journal=UNIT)
