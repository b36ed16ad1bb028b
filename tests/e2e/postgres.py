"""A throwaway PostgreSQL server on loopback, run as a user process for one test.

Debian's `postgresql` package provides the server binaries (the newest
`/usr/lib/postgresql/<version>/bin`, or the directory `POSTGRESQL_BIN_DIR` names); the cluster
lives in a temporary directory and listens on 127.0.0.1 only. PostgreSQL refuses to run as
root, so when the tests run as root the server runs as the package's `postgres` user.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

BIN_DIR_ENV = "POSTGRESQL_BIN_DIR"
DEBIAN_BIN_DIRS = Path("/usr/lib/postgresql")
SERVICE_USER = "postgres"
DATABASE = "garm"
START_TIMEOUT_SECONDS = 30


@dataclasses.dataclass(frozen=True)
class PostgresServer:
    """Where the server listens and the role the charm is given."""

    port: int
    username: str
    password: str = dataclasses.field(repr=False)

    @property
    def endpoint(self) -> str:
        """`host:port`, as a PostgreSQL charm publishes it."""
        return f"127.0.0.1:{self.port}"


def binary_dir() -> Path | None:
    """Where initdb, pg_ctl and psql are: `POSTGRESQL_BIN_DIR`, else Debian's newest."""
    explicit = os.environ.get(BIN_DIR_ENV)
    if explicit:
        return Path(explicit)
    found = sorted(DEBIAN_BIN_DIRS.glob("*/bin"), reverse=True)
    return found[0] if found else None


def unavailable_reason() -> str:
    """Why no server can be started here, or "" when one can."""
    directory = binary_dir()
    if directory is None or not (directory / "initdb").is_file():
        where = directory or f"{DEBIAN_BIN_DIRS}/<version>/bin"
        return (
            f"no PostgreSQL server binaries in {where}: install Debian's postgresql package "
            f"(or set {BIN_DIR_ENV})"
        )
    if os.geteuid() == 0 and not _has_user(SERVICE_USER):
        return f"running as root and there is no '{SERVICE_USER}' user to run PostgreSQL as"
    return ""


@contextmanager
def local_postgresql() -> Iterator[PostgresServer]:
    """Start a fresh cluster with a `garm` database; stop and remove it afterwards.

    The cluster gets its own directory under the system's temporary directory: the `postgres`
    user cannot enter a root-only test directory.
    """
    directory = Path(tempfile.mkdtemp(prefix="garm-e2e-postgresql-"))
    if os.geteuid() == 0:
        account = pwd.getpwnam(SERVICE_USER)
        os.chown(directory, account.pw_uid, account.pw_gid)
    data, port = directory / "data", _free_port()
    server = PostgresServer(port, "garm_e2e", secrets.token_urlsafe(24))
    _run(["initdb", "-D", str(data), "--auth-local=trust", "--auth-host=scram-sha-256"])
    options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1"
    _run(["pg_ctl", "-D", str(data), "-o", options, "-l", str(directory / "log"), "-w", "start"])
    psql = ["psql", "-h", str(directory), "-p", str(port), "-d", "postgres", "-c"]
    try:
        statements = (
            f"CREATE ROLE {server.username} LOGIN PASSWORD '{server.password}'",
            f"CREATE DATABASE {DATABASE} OWNER {server.username}",
        )
        for statement in statements:
            _run([*psql, statement])
        yield server
    finally:
        _run(["pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(directory, ignore_errors=True)


def _run(argv: Sequence[str]) -> None:
    directory = binary_dir()
    assert directory is not None, unavailable_reason()
    command = [str(directory / argv[0]), *argv[1:]]
    if os.geteuid() == 0:
        command = ["runuser", "-u", SERVICE_USER, "--", *command]
    subprocess.run(
        command, check=True, capture_output=True, timeout=START_TIMEOUT_SECONDS, cwd="/"
    )


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
