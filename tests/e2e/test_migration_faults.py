"""The upgrade migration killed or failed at every step, on the real newer GARM (ADR 0035).

A database the real v0.2.1 made (its schema, as it creates it at start) holds an organization,
a scale set with two labels, a runner with a status update and an address: the rows the newer
GARM's migration trips over (garm-behaviour B40) or drops (B41). The charm's migration then
runs the real newer binary's `garm admin list` on a copy, and is stopped at each of its writes
in turn: by a `KeyboardInterrupt` (nothing after that point runs, as when the hook is killed),
by a full disk (`ENOSPC`), or by a failed fork before GARM runs. Then the recovery the next hook
runs first. Every outcome is the old database, row for row, with the old version recorded, or
the whole migrated one, every row kept, with the new version recorded; nothing is left behind.
Each case takes well under a second (the newer GARM migrates in about 0.2 s).
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from contract.conftest import NEWER, V021, garm_binary
from contract.real_garm import RealGarm
from must_run import cannot_run
from workload import backup, migration
from workload.host import COMMAND_TIMEOUT_SECONDS, CommandResult, Paths, run_command
from workload.migration_record import record_path

NOW = datetime.datetime(2026, 12, 2, 5, 0, tzinfo=datetime.UTC)
BACKUP = "pre-upgrade-v0.2.1-newer"
NEW_VERSION = "v0.2.1-96-gafda4e76"
# The rows of a running v0.2.1 GARM that the migration must keep (ids as GARM makes them).
ROWS = """
INSERT INTO organizations (id, name) VALUES ('0b7f5a2e-0000-4000-8000-000000000001', 'org');
INSERT INTO scale_sets (id, name, org_id, state)
  VALUES (1, 'small-ec32c2e5', '0b7f5a2e-0000-4000-8000-000000000001', 'active');
INSERT INTO tags (id, name) VALUES ('7a1c0000-0000-4000-8000-000000000001', 'linux'),
  ('7a1c0000-0000-4000-8000-000000000002', 'x64');
INSERT INTO scaleset_tags VALUES (1, '7a1c0000-0000-4000-8000-000000000001'),
  (1, '7a1c0000-0000-4000-8000-000000000002');
INSERT INTO instances (id, name, scale_set_fk_id, status)
  VALUES ('1e5a0000-0000-4000-8000-000000000001', 'garm-ncs8pujp6oct', 1, 'running');
INSERT INTO instance_status_updates (id, instance_id, message)
  VALUES ('5a7e0000-0000-4000-8000-000000000001', '1e5a0000-0000-4000-8000-000000000001', 'up');
INSERT INTO addresses (id, address, instance_id) VALUES
  ('add00000-0000-4000-8000-000000000001', '10.0.0.7', '1e5a0000-0000-4000-8000-000000000001');
