"""GARM's SQLite database migrated by a newer GARM on a copy, swapped in whole (ADR 0025, 0034).

A newer GARM migrates the database when it opens it, with SQLite's foreign keys on, and
rebuilds tables (`scale_sets`, `pools`) by copying them and dropping the old one. Observed with
v0.2.1 -> v0.2.1-96-gafda4e76 (docs/reference/garm-behaviour.md): while any runner row
(`instances`) points at a scale set the drop fails ("violates foreign key constraint"), leaving
the database half migrated and GARM not starting; without runners the drop cascades and deletes
every scale set's labels (`scaleset_tags`). So, with GARM stopped, the charm copies the database,
sets those rows aside in the copy, lets the new binary migrate the copy (`garm admin list`
opens the database, migrates it and starts no worker), puts the rows back, checks every foreign
key and that no table lost a row, and only then renames the copy over GARM's file.

Nothing here ever changes GARM's own files before that rename, and a durable record
(`migration_record`) says what is under way, so a hook killed at any point (reboot, OOM, a
failed fork, a full disk) leaves either the old database or the whole migrated one: `recover`,
which the next hook runs before anything starts GARM, finishes the one or keeps the other, and
puts the pre-upgrade backup back for anything in between.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import sqlite3
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Final

import tomli_w

from workload import backup
from workload.host import (
    SYSTEM_USER,
    Paths,
    Runner,
    WorkloadError,
    ensure_directory,
    read_regular,
    remove_tree,
    write_atomic,
)
from workload.migration_record import (
    MigrationRecord,
    Recovery,
    clear_record,
    decide,
    read_record,
    sync_directory,
    write_record,
)

# The rows a rebuild of `scale_sets` or `pools` deletes or trips over. Children first: a row is
# deleted before the row it points at, and put back after it.
SET_ASIDE_TABLES: Final = (
    "instance_status_updates",
    "addresses",
    "workflow_jobs",
    "instances",
    "scaleset_tags",
    "pool_tags",
)
MIGRATE_TIMEOUT_SECONDS: Final = 120
# Where the copy is migrated: beside GARM's files (one file system, so a rename swaps it in).
SCRATCH_DIR: Final = ".migration"

Rows = dict[str, tuple[list[str], list[tuple[Any, ...]]]]
# Called with a step's name after each write (tests make one fail or stop the process there).
FaultPoint = Callable[[str], None]


def _no_fault(_: str) -> None:
    """Production: no step fails on purpose."""


class MigrationError(WorkloadError):
    """The new GARM could not migrate the database; the message is safe for a status."""


@dataclasses.dataclass(frozen=True)
class Recovered:
    """What `recover` found and did about a migration left behind."""

    outcome: Recovery
    record: MigrationRecord


def migrate_on_copy(
    paths: Paths,
    run: Runner,
    *,
    backup_name: str,
    from_version: str,
    to_version: str,
    ids: tuple[int, int],
    fault: FaultPoint = _no_fault,
) -> int:
    """Let the installed GARM migrate a copy of its stopped database; swap the copy in whole.

    Records `to_version` as the version that last ran on the database once the copy is in,
    so a hook that then fails to start GARM never backs the migrated database up as the old
    version's. Whatever this raises, GARM's files are the old ones or the migrated ones, and
    the record is left for `recover` (the caller runs it at once).

    Args:
        paths: this machine's paths (the database, GARM's binary and config).
        run: the command runner.
        backup_name: the pre-upgrade backup, which `recover` puts back if need be.
        from_version: the version whose schema the database holds now.
        to_version: the installed GARM, which migrates.
        ids: the uid and gid GARM runs as (the copy is its to write).
        fault: called after each write, with the step's name.

    Returns:
        How many runners were set aside during the migration and put back.

    Raises:
        MigrationError: copying, setting aside, migrating, putting back or swapping failed.
    """
    record = MigrationRecord(
        backup_name,
        from_version,
        to_version,
        original_sha256=state_digest(paths.sqlite_db),
        original_blob_sha256=state_digest(blob_path(paths)),
    )
    try:
        write_record(paths, record)
        fault("recorded")
        kept = _migrate_copy(paths, run, ids, fault)
        scratch = scratch_dir(paths)
        write_record(
            paths,
            dataclasses.replace(
                record,
                migrated_sha256=state_digest(scratch / backup.DATABASE_FILE),
                migrated_blob_sha256=state_digest(scratch / backup.BLOB_FILE),
            ),
        )
        fault("checked")
        _swap_in(paths, fault)
        _finish(paths, to_version, fault)
    except sqlite3.Error as error:
        raise MigrationError(f"the database could not be migrated: {error}") from None
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        raise MigrationError(f"the migration failed: {error.strerror or error}{where}") from None
    return kept


def recover(paths: Paths, ids: tuple[int, int]) -> Recovered | None:
    """Act on the record a migration left (killed, or failed in this hook); GARM stopped.

    Returns:
        What was found and done; None when no migration was left behind.

    Raises:
        WorkloadError: the backup could not be put back, or the record not be dropped; the
            record stays, so the next hook tries again and nothing starts GARM meanwhile.
    """
    record = read_record(paths)
    if record is None:
        return None
    outcome = decide(record, state_digest(paths.sqlite_db), state_digest(blob_path(paths)))
    if outcome is Recovery.RESTORE:
        manifest = backup.read_backup(paths, record.backup)
        backup.restore_backup(paths, manifest, uid=ids[0], gid=ids[1])
        if not manifest.blob_sha256:
            _remove_database(blob_path(paths))
    # The version recorded is the schema's: the new one only once the whole copy is in.
    record_version(
        paths, record.to_version if outcome is Recovery.COMPLETED else record.from_version
    )
    with contextlib.suppress(OSError):
        remove_tree(scratch_dir(paths))
    clear_record(paths)
    return Recovered(outcome, record)


def scratch_dir(paths: Paths) -> Path:
    """Where the copy is migrated."""
    return paths.data / SCRATCH_DIR


def blob_path(paths: Paths) -> Path:
    """GARM's file-object database beside the main one (builds after v0.2.1)."""
    return paths.data / backup.BLOB_FILE


