"""Backups of a real SQLite file, version order, upgrade steps and the pause's data (pure)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest

import charm_status
from relations.peers.pause import Maintenance, cleared
from workload.backup import (
    BackupError,
    BackupManifest,
    create_backup,
    matching_backup,
    read_backup,
    restore_backup,
    restore_problem,
)
from workload.host import COMMAND_TIMEOUT_SECONDS, CommandResult, Paths
from workload.machine import Workload
from workload.migration import MigrationError, migrate_on_copy
from workload.upgrade import Step, upgrade_step
from workload.version import version_order

NOW = datetime.datetime(2026, 12, 1, 16, 0, tzinfo=datetime.UTC)
NEWER = "v0.2.1-96-gafda4e76"


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    """A machine root holding a GARM database in WAL mode with one row, kept open."""
    root = Paths(tmp_path)
    root.data.mkdir(parents=True)
    return root


def garm_db(paths: Paths, rows: list[str]) -> sqlite3.Connection:
    """GARM's database with `rows`, its connection left open as a running GARM's would be."""
    connection = sqlite3.connect(paths.sqlite_db)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE IF NOT EXISTS scale_sets (name TEXT)")
    connection.executemany("INSERT INTO scale_sets VALUES (?)", [(row,) for row in rows])
    connection.commit()
    return connection


def names_in(database: Path) -> list[str]:
    """The scale-set names a database holds."""
    with sqlite3.connect(database) as connection:
        return [row[0] for row in connection.execute("SELECT name FROM scale_sets ORDER BY 1")]


def test_an_online_backup_is_consistent_root_only_and_described(paths: Paths):
    """Arrange: a live database in WAL mode (rows not yet checkpointed). Act: create_backup.

    Assert: the copy holds every committed row; directory 0700, files 0600; the manifest
    has its sha256, the version and the passphrase secret's reference.
    """
    live = garm_db(paths, ["small-1", "large-1"])

    manifest = create_backup(
        paths, name="b1", garm_version=NEWER, passphrase_secret="secret:abc", now=NOW
    )
    live.close()

    directory = paths.charm_state / "backups" / "b1"
    copy = directory / "garm.db"
    assert names_in(copy) == ["large-1", "small-1"]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((paths.charm_state / "backups").stat().st_mode) == 0o700
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert stat.S_IMODE((directory / "manifest.json").stat().st_mode) == 0o600
    written = json.loads((directory / "manifest.json").read_text())
    assert written["sha256"] == hashlib.sha256(copy.read_bytes()).hexdigest() == manifest.sha256
    assert written["garm_version"] == NEWER
    assert written["passphrase_secret"] == "secret:abc"
    assert written["created"] == "2026-12-01T16:00:00+00:00"


@pytest.mark.parametrize("name", ["../escape", "a/b", "", ".hidden", "x" * 200])
def test_a_backup_name_cannot_leave_the_backup_directory(paths: Paths, name: str):
    """Arrange: a database. Act: create_backup with a bad name. Assert: refused, nothing made."""
    garm_db(paths, ["small-1"]).close()

    with pytest.raises(BackupError, match="not allowed"):
        create_backup(paths, name=name, garm_version=NEWER, passphrase_secret="", now=NOW)
    assert not (paths.charm_state / "backups").exists()


def test_a_backup_never_overwrites_another(paths: Paths):
    """Arrange: backup b1 exists. Act: create b1 again. Assert: refused; the first unchanged."""
    garm_db(paths, ["small-1"]).close()
    first = create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)

    with pytest.raises(BackupError, match="exists already"):
        create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)
    assert read_backup(paths, "b1") == first


def test_only_a_backup_holding_the_database_as_it_is_matches(paths: Paths):
    """Arrange: backups `pre` and `pre-later` of one database, and `other`.

    Act: matching_backup("pre") as taken; after restoring `pre-later`; after GARM changed the
    database; with `pre-later` restored again and a journal not yet checkpointed.

    Assert: none as taken (SQLite's online copy is not the file byte for byte); `pre-later`
    once restored (a restore makes the database the backup's file); none once GARM changed it
    or while a journal holds more; `other` never.
    """
    garm_db(paths, ["small-1"]).close()
    for name in ("pre", "pre-later", "other"):
        create_backup(paths, name=name, garm_version=NEWER, passphrase_secret="", now=NOW)

    as_taken = matching_backup(paths, "pre")
    restore_backup(paths, read_backup(paths, "pre-later"), uid=-1, gid=-1)
    restored = matching_backup(paths, "pre")
    garm_db(paths, ["small-2"]).close()
    changed = matching_backup(paths, "pre")
    restore_backup(paths, read_backup(paths, "pre-later"), uid=-1, gid=-1)
    paths.sqlite_db.with_name("garm.db-wal").write_bytes(b"pending")
    journal = matching_backup(paths, "pre")

    assert as_taken is None
    assert restored is not None
    assert restored.name == "pre-later"
    assert changed is None
    assert journal is None


def test_a_failed_backup_leaves_nothing_so_the_same_name_is_retried(paths: Paths):
    """Arrange: the blob database is damaged, so its copy fails after garm.db's succeeded.

    Act: create the pre-upgrade backup; then mend the blob database, leave a stale partial as
    an interrupted hook would, and retry as the charm does (read_backup, else create_backup).
    Assert: the failure leaves no backup of that name and no partial; the retry makes it,
    and the stale partial's content is not in it.
    """
    name = f"pre-upgrade-v0.2.1-{NEWER}"
    garm_db(paths, ["small-1"]).close()
    blob = paths.data / "blob-garm.db"
    blob.write_bytes(b"not a database")
    backups = paths.charm_state / "backups"

    with pytest.raises(BackupError, match="SQLite could not copy"):
        create_backup(paths, name=name, garm_version=NEWER, passphrase_secret="", now=NOW)
    with pytest.raises(BackupError, match="no backup called"):
        read_backup(paths, name)
    assert sorted(backups.iterdir()) == []

    blob.unlink()
    with contextlib.closing(sqlite3.connect(blob)) as connection:
        connection.executescript("CREATE TABLE file_objects (name TEXT);")
    (backups / f".{name}.partial").mkdir()
    (backups / f".{name}.partial" / "stale").write_bytes(b"from an interrupted hook")
    try:
        retried = read_backup(paths, name)
    except BackupError:
        retried = create_backup(
            paths, name=name, garm_version=NEWER, passphrase_secret="", now=NOW
        )

    assert read_backup(paths, name) == retried
    assert retried.blob_sha256
    assert sorted(path.name for path in backups.iterdir()) == [name]
    assert not (backups / name / "stale").exists()


def test_a_damaged_backup_is_not_read(paths: Paths):
    """Arrange: a backup whose database changed on disk. Act: read_backup. Assert: refused."""
    garm_db(paths, ["small-1"]).close()
    create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)
    copy = paths.charm_state / "backups" / "b1" / "garm.db"
    copy.write_bytes(copy.read_bytes() + b"x")

    with pytest.raises(BackupError, match="does not match its sha256"):
        read_backup(paths, "b1")


def test_restore_swaps_the_backup_in_and_drops_the_old_journal(paths: Paths):
    """Arrange: a backup with one row; then GARM adds a row and leaves a WAL file.

    Act: restore_backup. Assert: the database holds the backup's rows only, with mode 0600;
    no -wal/-shm file of the old database is left to be replayed, nor set aside.
    """
    garm_db(paths, ["small-1"]).close()
    manifest = create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)
    live = garm_db(paths, ["small-2"])
    live.execute("PRAGMA wal_autocheckpoint=0")
    paths.sqlite_db.with_name("garm.db-wal").write_bytes(b"stale journal")

    restore_backup(paths, read_backup(paths, "b1"), uid=-1, gid=-1)
    live.close()

    assert not paths.sqlite_db.with_name("garm.db-wal").exists()
    assert [path.name for path in paths.data.iterdir() if path.name.startswith(".")] == []
    assert names_in(paths.sqlite_db) == ["small-1"]
    assert stat.S_IMODE(paths.sqlite_db.stat().st_mode) == 0o600
    assert manifest.name == "b1"


def test_a_failed_swap_leaves_the_old_database_its_journal(
    paths: Paths, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: a backup; GARM adds a row that is in the WAL only; the rename over garm.db fails.

    Act: restore_backup. Assert: BackupError; the old database, opened again, still has the
    row from its WAL; no aside or temporary file is left beside it.
    """
    garm_db(paths, ["small-1"]).close()
    create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)
    live = garm_db(paths, [])
    live.execute("PRAGMA wal_autocheckpoint=0")
    live.execute("INSERT INTO scale_sets VALUES ('small-2')")
    live.commit()
    wal = paths.sqlite_db.with_name("garm.db-wal")
    journal = wal.read_bytes()
    replace = os.replace

    def failing_over_the_database(source: str | Path, target: str | Path) -> None:
        if Path(target) == paths.sqlite_db:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        replace(source, target)

    monkeypatch.setattr(os, "replace", failing_over_the_database)
    with pytest.raises(BackupError, match=r"could not swap garm\.db in"):
        restore_backup(paths, read_backup(paths, "b1"), uid=-1, gid=-1)
    monkeypatch.undo()

    assert wal.read_bytes() == journal
    assert sorted(path.name for path in paths.data.iterdir()) == [
        "garm.db",
        "garm.db-shm",
        "garm.db-wal",
    ]
    assert names_in(paths.sqlite_db) == ["small-1", "small-2"]
    live.close()


@pytest.mark.parametrize(
    ("backup", "installed", "refused"),
    [
        ("v0.2.1", "v0.2.1", False),
        ("v0.2.1", NEWER, False),
        (NEWER, "v0.2.1", True),
        ("v0.0.0-unknown", "v0.0.0-unknown", False),
        ("v0.0.0-unknown", NEWER, True),
    ],
)
def test_restore_refuses_a_backup_from_a_newer_garm(backup: str, installed: str, refused: bool):
    """Arrange: a backup's version and the installed one. Act: restore_problem.

    Assert: refused exactly when the backup is newer, or the versions cannot be compared and
    differ.
    """
    manifest = BackupManifest("b1", "2026-12-01T16:00:00+00:00", backup, "0" * 64, 1, "")

    assert (restore_problem(manifest, installed) is not None) == refused


def test_versions_order_as_garm_releases_and_builds_do():
    """Arrange: GARM version strings. Act: version_order. Assert: their release order."""
    ordered = ["v0.1.6", "v0.2.0-rc1", "v0.2.0", "v0.2.1", NEWER, "v0.2.1-120-g0123abc", "v0.3.0"]

    keys = [version_order(version) for version in ordered]

    assert keys == sorted(keys)  # pyright: ignore[reportArgumentType]
    assert len(set(keys)) == len(keys)
    assert version_order("v0.0.0-unknown") is None
    assert version_order("") is None


@pytest.mark.parametrize(
    ("last_ran", "installed", "step"),
    [
        ("", NEWER, Step.SAME),
        (NEWER, NEWER, Step.SAME),
        ("v0.2.1", NEWER, Step.UPGRADE),
        (NEWER, "v0.2.1", Step.REFUSED),
        ("v0.1.6", NEWER, Step.REFUSED),
        ("v0.1.6", "v0.2.1", Step.UPGRADE),
        ("v0.0.0-unknown", NEWER, Step.UPGRADE),
    ],
)
def test_upgrade_steps(last_ran: str, installed: str, step: Step):
    """Arrange: the version that last ran and the installed one. Act: upgrade_step, worded.

    Assert: same, upgrade (with a backup name), or refused (a downgrade, or skipping v0.2.1).
    """
    decision = upgrade_step(last_ran, installed)
    message = charm_status.upgrade_refusal(decision)

    assert decision.step is step
    if step is Step.UPGRADE:
        assert decision.backup_name.startswith("pre-upgrade-")
    if step is Step.REFUSED:
        assert installed in message
        assert last_ran in message
        assert len(message) <= 120


def test_skipping_v021_names_it():
    """Arrange: a v0.1.6 database, a newer binary. Act: upgrade_step, worded.

    Assert: says v0.2.1 first.
    """
    decision = upgrade_step("v0.1.6", NEWER)

    assert "garm-binary v0.2.1 first" in charm_status.upgrade_refusal(decision)


def test_a_pause_survives_a_round_trip_and_an_unreadable_time():
    """Arrange: a pause. Act: to app data and back; a mangled time; cleared.

    Assert: the same pause; a mangled time still pauses; cleared data reads as no pause.
    """
    pause = Maintenance(NOW, "restore-backup")

    assert Maintenance.from_app_data(pause.as_app_data()) == pause
    mangled = Maintenance.from_app_data({"maintenance-since": "yesterday"})
    assert mangled is not None
    assert mangled.by == "operator"
    assert Maintenance.from_app_data(cleared()) is None
    assert len(pause.status_message()) <= 120


# The offline migration ------------------------------------------------------------------------

GARM_V021_SCHEMA = """
CREATE TABLE scale_sets (id integer PRIMARY KEY AUTOINCREMENT, name text);
CREATE TABLE tags (id text PRIMARY KEY, name text);
CREATE TABLE scaleset_tags (scale_set_id integer, tag_id text,
  PRIMARY KEY (scale_set_id, tag_id),
  FOREIGN KEY (scale_set_id) REFERENCES scale_sets(id) ON DELETE CASCADE,
  FOREIGN KEY (tag_id) REFERENCES tags(id) ON DELETE CASCADE);
CREATE TABLE instances (id text PRIMARY KEY, name text, scale_set_fk_id integer,
  FOREIGN KEY (scale_set_fk_id) REFERENCES scale_sets(id));
CREATE TABLE instance_status_updates (id integer PRIMARY KEY, instance_id text,
  FOREIGN KEY (instance_id) REFERENCES instances(id) ON DELETE CASCADE);
CREATE TABLE users (id text PRIMARY KEY);
INSERT INTO users VALUES ('admin');
INSERT INTO scale_sets VALUES (1, 'small-ec32c2e5');
INSERT INTO tags VALUES ('t1', 'linux'), ('t2', 'x64');
INSERT INTO scaleset_tags VALUES (1, 't1'), (1, 't2');
INSERT INTO instances VALUES ('i1', 'garm-ncs8pujp6oct', 1);
INSERT INTO instance_status_updates VALUES (1, 'i1'), (2, 'i1');
"""
# What the newer GARM's migration does to `scale_sets` (GORM on SQLite, foreign keys on): copy,
# drop, rename. The drop fails while a runner points at a scale set and cascades to its labels.
REBUILD_SCALE_SETS = """
PRAGMA foreign_keys = ON;
DROP TABLE IF EXISTS scale_sets__temp;
CREATE TABLE scale_sets__temp (id integer PRIMARY KEY AUTOINCREMENT, name text, proxy_id integer);
INSERT INTO scale_sets__temp (id, name) SELECT id, name FROM scale_sets;
DROP TABLE scale_sets;
ALTER TABLE scale_sets__temp RENAME TO scale_sets;
"""


@dataclasses.dataclass
class NewerGarm:
    """A runner standing for `runuser -u garm -- garm admin list`: runs GARM's migration."""

    paths: Paths
    script: str = REBUILD_SCALE_SETS
    seen: list[list[str]] = dataclasses.field(default_factory=list[list[str]])

    def __call__(
        self, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS
    ) -> CommandResult:
        """Run the migration on the config's database; fail as GARM does on an SQLite error."""
        self.seen.append(list(argv))
        database = self.paths.sqlite_db
        if "--config" in argv:
            config = tomllib.loads(Path(argv[list(argv).index("--config") + 1]).read_text())
            database = config["database"]["sqlite3"]["db_file"]
        connection = sqlite3.connect(database)
        try:
            connection.executescript(self.script)
        except sqlite3.Error as error:
            return CommandResult(1, "", f"Error: error running auto migrate: {error}")
        finally:
            connection.close()
        return CommandResult(0, "admin")


def v021_database(paths: Paths) -> None:
    """v0.2.1's database as GARM left it, and the config GARM runs with (naming it)."""
    with contextlib.closing(sqlite3.connect(paths.sqlite_db)) as connection:
        connection.executescript(GARM_V021_SCHEMA)
    paths.etc.mkdir(parents=True, exist_ok=True)
    paths.config.write_text(
        f'[database]\nbackend = "sqlite3"\n[database.sqlite3]\ndb_file = "{paths.sqlite_db}"\n'
    )


def migrate(paths: Paths, run: NewerGarm) -> int:
    """migrate_on_copy from v0.2.1 to the newer GARM, as the test's own user."""
    return migrate_on_copy(
        paths,
        run,
        backup_name="pre",
        from_version="v0.2.1",
        to_version=NEWER,
        ids=(os.getuid(), os.getgid()),
    )


def table_rows(paths: Paths, query: str) -> list[tuple[object, ...]]:
    """What a query finds in the database."""
    with contextlib.closing(sqlite3.connect(paths.sqlite_db)) as connection:
        return connection.execute(query).fetchall()


def test_the_real_garm_rebuild_fails_or_drops_labels_without_the_set_aside(paths: Paths):
    """Arrange: a v0.2.1 database with a runner. Act: GARM's rebuild as it is, twice.

    Assert: with the runner it fails (foreign key); without it the labels are gone: why the
    charm sets rows aside.
    """
    with contextlib.closing(sqlite3.connect(paths.sqlite_db)) as connection:
        connection.executescript(GARM_V021_SCHEMA)
    run = NewerGarm(paths)

    assert run(["garm"]).returncode == 1
    with contextlib.closing(sqlite3.connect(paths.sqlite_db)) as connection:
        connection.executescript("DELETE FROM instance_status_updates; DELETE FROM instances;")
    assert run(["garm"]).returncode == 0
    assert table_rows(paths, "SELECT * FROM scaleset_tags") == []


def test_migration_keeps_runners_and_labels(paths: Paths):
    """Arrange: a v0.2.1 database with a scale set, its labels, a runner and its updates.

    Act: migrate_on_copy with GARM's rebuild. Assert: `garm admin list` ran as GARM's user
    on a copy; the schema is the new one; every row is back, references intact; the newer
    version is recorded as the database's (so a later hook never backs it up as v0.2.1's); no
    record or copy is left behind.
    """
    v021_database(paths)
    run = NewerGarm(paths)

    kept = migrate(paths, run)

    assert kept == 1
    assert run.seen[0][:4] == ["runuser", "-u", "garm", "--"]
    assert run.seen[0][5:7] == ["admin", "list"]
    assert "proxy_id" in [row[1] for row in table_rows(paths, "PRAGMA table_info(scale_sets)")]
    assert table_rows(paths, "SELECT * FROM scaleset_tags ORDER BY 2") == [(1, "t1"), (1, "t2")]
    assert table_rows(paths, "SELECT id, scale_set_fk_id FROM instances") == [("i1", 1)]
    assert len(table_rows(paths, "SELECT * FROM instance_status_updates")) == 2
    assert table_rows(paths, "PRAGMA foreign_key_check") == []
    assert str(paths.sqlite_db) not in run.seen[0]
    assert paths.garm_version.read_text() == NEWER
    assert not (paths.charm_state / "migration-in-progress.json").exists()
    assert not (paths.data / ".migration").exists()


def test_a_migration_that_loses_rows_elsewhere_fails(paths: Paths):
    """Arrange: a migration that also deletes the admin user. Act: migrate_on_copy.

    Assert: MigrationError naming the table that lost rows; GARM's file is untouched.
    """
    v021_database(paths)
    before = paths.sqlite_db.read_bytes()
    run = NewerGarm(paths, "DELETE FROM users;")

    with pytest.raises(MigrationError, match="lost rows of users"):
        migrate(paths, run)
    assert paths.sqlite_db.read_bytes() == before


def test_a_failed_migration_says_what_garm_said(paths: Paths):
    """Arrange: GARM's migration fails. Act: migrate. Assert: MigrationError with its words."""
    v021_database(paths)
    run = NewerGarm(paths, "DROP TABLE no_such_table;")

    with pytest.raises(MigrationError, match="no such table: no_such_table"):
        migrate(paths, run)


def test_the_file_object_database_goes_along(paths: Paths):
    """Arrange: blob-garm.db beside garm.db (builds after v0.2.1), backed up, then changed.

    Act: read_backup, restore_backup. Assert: the manifest has its sha256; the restore brings
    the backed-up blob database back; a damaged blob copy is refused.
    """
    garm_db(paths, ["small-1"]).close()
    blob = paths.data / "blob-garm.db"
    with contextlib.closing(sqlite3.connect(blob)) as connection:
        connection.executescript(
            "CREATE TABLE file_objects (name TEXT); INSERT INTO file_objects VALUES ('a');"
        )
    manifest = create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)
    with contextlib.closing(sqlite3.connect(blob)) as connection:
        connection.executescript("INSERT INTO file_objects VALUES ('b');")

    restore_backup(paths, read_backup(paths, "b1"), uid=-1, gid=-1)

    assert manifest.blob_sha256
    assert table_rows_of(blob, "SELECT name FROM file_objects") == [("a",)]
    copy = paths.charm_state / "backups" / "b1" / "blob-garm.db"
    copy.write_bytes(copy.read_bytes() + b"x")
    with pytest.raises(BackupError, match="does not match"):
        read_backup(paths, "b1")