"""
KEPT_TABLES = ("organizations", "scale_sets", "tags", "scaleset_tags", "instances", "addresses")
# Every write the migration makes, in order (`migration.FaultPoint` names).
STEPS = (
    "recorded",
    "copied garm.db",
    "configured",
    "set aside",
    "migrated",
    "put back",
    "checked",
    "swapped blob",
    "swapped",
    "version recorded",
    "cleared",
)


# Each table's column names and its rows, by column name.
Rows = dict[str, tuple[list[str], list[dict[str, object]]]]


@pytest.fixture(scope="module")
def v021_database(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str]:
    """A database the real v0.2.1 created (started once, stopped), with a runner's rows.

    Returns its bytes and the config.toml GARM ran with (its passphrase opens the database).
    """
    binary, reason = garm_binary(V021)
    if binary is None:
        cannot_run(reason)
    workdir = tmp_path_factory.mktemp("v021")
    garm = RealGarm(binary, workdir, version=V021)
    garm.start()
    garm.stop()
    with contextlib.closing(sqlite3.connect(workdir / "garm.db")) as connection:
        connection.executescript(ROWS)
        connection.commit()
    return (workdir / "garm.db").read_bytes(), (workdir / "config.toml").read_text()


@pytest.fixture
def machine(tmp_path: Path, v021_database: tuple[bytes, str]) -> Paths:
    """A machine where v0.2.1 last ran, the newer binary in place, the pre-upgrade backup."""
    binary, reason = garm_binary(NEWER)
    if binary is None:
        cannot_run(reason)
    paths = Paths(tmp_path / "root")
    paths.data.mkdir(parents=True)
    paths.etc.mkdir(parents=True)
    paths.charm_state.mkdir(parents=True)
    content, config = v021_database
    paths.sqlite_db.write_bytes(content)
    paths.config.write_text(_config_naming(config, paths.sqlite_db))
    paths.garm_binary.parent.mkdir(parents=True)
    paths.garm_binary.symlink_to(Path(binary).resolve())
    paths.garm_version.write_text(V021)
    backup.create_backup(
        paths, name=BACKUP, garm_version=V021, passphrase_secret="secret:x", now=NOW
    )
    return paths


def as_garm(argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS) -> CommandResult:
    """The machine's runner, the test's own user standing for `garm` (never added here)."""
    if argv[0] == "runuser":
        argv = argv[list(argv).index("--") + 1 :]
    return run_command(argv, timeout=timeout)


def test_the_migration_keeps_every_row_on_the_real_newer_garm(machine: Paths):
    """Arrange: v0.2.1's database with a runner and labels. Act: migrate_on_copy.

    Assert: the newer schema; every row kept; the newer version recorded; no record, no copy.
    """
    before = rows_of(machine.sqlite_db)

    kept = migrate(machine, as_garm)

    assert kept == 1
    assert is_migrated(machine)
    assert kept_rows(machine.sqlite_db, before) == kept_rows(None, before)
    assert machine.garm_version.read_text() == NEW_VERSION
    assert check(migration.blob_path(machine), "SELECT name FROM sqlite_master"), "file objects"
    assert not record_path(machine).exists()
    assert not migration.scratch_dir(machine).exists()


def test_without_the_set_aside_the_real_newer_garm_fails_on_the_runner(machine: Paths):
    """Arrange: v0.2.1's database with a runner. Act: the newer GARM migrates it in place.

    Assert: it fails on the foreign key (B40): why the charm sets the runner rows aside.
    """
    result = as_garm([str(machine.garm_binary), "admin", "list", "--config", str(machine.config)])

    assert result.returncode != 0
    assert "foreign key" in result.stderr + result.stdout


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("fault", ["killed", "disk-full"])
def test_stopped_at_any_step_the_database_is_old_or_whole(machine: Paths, step: str, fault: str):
    """Arrange: v0.2.1's database.

    Act: migrate, stopped at `step` (killed, or ENOSPC), then the recovery the next hook runs
    first (the charm runs it at once after an exception).
    Assert: the old database row for row with v0.2.1 recorded, or the migrated one with every
    row and the newer version recorded; no record, copy or stray file-object database left.
    """
    before = rows_of(machine.sqlite_db)

    def stop_at(reached: str) -> None:
        if reached != step:
            return
        if fault == "killed":
            raise KeyboardInterrupt
        raise OSError(errno.ENOSPC, "No space left on device", str(machine.data))

    with contextlib.suppress(KeyboardInterrupt, migration.MigrationError):
        migrate(machine, as_garm, fault=stop_at)
    migration.recover(machine, (os.getuid(), os.getgid()))

    assert_old_or_whole(machine, before)


def test_a_failed_fork_leaves_the_old_database(machine: Paths):
    """Arrange: v0.2.1's database; the runner cannot fork (EAGAIN). Act: migrate, recover.

    Assert: MigrationError naming the failure; the old database, row for row, v0.2.1 recorded.
    """
    before = rows_of(machine.sqlite_db)

    def no_fork(argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS) -> CommandResult:
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    with pytest.raises(migration.MigrationError, match="Resource temporarily unavailable"):
        migrate(machine, no_fork)
    recovered = migration.recover(machine, (os.getuid(), os.getgid()))

    assert recovered is not None
    assert recovered.outcome is migration.Recovery.UNTOUCHED
    assert rows_of(machine.sqlite_db) == before
    assert machine.garm_version.read_text() == V021


def test_a_garm_started_on_the_old_file_meanwhile_gets_the_backup_back(machine: Paths):
    """Arrange: a migration killed after its record; the newer GARM opened the old file.

    In place (a boot starting it before the next hook): half migrated, as B40 leaves it.
    Act: recover. Assert: the file no longer matches the record's, so the backup is put back:
    the old database row for row, v0.2.1 recorded.
    """
    before = rows_of(machine.sqlite_db)

    def kill_after_record(reached: str) -> None:
        if reached == "recorded":
            raise KeyboardInterrupt

    with contextlib.suppress(KeyboardInterrupt):
        migrate(machine, as_garm, fault=kill_after_record)
    as_garm([str(machine.garm_binary), "admin", "list", "--config", str(machine.config)])
    recovered = migration.recover(machine, (os.getuid(), os.getgid()))

    assert recovered is not None
    assert recovered.outcome is migration.Recovery.RESTORE
    assert_old_or_whole(machine, before)
    assert not is_migrated(machine)


# Helpers ---------------------------------------------------------------------------------------


def migrate(paths: Paths, run: migration.Runner, **kwargs: migration.FaultPoint) -> int:
    """The charm's migration from v0.2.1 to the newer GARM, as the test's own user."""
    return migration.migrate_on_copy(
        paths,
        run,
        backup_name=BACKUP,
        from_version=V021,
        to_version=NEW_VERSION,
        ids=(os.getuid(), os.getgid()),
        **kwargs,
    )


def assert_old_or_whole(paths: Paths, before: Rows) -> None:
    """The database is the old one (v0.2.1 recorded) or the whole migrated one (newer)."""
    after = rows_of(paths.sqlite_db)
    if is_migrated(paths):
        assert paths.garm_version.read_text() == NEW_VERSION
        assert kept_rows(paths.sqlite_db, before) == kept_rows(None, before)
        assert all(len(after[table][1]) >= len(rows) for table, (_, rows) in before.items())
    else:
        assert paths.garm_version.read_text() == V021
        assert after == before
        assert not migration.blob_path(paths).exists()
    assert check(paths.sqlite_db, "PRAGMA foreign_key_check") == []
    assert not record_path(paths).exists()
    assert not migration.scratch_dir(paths).exists()


def kept_rows(database: Path | None, before: Rows) -> dict[str, list[dict[str, object]]]:
    """The kept tables' rows, by the columns they had before (the migration adds columns).

    From `database` now, or (None) as `before` held them.
    """
    found = before if database is None else rows_of(database)
    return {
        table: [{name: row[name] for name in before[table][0]} for row in found[table][1]]
        for table in KEPT_TABLES
    }


def is_migrated(paths: Paths) -> bool:
    """Whether the database has the newer schema (`scale_sets.proxy_id`, garm-behaviour B40)."""
    columns = check(paths.sqlite_db, "PRAGMA table_info(scale_sets)")
    return "proxy_id" in [column[1] for column in columns]


def rows_of(database: Path) -> Rows:
    """Every table's column names and rows (each by column name), in a stable order."""
    tables = check(database, "SELECT name FROM sqlite_master WHERE type = 'table'")
    found: Rows = {}
    for (name,) in tables:
        if str(name).startswith("sqlite_"):
            continue
        with contextlib.closing(sqlite3.connect(database)) as connection:
            cursor = connection.execute(f'SELECT * FROM "{name}"')  # noqa: S608 - GARM's tables
            columns = [column[0] for column in cursor.description]
            rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
        found[str(name)] = (columns, sorted(rows, key=repr))
    return found


