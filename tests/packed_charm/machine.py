"""A throwaway machine for a packed charm's hooks: this machine's root seen through an overlay.

The charm's hooks run as root and change the machine: a user, /etc, /var/lib, /usr/local,
systemd units. Here they run chrooted into an overlay of `/` whose writes land in a temporary
upper directory, inside private mount, network and PID namespaces (`unshare`): the machine's
own root, network and processes are never touched, loopback is the only network, and every
process a hook leaves running ends with the namespace. systemd is not booted (it is not the
init here): the e2e suite's systemctl stand-in runs the units the charm writes.

One directory, `shared`, is bind-mounted at its own path so that the hook tools' model and
calls, the systemctl stand-in's state and journal, and results are the same files inside and
outside.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

UNSHARE = ("unshare", "--mount", "--net", "--pid", "--fork", "--propagation", "private")
HOOK_TIMEOUT_SECONDS = 300


def namespaced(argv: Sequence[str]) -> list[str]:
    """`argv` run in new mount, network and PID namespaces (needs root)."""
    return [*UNSHARE, "--", *argv]


def unavailable_reason() -> str:
    """Why the throwaway machine cannot be made here, or "" when it can."""
    if os.geteuid() != 0:
        return "the packed charm's machine needs root (unshare and mounts): run as root"
    if shutil.which("unshare") is None or shutil.which("chroot") is None:
        return "the packed charm's machine needs unshare and chroot (util-linux, coreutils)"
    probe = subprocess.run(
        namespaced(["true"]), capture_output=True, text=True, timeout=30, check=False
    )
    if probe.returncode != 0:
        return f"unshare cannot make mount, network and PID namespaces here: {probe.stderr}"
    return ""


class OverlayRoot:
    """This machine's root as an overlay, chrooted into; call inside `namespaced` only.

    Args:
        work: an empty directory for the overlay's layers and mount point.
        shared: a directory seen at the same path inside and outside.
    """

    def __init__(self, work: Path, shared: Path) -> None:
        self.upper = work / "upper"
        self.scratch = work / "overlay-work"
        self.root = work / "root"
        self.shared = shared
        for directory in (self.upper, self.scratch, self.root, shared):
            directory.mkdir(parents=True, exist_ok=True)

    def mount(self) -> None:
        """Mount the overlay, /proc (this PID namespace's), /dev and `shared`; bring up lo."""
        options = f"lowerdir=/,upperdir={self.upper},workdir={self.scratch}"
        _run(["mount", "-t", "overlay", "overlay", "-o", options, str(self.root)])
        _run(["mount", "-t", "proc", "proc", str(self.root / "proc")])
        _run(["mount", "--rbind", "/dev", str(self.root / "dev")])
        inside = self.inside(self.shared)
        inside.mkdir(parents=True, exist_ok=True)
        _run(["mount", "--bind", str(self.shared), str(inside)])
        _run(["ip", "link", "set", "lo", "up"])

    def inside(self, path: Path) -> Path:
        """Where the machine's `path` is, seen from outside the chroot."""
        return self.root / path.relative_to("/")

    def run(
        self, argv: list[str], environment: Mapping[str, str], cwd: Path
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` chrooted, in `cwd` (the machine's path), with exactly `environment`."""
        script = 'cd "$1" && shift && exec "$@"'
        return subprocess.run(
            ["chroot", str(self.root), "/bin/sh", "-c", script, "sh", str(cwd), *argv],  # noqa: S607
            env=dict(environment),
            capture_output=True,
            text=True,
            timeout=HOOK_TIMEOUT_SECONDS,
            check=False,
        )


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
