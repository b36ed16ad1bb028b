"""A machine for the garm charm under a temporary root, running a real GARM, without systemd.

Only where no systemd can be booted: `tox -e demo -- --garm-bin` (`scripts/demo_real.py`) runs
on any developer's machine, as any user. The e2e suites run the charm in a container with a real
systemd instead (`container_machine.py`), which enforces what the stand-in below only records.

The charm's real `Workload` is rooted in a temporary directory. Two things stand in for what
these machines lack, and both do the real work instead of recording it:

- `systemctl` (first on PATH) is `systemctl_standin.py`: it reads the unit file the charm
  rendered and starts its ExecStart with the unit's environment, appending its output to a
  journal file.
- `id` and `useradd` go through `MachineRunner`, which records them and changes nothing: the
  tests may run as root, and a test must not add users to the machine it runs on. `runuser -u
  garm -- ...` runs what follows `--` as the test's own user. The
  workload's user lookup answers the test's own uid and gid for `garm`, so files really get the
  modes and group the charm sets. Every other command (`garm --version`) really runs.

The resources are built the way the releases are: a gzipped tarball holding `garm` (the real
server binary under test) and one holding `garm-provider-openstack`, here a stand-in
(`provider_standin.py`) that checks the files the charm rendered for it, keeps instances in a
JSON file and boots "runners" that report to GARM as real ones do.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shlex
import socket
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path, PurePath

from doubles.workload_double import this_users_ids
from workload.exporter import CharmExporter, ExporterPaths
from workload.host import COMMAND_TIMEOUT_SECONDS, CommandResult, run_command
from workload.machine import Workload
from workload.tick import ReconcileTick, TickPaths

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "systemctl_standin.py"
PROVIDER_STANDIN = HERE / "provider_standin.py"
FAKE_PROVIDER_DIR = HERE.parent / "fake_github"
# Commands that would change the machine running the tests; recorded, never run.
RECORDED_ONLY = ("useradd",)


def build_tarball(member: str, content: bytes, destination: Path) -> Path:
    """A gzipped tarball holding one executable, as GARM's release assets are."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as archive:
        info = tarfile.TarInfo(member)
        info.size = len(content)
        info.mode = 0o755
        archive.addfile(info, io.BytesIO(content))
    destination.write_bytes(buffer.getvalue())
    return destination


def provider_script(
    state_file: PurePath,
    environment_log: PurePath,
    *,
    python: str = sys.executable,
    embed_fake_provider: bool = False,
) -> bytes:
    """The `garm-provider-openstack` stand-in (`provider_standin.py`) with its settings.

    GARM runs providers with a clean environment, so the shebang is absolute and the settings
    are written into the script. `embed_fake_provider` writes the fake provider's source in
    too, for a provider run where the checkout cannot be read (GARM's sandbox hides homes).
    """
    script = f"#!{python}\n{PROVIDER_STANDIN.read_text()}"
    settings = {
        'STATE = Path("instances.json")': f"STATE = Path({str(state_file)!r})",
        'ENVIRONMENT_LOG = Path("environment.jsonl")': (
            f"ENVIRONMENT_LOG = Path({str(environment_log)!r})"
        ),
        'FAKE_PROVIDER_DIR = "."': f"FAKE_PROVIDER_DIR = {str(FAKE_PROVIDER_DIR)!r}",
    }
    if embed_fake_provider:
        source = (FAKE_PROVIDER_DIR / "fake_provider.py").read_text()
        settings['FAKE_PROVIDER_SOURCE = ""'] = f"FAKE_PROVIDER_SOURCE = {source!r}"
    for default, value in settings.items():
        assert default in script, default
        script = script.replace(default, value, 1)
    return script.encode()


def provider_instances(state_file: Path) -> int:
    """How many instances the provider stand-in holds in its state file."""
    if not state_file.exists():
        return 0
    return len(json.loads(state_file.read_text()))


def provider_environments(environment_log: Path) -> list[dict[str, str]]:
    """The proxy variables the provider stand-in saw, one mapping per call."""
    if not environment_log.exists():
        return []
    return [json.loads(line) for line in environment_log.read_text().splitlines()]