def check(database: Path, query: str) -> list[tuple[object, ...]]:
    """What a query finds in a database file."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        return connection.execute(query).fetchall()


def _config_naming(config: str, database: Path) -> str:
    """The config v0.2.1 ran with, naming this machine's database file."""
    lines = [
        f'  db_file = "{database}"' if line.strip().startswith("db_file") else line
        for line in config.splitlines()
    ]
    return "\n".join(lines) + "\n"


def test_a_record_that_cannot_be_written_stops_the_migration_before_anything(
    machine: Paths, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: v0.2.1's database; the disk too full for the record (its write fails).

    Act: migrate, recover. Assert: MigrationError; no copy made, nothing to recover; the old
    database row for row, v0.2.1 recorded.
    """
    before = rows_of(machine.sqlite_db)

    def full(paths: Paths, record: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(record_path(paths)))

    monkeypatch.setattr(migration, "write_record", full)

    with pytest.raises(migration.MigrationError, match="No space left"):
        migrate(machine, as_garm)

    assert migration.recover(machine, (os.getuid(), os.getgid())) is None
    assert not migration.scratch_dir(machine).exists()
    assert rows_of(machine.sqlite_db) == before
    assert machine.garm_version.read_text() == V021


@pytest.mark.parametrize("step", ["copied blob-garm.db", "swapped blob", "swapped"])
def test_a_database_with_file_objects_keeps_both_files_whole(machine: Paths, step: str):
    """Arrange: the newer GARM's database (migrated, so with `blob-garm.db`), backed up.

    Act: migrate again, killed at `step` (around the file-object database's copy and swap),
    then recover.
    Assert: both files hold what they held, row for row; the file-object database's tables are
    there; nothing left behind.
    """
    migrate(machine, as_garm)
    backup.create_backup(
        machine, name="pre-again", garm_version=NEW_VERSION, passphrase_secret="", now=NOW
    )
    before = rows_of(machine.sqlite_db), rows_of(migration.blob_path(machine))

    def kill_at(reached: str) -> None:
        if reached == step:
            raise KeyboardInterrupt

    with contextlib.suppress(KeyboardInterrupt):
        migration.migrate_on_copy(
            machine,
            as_garm,
            backup_name="pre-again",
            from_version=NEW_VERSION,
            to_version=NEW_VERSION,
            ids=(os.getuid(), os.getgid()),
            fault=kill_at,
        )
    migration.recover(machine, (os.getuid(), os.getgid()))

    assert (rows_of(machine.sqlite_db), rows_of(migration.blob_path(machine))) == before
    assert before[1], "the file-object database has tables"
    assert not record_path(machine).exists()
    assert not migration.scratch_dir(machine).exists()
