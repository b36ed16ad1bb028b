"""The record an interrupted migration leaves, and what the next hook decides from it (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workload.host import Paths, WorkloadError
from workload.migration_record import (
    MigrationRecord,
    Recovery,
    clear_record,
    decide,
    read_record,
    record_path,
    write_record,
)

OLD, OLD_BLOB, NEW, NEW_BLOB = "o" * 64, "", "n" * 64, "b" * 64
STARTED = MigrationRecord("pre", "v0.2.1", "v0.2.1-96-gafda4e76", OLD, OLD_BLOB)
CHECKED = MigrationRecord("pre", "v0.2.1", "v0.2.1-96-gafda4e76", OLD, OLD_BLOB, NEW, NEW_BLOB)


@pytest.mark.parametrize(
    ("record", "live", "outcome"),
    [
        (STARTED, (OLD, OLD_BLOB), Recovery.UNTOUCHED),
        (CHECKED, (OLD, OLD_BLOB), Recovery.UNTOUCHED),
        (CHECKED, (NEW, NEW_BLOB), Recovery.COMPLETED),
        (CHECKED, (OLD, NEW_BLOB), Recovery.RESTORE),
        (CHECKED, (NEW, ""), Recovery.RESTORE),
        (STARTED, (NEW, NEW_BLOB), Recovery.RESTORE),
        (STARTED, ("x" * 64, OLD_BLOB), Recovery.RESTORE),
        (CHECKED, ("", ""), Recovery.RESTORE),
    ],
    ids=[
        "killed-before-the-copy-was-checked",
        "killed-before-the-swap",
        "killed-after-the-swap",
        "killed-between-the-two-renames",
        "file-object-database-lost",
        "a-swap-the-record-does-not-know",
        "garm-opened-the-old-file-meanwhile",
        "database-gone",
    ],
)
def test_the_next_hook_keeps_the_old_finishes_the_whole_or_restores(
    record: MigrationRecord, live: tuple[str, str], outcome: Recovery
):
    """Arrange: a record and GARM's files as a killed hook left them. Act: decide.

    Assert: the files as found are kept, the whole migrated copy finished, anything else
    restored from the backup.
    """
    assert decide(record, *live) is outcome


def test_a_record_survives_a_round_trip_and_is_removed(tmp_path: Path):
    """Arrange: a checked record. Act: write, read, clear, read.

    Assert: the same record, then none; the file is root only (0600).
    """
    paths = Paths(tmp_path)

    write_record(paths, CHECKED)
    found = read_record(paths)
    mode = record_path(paths).stat().st_mode & 0o777
    clear_record(paths)

    assert found == CHECKED
    assert mode == 0o600
    assert read_record(paths) is None


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"[]",
        b'{"backup": 1}',
        b'{"backup": ""}',
        b'{"backup": "b", "to_version": []}',
    ],
)
def test_an_unreadable_record_is_an_error_not_a_crash(tmp_path: Path, content: bytes):
    """Arrange: a hand-edited or damaged record. Act: read it. Assert: WorkloadError."""
    paths = Paths(tmp_path)
    record_path(paths).parent.mkdir(parents=True)
    record_path(paths).write_bytes(content)

    with pytest.raises(WorkloadError, match="migration record"):
        read_record(paths)
