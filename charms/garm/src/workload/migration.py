"""GARM's SQLite database migrated by a newer GARM, nothing lost (ADR 0025).

A newer GARM migrates the database when it opens it, with SQLite's foreign keys on, and
rebuilds tables (`scale_sets`, `pools`) by copying them and dropping the old one. Observed with
v0.2.1 -> v0.2.1-96-gafda4e76 (docs/reference/garm-behaviour.md): while any runner row
(`instances`) points at a scale set the drop fails ("violates foreign key constraint"), leaving
the database half migrated and GARM not starting; without runners the drop cascades and deletes
every scale set's labels (`scaleset_tags`). So, with GARM stopped, the charm sets those rows
aside, lets the new binary migrate (`garm admin list` opens the database, migrates it and starts
no worker, so nothing acts on a database without its runners), puts the rows back, checks every
foreign key and that no table lost a row. Any failure raises; the caller restores the
pre-upgrade backup.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Generator
from pathlib import Path
from typing import Any, Final

from workload.host import SYSTEM_USER, Paths, Runner, WorkloadError

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

Rows = dict[str, tuple[list[str], list[tuple[Any, ...]]]]


class MigrationError(WorkloadError):
    """The new GARM could not migrate the database; the message is safe for a status."""


def migrate_keeping_runners(paths: Paths, run: Runner) -> int:
    """Let the installed GARM migrate its stopped database; every row it held stays.

    Args:
        paths: this machine's paths (the database, GARM's binary and config).
        run: the command runner.

    Returns:
        How many runners were set aside and put back.

    Raises:
        MigrationError: setting aside, migrating or putting back failed.
    """
    try:
        before = _row_counts(paths.sqlite_db)
        rows = _set_aside(paths.sqlite_db)
        _migrate(paths, run)
        _put_back(paths.sqlite_db, rows)
        _nothing_lost(before, _row_counts(paths.sqlite_db))
    except sqlite3.Error as error:
        raise MigrationError(f"the database could not be migrated: {error}") from None
    return len(rows.get("instances", ([], []))[1])


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


def _migrate(paths: Paths, run: Runner) -> None:
    """`garm admin list` as GARM's user: opens (so migrates) the database, runs no worker."""
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
            str(paths.config),
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