def state_digest(database: Path) -> str:
    """A digest of a database file and its write-ahead log; "" when there is no database.

    What the database holds is the file plus a log not yet checkpointed into it, so both count:
    a GARM started on the old file (by hand, at boot) changes the log first.
    """
    found = read_regular(database)
    if found is None:
        return ""
    digest = hashlib.sha256(found[0])
    wal = read_regular(database.with_name(f"{database.name}-wal"))
    if wal is not None and wal[0]:
        digest.update(b"\0wal\0")
        digest.update(wal[0])
    return digest.hexdigest()


def record_version(paths: Paths, version: str) -> None:
    """Remember the GARM version whose schema the database now holds (it last migrated it)."""
    if version and (read_regular(paths.garm_version) or (b"",))[0].strip() != version.encode():
        write_atomic(paths.garm_version, version.encode(), 0o600)


def _migrate_copy(paths: Paths, run: Runner, ids: tuple[int, int], fault: FaultPoint) -> int:
    """Copy GARM's databases aside, migrate the copy keeping every row, check it."""
    scratch = scratch_dir(paths)
    remove_tree(scratch)
    ensure_directory(scratch, 0o700, uid=ids[0], gid=ids[1])
    copy = scratch / backup.DATABASE_FILE
    blob = scratch / backup.BLOB_FILE
    for source, target in ((paths.sqlite_db, copy), (blob_path(paths), blob)):
        if source.is_file():
            backup.online_copy(source, target)
            _own(target, ids)
            fault(f"copied {target.name}")
    config = scratch / "config.toml"
    write_atomic(config, _config_for(paths, copy), 0o640, group=ids[1])
    fault("configured")
    before = _row_counts(copy)
    rows = _set_aside(copy)
    fault("set aside")
    _migrate(paths, run, config)
    fault("migrated")
    _put_back(copy, rows)
    _nothing_lost(before, _row_counts(copy))
    fault("put back")
    for database in (copy, blob):
        _settle(database)
    return len(rows.get("instances", ([], []))[1])


def _swap_in(paths: Paths, fault: FaultPoint) -> None:
    """Rename the migrated copies over GARM's files (the file-object database first)."""
    scratch = scratch_dir(paths)
    blob = scratch / backup.BLOB_FILE
    if blob.is_file():
        backup.replace_dropping_journal(blob, blob_path(paths))
        fault("swapped blob")
    backup.replace_dropping_journal(scratch / backup.DATABASE_FILE, paths.sqlite_db)
    sync_directory(paths.data)
    fault("swapped")


def _finish(paths: Paths, to_version: str, fault: FaultPoint) -> None:
    record_version(paths, to_version)
    fault("version recorded")
    with contextlib.suppress(OSError):
        remove_tree(scratch_dir(paths))
    clear_record(paths)
    fault("cleared")


