"""A packed charm as a Juju unit holds it: unpacked, its `dispatch` run once per hook.

`unpack(charm_file, charm_dir)` does what the unit agent does with the .charm (every file with
its mode, so `dispatch` stays executable). `PackedUnit.hook(name)` runs `dispatch` with the
hook's environment (`hook_tools.hook_environment`) through a `Runner`, which says where the
unit's machine is: the host (`run_here`), a chroot (`packed_charm.machine.OverlayRoot.run`),
or a container.
"""

from __future__ import annotations

import dataclasses
import stat
import subprocess
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from packed_charm.hook_tools import HookTools, hook_environment

HOOK_TIMEOUT_SECONDS = 300


class Runner(Protocol):
    """Runs a command on the unit's machine, in `cwd`, with exactly `environment`."""

    def __call__(
        self, argv: list[str], environment: Mapping[str, str], cwd: Path
    ) -> subprocess.CompletedProcess[str]:
        """Run it; never raises for a non-zero exit."""
        ...


def run_here(
    argv: list[str], environment: Mapping[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """Run on this machine (for charms that change nothing outside their directory)."""
    return subprocess.run(
        argv,
        env=dict(environment),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=HOOK_TIMEOUT_SECONDS,
        check=False,
    )


def unpack(charm_file: Path, charm_dir: Path) -> Path:
    """Unpack `charm_file` into `charm_dir` with each member's mode; return `charm_dir`."""
    charm_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(charm_file) as archive:
        for info in archive.infolist():
            target = Path(archive.extract(info, charm_dir))
            mode = info.external_attr >> 16
            if mode and not info.is_dir():
                target.chmod(stat.S_IMODE(mode))
    return charm_dir


@dataclasses.dataclass(frozen=True)
class HookRun:
    """One hook: how dispatch exited, what it printed, the status it left, its seconds."""

    hook: str
    returncode: int
    output: str
    unit_status: dict[str, str]
    app_status: dict[str, str]
    seconds: float

    def as_json(self) -> dict[str, Any]:
        """The run as plain data."""
        return dataclasses.asdict(self)


@dataclasses.dataclass
class PackedUnit:
    """An unpacked charm, its hook tools and the machine its hooks run on.

    Args:
        charm_dir: the unpacked charm, as the machine sees it (`JUJU_CHARM_DIR`).
        tools: the hook tools; their directory, as the machine sees it, goes first on PATH.
        run: runs dispatch on the machine.
        machine_path: what follows the tools on PATH (a machine's own stand-ins first, e.g.
            systemctl where systemd does not run, and `python3` as the base's Python).
        tools_path: the tools' directory as the machine sees it, when that is not the path
            this process writes it at (a container's root seen from outside).
    """

    charm_dir: Path
    tools: HookTools
    run: Runner = run_here
    machine_path: str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    tools_path: Path | None = None
    runs: list[HookRun] = dataclasses.field(default_factory=list[HookRun])

    def hook(
        self, name: str, *, relation_id: int | None = None, remote_unit: str | None = None
    ) -> HookRun:
        """Dispatch hook `name` as the unit agent does; the run, also kept in `runs`."""
        model = self.tools.model()
        environment = hook_environment(
            model,
            charm_dir=self.charm_dir,
            tools=self.tools_path or self.tools.directory,
            hook=name,
            path_after_tools=self.machine_path,
            relation_id=relation_id,
            remote_unit=remote_unit,
        )
        started = time.monotonic()
        done = self.run([str(self.charm_dir / "dispatch")], environment, self.charm_dir)
        seconds = round(time.monotonic() - started, 2)
        after = self.tools.model()["status"]
        output = done.stdout + done.stderr
        run = HookRun(name, done.returncode, output, after["unit"], after["app"], seconds)
        self.runs.append(run)
        return run
