"""Backups are pruned to `backup-keep` after each new one, sparing what is still needed.

Real backups of a real SQLite file (`workload.backup`) on a temporary root; the charm's side
through `ops.testing` with the recording workload.
"""

from __future__ import annotations

import datetime
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from ops import testing

import unit.walks.maintenance as maintenance_walks
from unit.walks.maintenance import Unit
from workload.backup import create_backup
from workload.backup_retention import note_restored, prune
from workload.host import Paths
from workload.migration_record import MigrationRecord, write_record

unit = maintenance_walks.unit

__all__ = ["unit"]  # the fixture
NOW = datetime.datetime(2026, 12, 1, 16, 0, tzinfo=datetime.UTC)
VERSION = "v0.2.1-96-gafda4e76"


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    """A machine root holding a GARM database."""
    root = Paths(tmp_path)
    root.data.mkdir(parents=True)
    with sqlite3.connect(root.sqlite_db) as connection:
        connection.execute("CREATE TABLE scale_sets (name TEXT)")
    return root


def backups_made(paths: Paths, count: int) -> list[str]:
    """`count` backups an hour apart, oldest first; their names."""
    names = [f"b{n}" for n in range(count)]
    for n, name in enumerate(names):
        create_backup(
            paths,
            name=name,
            garm_version=VERSION,
            passphrase_secret="secret:abc",
            now=NOW + datetime.timedelta(hours=n),
        )
    return names


def kept(paths: Paths) -> list[str]:
    """The backups on disk, by name."""
    return sorted(p.name for p in (paths.charm_state / "backups").iterdir())


def test_the_oldest_beyond_keep_go(paths: Paths):
    """Arrange: five backups. Act: prune to 3 after the newest. Assert: the two oldest go."""
    names = backups_made(paths, 5)

    removed = prune(paths, 3, just_made=names[-1])

    assert removed == ["b0", "b1"]
    assert kept(paths) == ["b2", "b3", "b4"]


def test_age_is_the_manifests_not_the_name(paths: Paths):
    """Arrange: backups whose names sort against their age (`z` oldest). Act: prune to 1.

    Assert: the newest by its manifest stays.
    """
    for n, name in enumerate(["z", "a"]):
        create_backup(
            paths,
            name=name,
            garm_version=VERSION,
            passphrase_secret="",
            now=NOW + datetime.timedelta(hours=n),
        )

    prune(paths, 1, just_made="a")

    assert kept(paths) == ["a"]


def test_what_a_migration_or_the_last_restore_needs_is_never_pruned(paths: Paths):
    """Arrange: five backups; a migration record naming b0, the last restore b1.

    Act: prune to 2 after b4. Assert: b0 and b1 stay (beyond the count); b2 goes, b3 and b4 stay.
    """
    names = backups_made(paths, 5)
    # The record as the migration itself writes it, so the two stay in step.
    write_record(paths, MigrationRecord("b0", "v0.2.1", "v0.2.2"))
    note_restored(paths, "b1")

    removed = prune(paths, 2, just_made=names[-1])

    assert removed == ["b2"]
    assert kept(paths) == ["b0", "b1", "b3", "b4"]


def test_a_backup_being_built_and_a_symlink_are_not_backups(paths: Paths, tmp_path: Path):
    """Arrange: two backups, a `.x.partial` directory and a symlink to a directory elsewhere.

    Act: prune to 1. Assert: only the older backup goes; the partial and the link's target stay.
    """
    backups_made(paths, 2)
    root = paths.charm_state / "backups"
    (root / ".x.partial").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "link").symlink_to(elsewhere)

    removed = prune(paths, 1, just_made="b1")

    assert removed == ["b0"]
    assert (root / ".x.partial").is_dir()
    assert elsewhere.is_dir()


def test_the_backup_just_made_stays_even_if_its_clock_was_behind(paths: Paths):
    """Arrange: two backups, the one just made stamped older than the other. Act: prune to 1.

    Assert: the one just made stays; the other goes.
    """
    create_backup(paths, name="new", garm_version=VERSION, passphrase_secret="", now=NOW)
    create_backup(
        paths,
        name="old",
        garm_version=VERSION,
        passphrase_secret="",
        now=NOW + datetime.timedelta(days=1),
    )

    assert prune(paths, 1, just_made="new") == ["old"]


def test_create_backup_prunes_to_backup_keep_and_says_which(unit: Unit):
    """Arrange: three backups the operator took; backup-keep=2.

    Act: create-backup. Assert: the oldest is gone, the new one and the newer old one stay;
    the action's output names the pruned one.
    """
    for n in range(3):
        unit.workload.create_backup(
            f"old-{n}", passphrase_secret="", now=NOW + datetime.timedelta(hours=n)
        )
    state = unit.state()
    config: dict[str, Any] = {**unit.config, "backup-keep": 2}

    unit.ctx.run(
        unit.ctx.on.action("create-backup", params={"name": "new"}),
        testing.State(
            leader=True,
            resources=state.resources,
            config=config,
            secrets=state.secrets,
            relations=state.relations,
        ),
    )

    assert unit.ctx.action_results is not None
    assert unit.ctx.action_results["pruned"] == "old-0,old-1"
    assert sorted(unit.workload.backups) == ["new", "old-2"]
