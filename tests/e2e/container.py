"""A throwaway machine with a real systemd for the e2e suites: boot, run inside, tear down.

`booted()` starts `container_guard.py` in a mount namespace of its own: it boots systemd with
`systemd-nspawn` over an overlay of this machine's root (every write in a tmpfs, nothing mounted
where the machine sees it) and reports the container's init, its "leader". Everything else goes
through the leader's namespaces:

- `Container.run` runs a command inside (`nsenter --all`): the charm's Python and the checkout
  are there, because the overlay's lower layer is this machine's root.
- `Container.host_path` is where this process reads or writes a file of the container
  (`/proc/<leader>/root/...`).
- `Container.network()` moves this thread (and the threads and processes it starts) into the
  container's network namespace, where GARM listens and which has only a loopback: the fakes
  the test serves (GitHub, OpenStack, PostgreSQL) and the clients it calls GARM with live
  there too.
- `Container.journal` reads the container's journal.

Leaving `booted()` stops the guard, which powers the container off and unmounts; a guard that
outlives its test (this process killed) sees its stdin close and does the same, and the
container powers itself off at its lifetime in any case. Then `HostWitness` checks that the
machine's `/tmp` and the root's files a container would write are as they were before: systemd
booted on the machine's own root would have emptied `/tmp`.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

HERE = Path(__file__).resolve().parent
GUARD = HERE / "container_guard.py"
# What a command run inside gets, instead of this process's environment.
CONTAINER_ENVIRONMENT = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
TOOLS = ("systemd-nspawn", "unshare", "nsenter", "mount")
# A test module's container is powered off after this, whatever happens to its test process.
LIFETIME_SECONDS = 45 * 60
STOP_TIMEOUT_SECONDS = 60.0
CLONE_NEWNET = 0x40000000
TMP = Path("/tmp")  # noqa: S108 - the machine's own /tmp, which a container must leave alone


class ContainerError(Exception):
    """The container could not be booted, or a command inside failed."""


def unavailable_reason() -> str:
    """Why no container can be booted here, or "" when one can."""
    if os.geteuid() != 0:
        return "a systemd container needs root (systemd-nspawn and overlay mounts)"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if "systemd-nspawn" in missing:
        return "no systemd-nspawn here (Debian's systemd-container package; .ci/run installs it)"
    if missing:
        return f"no {', '.join(missing)} here (util-linux)"
    return ""


@dataclasses.dataclass(frozen=True)
class Container:
    """A booted container, reached through its leader (its init, as this machine sees it)."""

    leader: int
    boot_seconds: float
    tag: str

    @property
    def root(self) -> Path:
        """The container's `/`, as this process reaches it."""
        return Path(f"/proc/{self.leader}/root")

    def host_path(self, path: str | PurePosixPath) -> Path:
        """Where this process finds the container's `path`."""
        return self.root / str(path).lstrip("/")

    def command(
        self,
        argv: Sequence[str],
        environment: Mapping[str, str] | None = None,
        directory: str = "/",
    ) -> list[str]:
        """`argv` as run inside: the container's namespaces, a clean environment, `directory`."""
        variables = {**CONTAINER_ENVIRONMENT, **(environment or {})}
        assignments = [f"--chdir={directory}", *(f"{k}={v}" for k, v in variables.items())]
        return [
            _tool("nsenter"),
            f"--target={self.leader}",
            "--all",
            "--",
            "env",
            "-i",
            *assignments,
            *argv,
        ]

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        timeout: float = 120.0,
        environment: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command inside and wait for it.

        Raises:
            ContainerError: it failed and `check` was set.
        """
        result = subprocess.run(
            self.command(argv, environment),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise ContainerError(
                f"{' '.join(argv)} exited {result.returncode} in the container: "
                f"{(result.stderr or result.stdout).strip()[-2000:]}"
            )
        return result

    def systemctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`systemctl ARGS` inside; its exit status is the caller's to judge."""
        return self.run(["systemctl", *args], check=False)

    def is_active(self, unit: str) -> bool:
        """Whether the container's systemd reports the unit active."""
        return self.systemctl("is-active", "--quiet", unit).returncode == 0

    def sync_journal(self) -> None:
        """Let journald write what it was sent: a query right after a command sees its logs."""
        self.run(["journalctl", "--sync"], check=False)

    def journal_entries(self, *matches: str, since: float = 0.0) -> list[dict[str, Any]]:
        """The journal's entries (JSON objects) matching `matches`, logged after `since`.

        `since` is seconds since the epoch: the container has this machine's clock.
        """
        self.sync_journal()
        argv = ["journalctl", "--output=json", "--no-pager", "--quiet", "--all"]
        if since:
            argv.append(f"--since=@{int(since)}")
        result = self.run([*argv, *matches], check=False)
        entries = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        return [entry for entry in entries if int(entry["__REALTIME_TIMESTAMP"]) > since * 1e6]

    def journal(self, unit: str = "", *, since: float = 0.0) -> str:
        """What `unit` (everything, when empty) logged after `since`, one message a line."""
        matches = [f"_SYSTEMD_UNIT={unit}"] if unit else []
        return "".join(
            f"{_message(entry)}\n" for entry in self.journal_entries(*matches, since=since)
        )

    def write(self, path: str, content: bytes, mode: int = 0o644) -> None:
        """Put a file in the container (its directories created), root's, at `mode`."""
        target = self.host_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        target.chmod(mode)

    @contextlib.contextmanager
    def network(self) -> Iterator[None]:
        """Move this thread into the container's network namespace, and back at the end.

        Network namespaces belong to threads: what this thread opens from now on (sockets,
        threads, subprocesses) is on the container's loopback, where GARM is. Sockets opened
        before stay where they were.
        """
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/proc/{self.leader}/ns/net", os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(target)
            os.close(own)