@dataclasses.dataclass
class MachineRunner:
    """The workload's command runner on a test machine: records user and ownership changes."""

    recorded: list[list[str]] = dataclasses.field(default_factory=list[list[str]])
    user_added: bool = False

    def __call__(
        self, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS
    ) -> CommandResult:
        """Record `useradd`/`chown`, answer `id` from what was recorded, run the rest."""
        command = Path(argv[0]).name
        if command in RECORDED_ONLY:
            self.recorded.append(list(argv))
            self.user_added |= command == "useradd"
            return CommandResult(0)
        if command == "id":
            return CommandResult(0, "999\n") if self.user_added else CommandResult(1)
        if command == "runuser":
            # The test's own user stands for `garm` (never added): run what follows `--`.
            argv = argv[list(argv).index("--") + 1 :]
        return run_command(argv, timeout=timeout)


class Machine:
    """A temporary root for the charm, the systemctl stand-in, and what ran on it.

    Args:
        directory: an empty directory; the root, the stand-in's state and the provider's
            state live under it.
    """

    def __init__(self, directory: Path) -> None:
        self.root = directory / "root"
        self.systemd = directory / "systemd"
        self.bin = directory / "bin"
        self.provider_state = directory / "provider" / "instances.json"
        self.provider_environment = directory / "provider" / "environment.jsonl"
        for path in (self.root, self.systemd, self.bin, self.provider_state.parent):
            path.mkdir(parents=True, exist_ok=True)
        self.runner = MachineRunner()
        self.exporter_port = _free_loopback_port()
        wrapper = self.bin / "systemctl"
        wrapper.write_text(
            "#!/bin/sh\n"
            f"exec {shlex.quote(sys.executable)} {shlex.quote(str(STANDIN))} "
            f"--root {shlex.quote(str(self.root))} --state {shlex.quote(str(self.systemd))} "
            '"$@"\n'
        )
        wrapper.chmod(0o755)

    def workload(self) -> Workload:
        """The charm's real workload, rooted here."""
        # The test's own uid and gid stand for the `garm` user and group, which are not added.
        return Workload(self.root, runner=self.runner, ids=this_users_ids)

    def reconcile_tick(self) -> ReconcileTick:
        """The charm's reconcile-tick timer, rooted here (never the machine's own systemd)."""
        return ReconcileTick(TickPaths(self.root))

    def charm_exporter(self) -> CharmExporter:
        """The charm's metrics exporter, rooted here, on a free port (tests run side by side)."""
        return CharmExporter(ExporterPaths(self.root), port=self.exporter_port)

    def path_with_systemctl(self) -> str:
        """A PATH with the stand-in first."""
        return f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"

    def provider_tarball(self, destination: Path) -> Path:
        """The `garm-provider-openstack` resource: the stand-in provider, as a release tarball."""
        script = provider_script(self.provider_state, self.provider_environment)
        return build_tarball("garm-provider-openstack", script, destination)

    def journal(self, unit: str = "garm.service") -> str:
        """Everything the unit printed, as the journal would hold it."""
        path = self.systemd / "journal" / f"{unit}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def systemctl_calls(self) -> list[list[str]]:
        """Every systemctl command line, in order."""
        log = self.systemd / "calls"
        return [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []

    def restarts(self, unit: str = "garm") -> int:
        """How many times the unit was (re)started by `systemctl restart`."""
        return sum(1 for call in self.systemctl_calls() if call[:2] == ["restart", unit])

    def provider_instances(self) -> int:
        """How many instances the provider holds."""
        return provider_instances(self.provider_state)

    def provider_environments(self) -> list[dict[str, str]]:
        """The proxy variables the provider saw, one mapping per call."""
        return provider_environments(self.provider_environment)

    def stop_everything(self) -> None:
        """Stop every process the stand-in started (end of test, pass or fail)."""
        units = self.systemd / "units"
        if not units.is_dir():
            return
        for state in units.glob("*.json"):
            run_command(
                [str(self.bin / "systemctl"), "stop", state.name.removesuffix(".json")],
                timeout=30,
            )


def _free_loopback_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
