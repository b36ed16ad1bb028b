"""The durable record of a migration in progress, and what the next hook does about it.

A migration works on a copy of GARM's database and swaps it in with one rename per file
(docs/adr/0035-migration-on-a-copy.md). Before it touches anything it writes this record (the
pre-upgrade backup, both versions); once the migrated copy is checked it adds the copy's digests,
then swaps. A hook killed anywhere leaves the record behind, and the next hook reads it before
anything starts GARM: GARM's files as the migration found them are kept as they are, the whole
migrated copy is finished, and anything else (a swap half done, a GARM started on the old file
meanwhile) gets the backup put back. Pure apart from reading and writing the record.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from pathlib import Path
from typing import Any, cast

from workload.host import Paths, WorkloadError, read_regular, write_atomic

RECORD_MODE = 0o600


class Recovery(enum.Enum):
    """What the next hook does about a record it finds."""

    # Nothing was swapped: the database is as it was before; drop the copy and the record.
    UNTOUCHED = "untouched"
    # The migrated copy is in place, whole: finish (record the version, drop the record).
    COMPLETED = "completed"
    # Anything else (a swap half done, a file changed): put the pre-upgrade backup back.
    RESTORE = "restore"


@dataclasses.dataclass(frozen=True)
class MigrationRecord:
    """A migration of GARM's SQLite database from `from_version` to `to_version` under way.

    Digests are `migration.state_digest`s ("" for no file). The original ones are of GARM's
    files as the migration found them; `migrated_sha256` (and `migrated_blob_sha256`) are set
    only once the migrated copy was checked, just before it is swapped in.
    """

    backup: str
    from_version: str
    to_version: str
    original_sha256: str = ""
    original_blob_sha256: str = ""
    migrated_sha256: str = ""
    migrated_blob_sha256: str = ""

    def to_json(self) -> bytes:
        """The record's file content."""
        return json.dumps(dataclasses.asdict(self), indent=2).encode()

    @classmethod
    def from_json(cls, content: bytes) -> MigrationRecord:
        """The record a file holds.

        Raises:
            WorkloadError: not a record this charm wrote (every field a string).
        """
        try:
            document: Any = json.loads(content)
        except ValueError:
            raise WorkloadError("the migration record is unreadable") from None
        fields = [field.name for field in dataclasses.fields(cls)]
        if not isinstance(document, dict):
            raise WorkloadError("the migration record is unreadable")
        found = cast("dict[str, Any]", document)
        values = {name: found.get(name, "") for name in fields}
        if not all(isinstance(value, str) for value in values.values()):
            raise WorkloadError("the migration record is unreadable")
        if not values["backup"]:
            raise WorkloadError("the migration record names no backup")
        return cls(**{name: str(value) for name, value in values.items()})


def decide(record: MigrationRecord, live_sha256: str, live_blob_sha256: str) -> Recovery:
    """What to do about a migration a hook left behind, from what the database files hold now.

    Args:
        record: the record the interrupted migration left.
        live_sha256: the digest of GARM's database file now ("" when there is none).
        live_blob_sha256: the digest of GARM's file-object database now ("" when none).
    """
    live = (live_sha256, live_blob_sha256)
    if live == (record.original_sha256, record.original_blob_sha256):
        return Recovery.UNTOUCHED
    if record.migrated_sha256 and live == (record.migrated_sha256, record.migrated_blob_sha256):
        return Recovery.COMPLETED
    return Recovery.RESTORE


def record_path(paths: Paths) -> Path:
    """Where the record lives (the charm's own state, root only)."""
    return paths.charm_state / "migration-in-progress.json"


def read_record(paths: Paths) -> MigrationRecord | None:
    """The record an interrupted migration left, or None.

    Raises:
        WorkloadError: a record is there but unreadable (the status says so; nothing starts).
    """
    found = read_regular(record_path(paths))
    if found is None:
        return None
    return MigrationRecord.from_json(found[0])


def write_record(paths: Paths, record: MigrationRecord) -> None:
    """Write the record durably: the file in one rename, then its directory synced."""
    path = record_path(paths)
    write_atomic(path, record.to_json(), RECORD_MODE)
    sync_directory(path.parent)


def clear_record(paths: Paths) -> None:
    """Drop the record (durably): the migration is over, one way or the other."""
    path = record_path(paths)
    path.unlink(missing_ok=True)
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    """Make the renames and removals in `directory` durable (a crash cannot undo them)."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