def _tool(name: str) -> str:
    """The absolute path of a program run on this machine (`unavailable_reason` checked it)."""
    found = shutil.which(name)
    if found is None:
        raise ContainerError(f"no {name} on this machine")
    return found


def _message(entry: dict[str, Any]) -> str:
    """An entry's message; journald gives one that is not UTF-8 as a list of bytes."""
    message = entry.get("MESSAGE", "")
    if isinstance(message, list):
        return bytes(message).decode(errors="replace")
    return str(message)


def _setns(descriptor: int) -> None:
    """setns(2) for a network namespace (os.setns only exists from Python 3.12)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(descriptor, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


@contextlib.contextmanager
def booted(
    files: Mapping[str, tuple[str, int]] | None = None,
    *,
    journal_file: Path | None = None,
    lifetime_seconds: int = LIFETIME_SECONDS,
) -> Iterator[Container]:
    """Boot a container, yield it, then stop it, unmount, and check the machine is unchanged.

    Args:
        files: path -> (text, mode) to put in the container's root before it boots.
        journal_file: where the container's whole journal is saved before it stops.
        lifetime_seconds: when the container powers itself off whatever happens.

    Raises:
        ContainerError: it did not boot (with what nspawn said).
        AssertionError: the machine's `/tmp` or root changed (`HostWitness`).
    """
    witness = HostWitness.take()
    settings = {
        "lifetime_seconds": lifetime_seconds,
        "files": [
            {"path": path, "content": text, "mode": mode}
            for path, (text, mode) in (files or {}).items()
        ],
        "bind_ro": _outside_the_overlay(),
        # The BPF address filters (IPAddressDeny=) need bpf(2), which nspawn filters by default.
        "nspawn_args": ["--system-call-filter=bpf"],
    }
    guard = subprocess.Popen(
        [
            _tool("unshare"),
            "--mount",
            "--propagation",
            "private",
            sys.executable,
            "-I",
            str(GUARD),
            json.dumps(settings),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        container = _ready(guard)
        try:
            yield container
        finally:
            if journal_file is not None:
                journal_file.write_text(
                    container.run(["journalctl", "--no-pager"], check=False).stdout
                )
    finally:
        _stop(guard)
        problems = witness.check()
        assert problems == [], f"the container changed this machine: {problems}"


def _ready(guard: subprocess.Popen[str]) -> Container:
    """The guard's first line: the booted container, or why it did not boot."""
    assert guard.stdout is not None
    line = guard.stdout.readline()
    report: dict[str, Any] = json.loads(line) if line.startswith("{") else {}
    if report.get("event") != "ready":
        raise ContainerError(
            f"the container did not boot: {report.get('reason', line.strip() or 'no report')}\n"
            f"{report.get('log', '')}"
        )
    return Container(int(report["leader"]), float(report["boot_seconds"]), str(report["tag"]))


def _stop(guard: subprocess.Popen[str]) -> None:
    """Ask the guard to stop the container and unmount; kill it if it hangs."""
    assert guard.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        guard.stdin.write("stop\n")
        guard.stdin.close()
    try:
        guard.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        guard.kill()
        guard.wait()
    assert guard.stdout is not None
    guard.stdout.close()


