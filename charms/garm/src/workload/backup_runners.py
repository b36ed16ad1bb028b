"""Which runners a backup's database knows, read from the copy itself (ADR 0025).

After a restore GARM deletes every VM of its providers that the restored database does not
know (garm-behaviour, "A restore deletes the runners the backup does not know"). The restore
action names those runners before it swaps the copy in, so it reads the runners' names from the
backup: GARM's `instances` table, one row per runner, keyed by the same `name` GARM's API shows
(observed on both GARM builds). The copy is opened read-only: reading it never changes it, so
its sha256 still matches the manifest.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from workload.backup import DATABASE_FILE, BackupError, BackupManifest, backup_dir
from workload.host import Paths


def known_runners(paths: Paths, manifest: BackupManifest) -> frozenset[str]:
    """The names of the runners the backup's database holds.

    Raises:
        BackupError: the copy cannot be read as GARM's database (no `instances` table).
    """
    return runner_names(backup_dir(paths, manifest.name) / DATABASE_FILE, manifest.name)


def runner_names(database: Path, name: str) -> frozenset[str]:
    """The runner names in GARM's SQLite database at `database`, opened read-only.

    Raises:
        BackupError: the file cannot be read as GARM's database; `name` says which backup.
    """
    try:
        connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            columns = {row[1] for row in connection.execute("PRAGMA table_info(instances)")}
            if "name" not in columns:
                raise BackupError(f"backup {name} has no runners table GARM's way: not restored")
            # GARM's ORM deletes softly where a table has `deleted_at`: such rows are gone.
            query = "SELECT name FROM instances"
            if "deleted_at" in columns:
                query += " WHERE deleted_at IS NULL"
            return frozenset(str(row[0]) for row in connection.execute(query))
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise BackupError(f"backup {name} cannot be read: {error}") from None
