"""This machine as the workload sees it: where files live, running commands, writing files.

No ops imports. Every path hangs off a root directory (``/`` in production, a temporary
directory in tests); every command goes through an injectable runner, so tests see exactly what
would have run.
"""

from __future__ import annotations

import dataclasses
import errno
import grp
import os
import platform
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Protocol

SERVICE_NAME: Final = "garm"
SYSTEM_USER: Final = "garm"
PROVIDER_BINARY: Final = "garm-provider-openstack"
COMMAND_TIMEOUT_SECONDS: Final = 300
# What a new directory takes on a disk (one block), for the space a full disk must free.
DIRECTORY_SIZE: Final = 4096
# The exit status `timeout(1)` uses, for a command that was killed at its deadline.
TIMED_OUT: Final = 124


class WorkloadError(Exception):
    """Something on the machine failed; the message is safe to show in a status."""


class ResourceError(WorkloadError):
    """A binary could not be installed; names the Juju resource that fixes it."""

    def __init__(self, resource: str, reason: str) -> None:
        super().__init__(f"resource {resource}: {reason}")
        self.resource = resource
        self.reason = reason


class VersionRefused(WorkloadError):
    """The attached GARM binary must not run on this database; it was not installed.

    The message is the charm's reason, e.g. a downgrade naming both versions.
    """


class CommandError(WorkloadError):
    """A command failed."""


class HostWriteError(WorkloadError, OSError):
    """A file the charm writes could not be written: a full disk, a read-only mount, rights.

    An `OSError` too, so callers that handle their own write failures keep doing so; its
    message (for a Blocked status) names the path and, on a full disk, the space to free.
    """

    def __init__(self, path: Path, error: OSError, needed: int) -> None:
        super().__init__(error.errno, error.strerror or str(error), str(path))
        self.path = path
        self.needed = needed

    def __str__(self) -> str:
        """What failed and what to do, for a status."""
        if self.errno in (errno.ENOSPC, errno.EDQUOT):
            return f"disk full writing {self.path}: free at least {size_text(self.needed)} there"
        return f"cannot write {self.path}: {self.strerror}"


