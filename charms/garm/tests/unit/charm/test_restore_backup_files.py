"""restore-backup through the charm on real backup files: the directory checked, typed manifests.

The workload double keeps its backups as real files under a temporary root (the workload's own
`backup` module reads, checks and restores them), so the action meets what an operator leaves
on disk: a backup copied back under another name, a manifest edited by hand.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest
from ops import testing

import charm
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from relations.peers.keys import PAUSED_SINCE_KEY
from relations.peers.lease import Lease
from unit.walks.charm import bootstrap_secrets, bootstrapped
from workload import backup
from workload.backup import BackupManifest
from workload.host import Paths

NOW = datetime.datetime(2026, 12, 2, 5, 0, tzinfo=datetime.UTC)


@dataclasses.dataclass
class FileBackups(RecordingWorkload):
    """The recording double, its backups real files under `root` (read and restored for real)."""

    root: Path = Path("/nonexistent")

    @property
    def paths(self) -> Paths:
        """The temporary machine's paths."""
        return Paths(self.root)

    def read_backup(self, name: str) -> BackupManifest:
        """The workload's own read: the manifest checked, the copy against its sha256."""
        return backup.read_backup(self.paths, name)

    def restore_backup(self, manifest: BackupManifest) -> None:
        """The workload's own restore; refused while GARM runs, as the workload does."""
        if self.running:
            raise backup.BackupError("GARM is still running: not restored")
        self.calls.append(f"restore_backup {manifest.name}")
        backup.restore_backup(self.paths, manifest, uid=-1, gid=-1)


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, garm: GarmSim) -> FileBackups:
    """A bootstrapped GARM's leader whose database is a real file with one scale set."""
    double = FileBackups(root=tmp_path / "root", installed=True, running=True)
    monkeypatch.setattr(charm, "Workload", lambda: double)
    bootstrapped(garm)
    double.paths.data.mkdir(parents=True)
    database(double.paths, ["before"])
    return double


def database(paths: Paths, names: list[str]) -> None:
    """GARM's database file holding these scale-set names only."""
    with contextlib.closing(sqlite3.connect(paths.sqlite_db)) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS scale_sets (name TEXT)")
        connection.execute("DELETE FROM scale_sets")
        connection.executemany("INSERT INTO scale_sets VALUES (?)", [(n,) for n in names])
        connection.commit()


def names(paths: Paths) -> list[str]:
    """The scale-set names GARM's database holds."""
    with contextlib.closing(sqlite3.connect(paths.sqlite_db)) as connection:
        return [row[0] for row in connection.execute("SELECT name FROM scale_sets")]


def leader_state(resources: frozenset[testing.Resource], config: dict[str, Any]) -> testing.State:
    """The leader holding the lease, with its peers and GARM's secrets."""
    lease = Lease("garm/0", datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1))
    peers = testing.PeerRelation("garm-peers", local_app_data=lease.as_app_data())
    return testing.State(
        leader=True,
        resources=resources,
        config=config,
        secrets=frozenset(bootstrap_secrets()),
        relations=frozenset({peers}),
    )


def passphrase(state: testing.State) -> str:
    """The passphrase secret's id, as a backup of this application records it."""
    return next(s for s in state.secrets if s.label == "garm-db-passphrase").id


def test_a_backup_copied_back_under_another_name_is_restored_from_where_it_is(
    ctx: testing.Context[charm.GarmCharm],
    files: FileBackups,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
):
    """Arrange: backup b1 taken, then copied to b1-copy and b1 removed; the database changed.

    Act: restore-backup name=b1-copy.
    Assert: restored from b1-copy (the directory checked): the database is the backup's again,
    and the action says so.
    """
    state = leader_state(resources, config)
    backup.create_backup(
        files.paths, name="b1", garm_version=files.garm_version,
        passphrase_secret=passphrase(state), now=NOW,
    )  # fmt: skip
    kept = files.paths.charm_state / "backups"
    shutil.copytree(kept / "b1", kept / "b1-copy")
    shutil.rmtree(kept / "b1")
    database(files.paths, ["after"])

    ctx.run(ctx.on.action("restore-backup", params={"name": "b1-copy"}), state)

    assert names(files.paths) == ["before"]
    assert ctx.action_results is not None
    assert ctx.action_results["restored"] == "b1-copy"


@pytest.mark.parametrize(
    ("field", "value"),
    [("garm_version", 1), ("passphrase_secret", None), ("name", ["b1"]), ("size", "big")],
)
def test_a_hand_edited_manifest_fails_the_action_before_garm_is_stopped(
    ctx: testing.Context[charm.GarmCharm],
    files: FileBackups,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    field: str,
    value: object,
):
    """Arrange: backup b1 whose manifest has `field` edited to a value of the wrong type.

    Act: restore-backup name=b1.
    Assert: the action fails naming the field; GARM was not stopped, nothing swapped, no pause
    taken: the database is as it was.
    """
    state = leader_state(resources, config)
    backup.create_backup(
        files.paths, name="b1", garm_version=files.garm_version,
        passphrase_secret=passphrase(state), now=NOW,
    )  # fmt: skip
    manifest_file = files.paths.charm_state / "backups" / "b1" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest[field] = value
    manifest_file.write_text(json.dumps(manifest))
    database(files.paths, ["after"])

    with pytest.raises(testing.ActionFailed, match=field) as failed:
        ctx.run(ctx.on.action("restore-backup", params={"name": "b1"}), state)

    assert "stop" not in files.calls
    assert files.running
    assert names(files.paths) == ["after"]
    after = cast("testing.State | None", failed.value.state)  # scenario's State, typed loosely
    assert after is not None
    assert PAUSED_SINCE_KEY not in after.get_relations("garm-peers")[0].local_app_data