def table_rows_of(database: Path, query: str) -> list[tuple[object, ...]]:
    """What a query finds in a database file."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        return connection.execute(query).fetchall()


def test_a_backup_copied_back_under_another_name_restores_from_where_it_is(paths: Paths):
    """Arrange: backup b1 copied to b1-copy (as an operator copies one back), b1 removed.

    Act: read_backup("b1-copy"), restore_backup. Assert: the manifest read is b1-copy's (the
    directory checked), and the restore brings its database back from there.
    """
    live = garm_db(paths, ["small-1"])
    create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)
    live.execute("INSERT INTO scale_sets VALUES ('later')")
    live.commit()
    live.close()
    backups = paths.charm_state / "backups"
    shutil.copytree(backups / "b1", backups / "b1-copy")
    shutil.rmtree(backups / "b1")

    manifest = read_backup(paths, "b1-copy")
    restore_backup(paths, manifest, uid=-1, gid=-1)

    assert manifest.name == "b1-copy"
    assert names_in(paths.sqlite_db) == ["small-1"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", 7),
        ("created", None),
        ("garm_version", 1),
        ("sha256", 0),
        ("sha256", "not-a-digest"),
        ("size", "4096"),
        ("size", True),
        ("size", -1),
        ("passphrase_secret", ["secret:x"]),
        ("blob_sha256", 1),
        ("blob_sha256", "abc"),
    ],
)
def test_a_hand_edited_manifest_with_wrong_types_is_refused_naming_the_field(
    paths: Paths, field: str, value: object
):
    """Arrange: a backup whose manifest has `field` set to a value of the wrong type.

    Act: read_backup. Assert: BackupError naming the field (the action fails before it stops
    GARM), never a crash later on.
    """
    garm_db(paths, ["small-1"]).close()
    create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)
    manifest_file = paths.charm_state / "backups" / "b1" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest[field] = value
    manifest_file.write_text(json.dumps(manifest))

    with pytest.raises(BackupError, match=f"no valid '{field}'"):
        read_backup(paths, "b1")


@pytest.mark.parametrize("content", ["[]", "not json", '"a string"'])
def test_a_manifest_that_is_no_json_object_is_refused(paths: Paths, content: str):
    """Arrange: a manifest that is no JSON object. Act: read_backup. Assert: BackupError."""
    garm_db(paths, ["small-1"]).close()
    create_backup(paths, name="b1", garm_version=NEWER, passphrase_secret="", now=NOW)
    (paths.charm_state / "backups" / "b1" / "manifest.json").write_text(content)

    with pytest.raises(BackupError, match="manifest of backup b1"):
        read_backup(paths, "b1")


def test_a_backup_is_labelled_with_the_schema_not_the_installed_binary(paths: Paths):
    """Arrange: v0.2.1 last ran on the database; the newer binary is installed, not yet run.

    Act: the workload's create_backup without a version (as create-backup does).
    Assert: labelled v0.2.1, the schema it holds; without a recorded version, the installed one.
    """
    garm_db(paths, ["small-1"]).close()
    paths.garm_binary.parent.mkdir(parents=True)
    paths.garm_binary.write_text("")

    def newer(argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS) -> CommandResult:
        return CommandResult(0, f"{NEWER}\n")

    work = Workload(paths.root, runner=newer, ids=lambda _: (os.getuid(), os.getgid()))
    unrecorded = work.create_backup("b0", passphrase_secret="", now=NOW)
    work.record_version("v0.2.1")

    labelled = work.create_backup("b1", passphrase_secret="", now=NOW)

    assert unrecorded.garm_version == NEWER
    assert labelled.garm_version == "v0.2.1"