def size_text(count: int) -> str:
    """`count` bytes as a person reads it, rounded up (what must be freed is at least that)."""
    if count < 1024:
        return f"{max(count, 1)} B"
    for unit in ("KiB", "MiB", "GiB"):
        count = -(-count // 1024)
        if count < 1024 or unit == "GiB":
            return f"{count} {unit}"
    return f"{count} GiB"


@dataclasses.dataclass(frozen=True)
class CommandResult:
    """What a command returned."""

    returncode: int
    stdout: str = ""
    stderr: str = ""


class Runner(Protocol):
    """Runs one command (never through a shell), killing it after `timeout` seconds."""

    def __call__(  # noqa: D102
        self, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS
    ) -> CommandResult: ...


def run_command(argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS) -> CommandResult:
    """Run a command on this machine and capture its output.

    A command still running after `timeout` seconds is killed and reported as exit status
    `TIMED_OUT`, so a stuck command fails its caller instead of hanging the hook.
    """
    try:
        completed = subprocess.run(  # fixed argument lists, never a shell
            list(argv), capture_output=True, text=True, check=False, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return CommandResult(TIMED_OUT, "", f"timed out after {timeout:g}s")
    return CommandResult(completed.returncode, completed.stdout, completed.stderr)


def check_command(run: Runner, argv: Sequence[str]) -> CommandResult:
    """Run a command that must succeed.

    Raises:
        CommandError: it failed; names the command, never its arguments past the third.
    """
    result = run(argv)
    if result.returncode != 0:
        # stderr of these commands never carries secrets (no secret is ever an argument).
        raise CommandError(f"{' '.join(argv[:3])} failed: {result.stderr.strip()[:200]}")
    return result


# The user's uid and its group's gid, by name (injectable: tests must not depend on real users).
IdLookup = Callable[[str], tuple[int, int]]


def lookup_ids(name: str) -> tuple[int, int]:
    """The uid of user `name` and the gid of group `name`.

    Raises:
        WorkloadError: either does not exist.
    """
    try:
        return pwd.getpwnam(name).pw_uid, grp.getgrnam(name).gr_gid
    except KeyError:
        raise WorkloadError(f"the {name} user or group does not exist") from None


def machine_arch() -> str:
    """This machine's architecture in release-asset spelling."""
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


@dataclasses.dataclass(frozen=True)
class Paths:
    """Where everything lives, under one root."""

    root: Path

    @property
    def etc(self) -> Path:
        """GARM's configuration directory."""
        return self.root / "etc" / "garm"

    @property
    def config(self) -> Path:
        """GARM's config.toml."""
        return self.etc / "config.toml"

    @property
    def environment(self) -> Path:
        """The service's environment (the model's proxy), read by systemd as root."""
        return self.etc / "garm.env"

    @property
    def postgresql_ca(self) -> Path:
        """The PostgreSQL provider's CA, which GARM verifies the database server against."""
        return self.etc / "postgresql-ca.pem"

    @property
    def tls_certificate(self) -> Path:
        """The certificate chain GARM serves HTTPS with."""
        return self.etc / "server.crt"

    @property
    def tls_private_key(self) -> Path:
        """The certificate's private key."""
        return self.etc / "server.key"

    @property
    def tls_ca(self) -> Path:
        """The CA of GARM's certificate, for clients on this machine (the metrics scrape)."""
        return self.etc / "ca.pem"

    @property
    def metrics_token(self) -> Path:
        """The token the metrics scrape sends to GARM's `/metrics` (GARM never reads it)."""
        return self.etc / "metrics-token"

    @property
    def data(self) -> Path:
        """GARM's state directory (the only one the service may write)."""
        return self.root / "var" / "lib" / "garm"

    @property
    def sqlite_db(self) -> Path:
        """The SQLite database file."""
        return self.data / "garm.db"

    @property
    def providers_dir(self) -> Path:
        """Where provider executables live."""
        return self.root / "opt" / "garm" / "providers.d"

    @property
    def provider_binary(self) -> Path:
        """The OpenStack provider executable."""
        return self.providers_dir / PROVIDER_BINARY

    @property
    def garm_binary(self) -> Path:
        """The GARM server executable."""
        return self.root / "usr" / "local" / "bin" / "garm"

    @property
    def unit_file(self) -> Path:
        """The systemd unit."""
        return self.root / "etc" / "systemd" / "system" / f"{SERVICE_NAME}.service"

    @property
    def charm_state(self) -> Path:
        """The charm's own bookkeeping (root only)."""
        return self.root / "var" / "lib" / "garm-charm"

    @property
    def fingerprint(self) -> Path:
        """What the running service was started with."""
        return self.charm_state / "service-fingerprint"

    @property
    def backend(self) -> Path:
        """Which database backend GARM's state was last written to."""
        return self.charm_state / "database-backend"

    @property
    def garm_version(self) -> Path:
        """The GARM version that last ran on the database (what an upgrade starts from)."""
        return self.charm_state / "garm-version"

    @property
    def installed(self) -> Path:
        """Which tarballs the installed binaries came from."""
        return self.charm_state / "installed.json"

    @property
    def provider_dirs(self) -> Path:
        """Where each provider's config directory lives."""
        return self.etc / "providers"

    def provider_dir(self, name: str) -> Path:
        """One provider's config directory."""
        return self.provider_dirs / name

    def provider_config(self, name: str) -> Path:
        """One provider's config.toml."""
        return self.provider_dir(name) / "config.toml"

    def provider_clouds(self, name: str) -> Path:
        """One provider's clouds.yaml."""
        return self.provider_dir(name) / "clouds.yaml"


def write_atomic(path: Path, content: bytes, mode: int, *, group: int = -1) -> None:
    """Replace `path` with `content`, owned by root and `group`, at `mode`, in one rename.

    The new file is created by `mkstemp` (O_CREAT|O_EXCL: never through a symlink, never an
    existing file) and gets its group and mode on the descriptor before any byte is written, so
    no reader ever sees it with looser rights or half written. The rename replaces a symlink at
    `path` itself, never its target.

    Raises:
        HostWriteError: the disk (full, read-only) or the rights refused; `path` is as it was.
    """
    try:
        _write_atomic(path, content, mode, group)
    except OSError as error:  # its directory's too: the file is what the operator knows
        # The new file and the old one coexist until the rename: the content's size is needed.
        raise HostWriteError(path, error, len(content)) from None


def _write_atomic(path: Path, content: bytes, mode: int, group: int) -> None:
    ensure_directory(path.parent, None)
    if path.is_dir() and not path.is_symlink():
        # A directory in the file's place would make the rename fail at every hook.
        remove_tree(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(descriptor, mode)
        os.fchown(descriptor, -1, group)
        view = memoryview(content)
        while view:
            view = view[os.write(descriptor, view) :]
        os.fsync(descriptor)
    except BaseException:
        os.close(descriptor)
        os.unlink(temporary)
        raise
    os.close(descriptor)
    os.replace(temporary, path)


def read_intact(path: Path, mode: int, *, group: int = -1) -> bytes | None:
    """The content of `path` when it is as `write_atomic` leaves it, else None.

    As written: a regular file (never a symlink) owned by this process's user, at `mode`, and
    in `group` unless that is -1. Anything else is drift that the next write repairs.
    """
    found = read_regular(path)
    if found is None:
        return None
    content, status = found
    if status.st_uid != os.geteuid() or stat.S_IMODE(status.st_mode) != mode:
        return None
    if group not in (-1, status.st_gid):
        return None
    return content


def is_intact(path: Path, mode: int) -> bool:
    """Whether `path` is a regular file (not a symlink) owned by this process's user at `mode`.

    For binaries: their attributes, without reading them.
    """
    try:
        status = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISREG(status.st_mode)
        and status.st_uid == os.geteuid()
        and stat.S_IMODE(status.st_mode) == mode
    )


def ensure_directory(path: Path, mode: int | None, *, uid: int = -1, gid: int = -1) -> None:
    """Create `path` (and its parents) and set its mode and owner, never through a symlink.

    Args:
        path: the directory.
        mode: its mode; None leaves an existing directory's mode and owner alone.
        uid: its owner (-1 keeps it).
        gid: its group (-1 keeps it).

    Raises:
        WorkloadError: `path` is a symlink or not a directory.
        HostWriteError: it could not be created (a full disk, a read-only mount, rights).
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise HostWriteError(path, error, DIRECTORY_SIZE) from None
    if mode is None:
        return
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        raise WorkloadError(f"{path} is not a directory (a symbolic link?)") from None
    try:
        os.fchmod(descriptor, mode)
        os.fchown(descriptor, uid, gid)
    finally:
        os.close(descriptor)


def read_regular(path: Path) -> tuple[bytes, os.stat_result] | None:
    """A regular file's content and status, never through a symlink; None for anything else."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            return None
        with os.fdopen(os.dup(descriptor), "rb") as file:
            return file.read(), status
    finally:
        os.close(descriptor)


def remove_tree(path: Path) -> None:
    """Remove a file, a symlink (not its target) or a directory tree without following links."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        # rmtree works on descriptors here (avoids_symlink_attacks): links inside are unlinked.
        shutil.rmtree(path)


def read_text(path: Path) -> str:
    """The file's text, or empty when it cannot be read."""
    try:
        return path.read_text()
    except OSError:
        return ""