def _outside_the_overlay() -> list[str]:
    """What the container needs that the overlay of `/` would not show: Python, the checkout.

    The overlay's lower layer is the root file system alone: a directory on another file
    system, or under `/tmp` (nspawn mounts a fresh tmpfs there), is bound in read-only.
    """
    root_device = os.stat("/").st_dev
    needed = {Path(sys.prefix), Path(sys.base_prefix), HERE.parents[1]}
    binds: list[str] = []
    for path in sorted(needed):
        resolved = path.resolve()
        if os.stat(resolved).st_dev != root_device or resolved.is_relative_to(TMP):
            binds.append(str(resolved))
    return binds


# What the machine must still look like ---------------------------------------------------------

# The user files a container's `useradd garm` writes: on the machine, no `garm` line may appear
# (other processes on a shared machine may add their own users meanwhile).
USER_FILES = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow")
# What a container writes in its own root (its machine id) and where the charm puts GARM: none
# of them may change, or appear, on the machine.
WITNESSED_PATHS = (
    "/etc/machine-id",
    "/etc/garm",
    "/var/lib/garm",
    "/var/lib/garm-charm",
    "/var/lib/garm-charm-metrics",
    "/var/lib/garm-e2e",
    "/usr/local/bin/garm",
    "/usr/local/lib/garm-charm",
    "/opt/garm",
    "/usr/bin/juju-exec",
    "/etc/systemd/system/garm.service",
)
# Age of the sentinel: older than any age-based clean-up of /tmp would keep.
SENTINEL_AGE_SECONDS = 60 * 24 * 3600


@dataclasses.dataclass(frozen=True)
class HostWitness:
    """What a container must leave as it was: `/tmp` and the root's files it would write.

    This machine is shared, so `/tmp` as a whole changes under other processes; a sentinel
    directory, older than any age-based clean-up, stands for it: systemd's boot-time
    `systemd-tmpfiles --remove` on the machine's own root would empty `/tmp`, sentinel included.
    """

    sentinel: Path
    fingerprint: dict[str, str]
    paths: tuple[str, ...] = WITNESSED_PATHS
    user_files: tuple[str, ...] = USER_FILES

    @classmethod
    def take(
        cls,
        tmp: Path = TMP,
        paths: tuple[str, ...] = WITNESSED_PATHS,
        user_files: tuple[str, ...] = USER_FILES,
    ) -> HostWitness:
        """Plant the sentinel in `tmp` and fingerprint the witnessed files (tests pass others)."""
        sentinel = Path(tempfile.mkdtemp(prefix="garm-e2e-witness-", dir=tmp))
        (sentinel / "kept").write_text("a container must not remove this\n")
        old = time.time() - SENTINEL_AGE_SECONDS
        for path in (sentinel / "kept", sentinel):
            os.utime(path, (old, old))
        return cls(sentinel, _fingerprint(paths, user_files), paths, user_files)

    def check(self) -> list[str]:
        """What changed (empty when nothing did); the sentinel is removed."""
        now = _fingerprint(self.paths, self.user_files)
        problems = [
            f"{path} was {before or 'absent'}, is {after or 'absent'}"
            for path, before, after in _changes(self.fingerprint, now)
        ]
        if not (self.sentinel / "kept").is_file():
            problems.append(f"{self.sentinel.parent} was cleaned: {self.sentinel}/kept is gone")
        problems += [f"still mounted on the machine: {line}" for line in _our_mounts()]
        shutil.rmtree(self.sentinel, ignore_errors=True)
        return problems


def _fingerprint(paths: tuple[str, ...], user_files: tuple[str, ...]) -> dict[str, str]:
    """Each witnessed path (its size and mtime, its entries, or absent); users named garm."""
    found: dict[str, str] = {}
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found[name] = "directory " + ",".join(sorted(p.name for p in path.iterdir()))
        elif path.exists():
            status = path.stat()
            found[name] = f"file {status.st_size} bytes, mtime {status.st_mtime_ns}"
        else:
            found[name] = ""
    for name in user_files:
        lines = Path(name).read_text().splitlines() if Path(name).exists() else []
        found[name] = ";".join(line.split(":")[0] for line in lines if "garm" in line)
    return found


def _changes(before: dict[str, str], after: dict[str, str]) -> list[tuple[str, str, str]]:
    return [(path, before[path], after[path]) for path in before if before[path] != after[path]]


def _our_mounts() -> list[str]:
    """Mounts on this machine made by a guard (all are tagged `garm-e2e-...`)."""
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return [line for line in lines if " garm-e2e-" in line]