def _config_for(paths: Paths, database: Path) -> bytes:
    """GARM's config as it is, but for the database file `database`."""
    found = read_regular(paths.config)
    if found is None:
        raise MigrationError(f"no GARM config at {paths.config} to migrate with")
    # Deferred: only a migration reads GARM's config back, never a converged hook.
    import tomllib  # noqa: PLC0415

    try:
        document = tomllib.loads(found[0].decode())
        document["database"]["sqlite3"]["db_file"] = str(database)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError):
        raise MigrationError(f"GARM's config at {paths.config} names no SQLite database") from None
    return tomli_w.dumps(document).encode()


def _own(path: Path, ids: tuple[int, int]) -> None:
    os.chown(path, ids[0], ids[1])


def _settle(database: Path) -> None:
    """Checkpoint the copy's write-ahead log into its file: the rename moves the file alone."""
    if not database.is_file():
        return
    connection = sqlite3.connect(database, timeout=30)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    wal = read_regular(database.with_name(f"{database.name}-wal"))
    if wal is not None and wal[0]:
        raise MigrationError(f"the migrated {database.name} kept a journal it could not settle")


def _remove_database(database: Path) -> None:
    for suffix in ("", *backup.JOURNALS):
        database.with_name(database.name + suffix).unlink(missing_ok=True)


def _row_counts(database: Path) -> dict[str, int]:
    """How many rows each of GARM's tables holds."""
    with _transaction(database) as connection:
        return {
            table: connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]  # noqa: S608
            for table in _tables(connection)
            if not table.startswith("sqlite_")
        }


def _nothing_lost(before: dict[str, int], after: dict[str, int]) -> None:
    """Raise when a table the database had before the migration lost rows."""
    lost = sorted(table for table, count in before.items() if after.get(table, 0) < count)
    if lost:
        raise MigrationError(f"the migration lost rows of {', '.join(lost)[:120]}")


def _set_aside(database: Path) -> Rows:
    """Read and delete every runner row, in one transaction."""
    rows: Rows = {}
    with _transaction(database) as connection:
        present = _tables(connection)
        for table in (name for name in SET_ASIDE_TABLES if name in present):
            cursor = connection.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - fixed names
            columns = [column[0] for column in cursor.description]
            rows[table] = (columns, cursor.fetchall())
            connection.execute(f'DELETE FROM "{table}"')  # noqa: S608 - fixed names
    return rows


def _migrate(paths: Paths, run: Runner, config: Path) -> None:
    """`garm admin list` as GARM's user: opens (so migrates) the copy, runs no worker."""
    result = run(
        [
            "runuser",
            "-u",
            SYSTEM_USER,
            "--",
            str(paths.garm_binary),
            "admin",
            "list",
            "--config",
            str(config),
        ],
        timeout=MIGRATE_TIMEOUT_SECONDS,
    )
    if result.returncode != 0:
        # GARM's error names the failed step, never a secret (no secret is in the arguments).
        reason = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise MigrationError(f"GARM's migration failed: {reason[0][:160]}")


def _put_back(database: Path, rows: Rows) -> None:
    """Insert the runner rows again (parents first) and check every foreign key."""
    with _transaction(database) as connection:
        present = _tables(connection)
        for table in reversed(SET_ASIDE_TABLES):
            if table not in rows:
                continue
            if table not in present:
                raise MigrationError(f"the migrated database has no {table} table")
            wanted, values = rows[table]
            kept = set(_columns(connection, table))
            indexes = [index for index, name in enumerate(wanted) if name in kept]
            names = ", ".join(f'"{wanted[index]}"' for index in indexes)
            marks = ", ".join("?" for _ in indexes)
            connection.executemany(
                f'INSERT INTO "{table}" ({names}) VALUES ({marks})',  # noqa: S608 - fixed names
                [tuple(row[index] for index in indexes) for row in values],
            )
        broken = connection.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise MigrationError(f"runner rows lost their references: {broken[0][0]}")


@contextlib.contextmanager
def _transaction(database: Path) -> Generator[sqlite3.Connection]:
    """One transaction with foreign keys on, as GARM opens the database: all or nothing."""
    connection = sqlite3.connect(database, timeout=30)
    try:
        connection.execute("PRAGMA foreign_keys = ON")
        with connection:
            yield connection
    finally:
        connection.close()


def _tables(connection: sqlite3.Connection) -> set[str]:
    query = "SELECT name FROM sqlite_master WHERE type = 'table'"
    return {row[0] for row in connection.execute(query)}


def _columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]
