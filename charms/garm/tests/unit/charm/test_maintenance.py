"""Maintenance mode, backups and upgrades through ops.testing (ADR 0024, ADR 0025).

GARM is the simulator (bootstrapped by an earlier leader, with other controller URLs, so an
unpaused reconcile writes to it); the workload is the recording double.
"""

from __future__ import annotations

import dataclasses
import datetime
import errno
from pathlib import Path
from typing import Any

import ops
import pytest
from ops import testing
from scenario.state import _Event  # pyright: ignore[reportPrivateUsage]

import unit.walks.maintenance as maintenance_walks
from doubles.database_publication import database_relation, database_secret
from doubles.workload_double import MACHINE_PATHS
from relations.peers.keys import PAUSED_BY_KEY, PAUSED_SINCE_KEY
from relations.peers.lease import Lease
from unit.walks.maintenance import NEWER, PAUSED_AT, Unit, backup
from workload.backup import BackupError, BackupManifest
from workload.host import WorkloadError
from workload.migration import MigrationError
from workload.migration_record import MigrationRecord, Recovery

unit = maintenance_walks.unit

RECONCILE_TICK = _Event("reconcile_tick")


def peers_of(state: testing.State) -> dict[str, str]:
    """The peer relation's application data after a hook."""
    return dict(state.get_relations("garm-peers")[0].local_app_data)


def paused_data(by: str = "operator") -> dict[str, str]:
    """Peer app data holding a pause taken at `PAUSED_AT`."""
    return {PAUSED_SINCE_KEY: PAUSED_AT, PAUSED_BY_KEY: by}


# Maintenance mode ---------------------------------------------------------------------------


def test_pause_records_itself_in_peer_data_and_shows_since_when(unit: Unit):
    """Arrange: a running leader. Act: pause.

    Assert: the pause is in the peer app data, the status says since when and what to do,
    the tick runs on (it renews the lease), and nothing was installed, applied, stopped or
    written to GARM.
    """
    out = unit.ctx.run(unit.ctx.on.action("pause"), unit.state())

    data = peers_of(out)
    assert data[PAUSED_BY_KEY] == "operator"
    since = datetime.datetime.fromisoformat(data[PAUSED_SINCE_KEY])
    assert unit.ctx.action_results == {"paused-since": since.isoformat(), "paused-by": "operator"}
    assert out.unit_status == ops.MaintenanceStatus(
        f"paused since {since:%Y-%m-%d %H:%M} UTC: "
        "the charm leaves GARM alone; run resume when done"
    )
    assert len(out.unit_status.message) <= 120
    assert "OnUnitInactiveSec=60s" in unit.machine.tick.paths.timer_file.read_text()
    assert unit.workload.calls == []
    assert unit.garm.write_count() == 0


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(lambda ctx: ctx.on.update_status(), id="update-status"),
        pytest.param(lambda ctx: RECONCILE_TICK, id="reconcile-tick"),
        pytest.param(lambda ctx: ctx.on.config_changed(), id="config-changed"),
        pytest.param(lambda ctx: ctx.on.leader_elected(), id="new-leader"),
        pytest.param(lambda ctx: ctx.on.upgrade_charm(), id="upgrade-charm"),
    ],
)
def test_while_paused_no_hook_touches_garm(unit: Unit, event: Any):
    """Arrange: a pause in the peer app data (a new leader reads the same). Act: a hook.

    Assert: no install, apply, start or stop; no write (nor login) to GARM; the status is the
    pause's; the tick stays, for the lease (ADR 0042).
    """
    out = unit.ctx.run(event(unit.ctx), unit.state(paused_data()))

    assert unit.workload.calls == []
    assert unit.garm.calls() == []
    assert out.unit_status == ops.MaintenanceStatus(
        "paused since 2026-11-30 09:15 UTC: the charm leaves GARM alone; run resume when done"
    )
    assert unit.machine.tick.paths.timer_file.exists()


def test_without_a_pause_the_same_hook_writes_to_garm(unit: Unit):
    """Arrange: the same leader, not paused. Act: update-status.

    Assert: the reconcile applies the config and corrects GARM's controller URLs (a write):
    the contrast that makes the paused test meaningful.
    """
    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    assert "apply" in unit.workload.calls
    assert unit.garm.write_count() > 0
    assert out.unit_status == ops.ActiveStatus()


def test_a_second_pause_keeps_the_first_time(unit: Unit):
    """Arrange: paused at PAUSED_AT. Act: pause again. Assert: the time is unchanged."""
    out = unit.ctx.run(unit.ctx.on.action("pause"), unit.state(paused_data()))

    assert peers_of(out)[PAUSED_SINCE_KEY] == PAUSED_AT


def test_resume_clears_the_pause_and_reconciles_at_once(unit: Unit):
    """Arrange: paused, GARM stopped by hand. Act: resume.

    Assert: the pause is gone from the peer data, GARM is applied (started) and the status
    returned is Active; the tick is back.
    """
    unit.workload.running = False

    out = unit.ctx.run(unit.ctx.on.action("resume"), unit.state(paused_data()))

    assert PAUSED_SINCE_KEY not in peers_of(out)
    assert "apply" in unit.workload.calls
    assert unit.workload.running
    assert unit.ctx.action_results is not None
    assert unit.ctx.action_results["status"] == "active: "
    assert unit.machine.tick.paths.timer_file.exists()


@pytest.mark.parametrize("action", ["pause", "resume", "create-backup"])
def test_maintenance_actions_run_on_the_leader_only(unit: Unit, action: str):
    """Arrange: a non-leader. Act: the action. Assert: it fails naming garm/leader."""
    with pytest.raises(testing.ActionFailed, match="garm/leader"):
        unit.ctx.run(unit.ctx.on.action(action), unit.state(leader=False))


# Backups ------------------------------------------------------------------------------------


def passphrase_ref(unit: Unit) -> str:
    """The passphrase secret's reference as the charm reads it."""
    state = unit.state()
    secret = next(s for s in state.secrets if s.label == "garm-db-passphrase")
    return secret.id


def test_create_backup_names_the_copy_its_checksum_version_and_passphrase_secret(unit: Unit):
    """Arrange: a leader on SQLite. Act: create-backup name=before-change.

    Assert: the workload made that backup; the results give its path, the GARM version and
    the passphrase secret's reference; GARM was not stopped.
    """
    state = unit.state()
    secret = next(s for s in state.secrets if s.label == "garm-db-passphrase")

    unit.ctx.run(unit.ctx.on.action("create-backup", params={"name": "before-change"}), state)

    results = unit.ctx.action_results or {}
    assert results["name"] == "before-change"
    assert results["path"] == "/var/lib/garm-charm/backups/before-change/garm.db"
    assert results["garm-version"] == NEWER
    assert results["passphrase-secret"] == secret.id
    assert "stop" not in unit.workload.calls


def test_create_backup_needs_no_peer_relation(unit: Unit):
    """Arrange: a leader on SQLite whose peer relation is not up yet (a unit's first hooks).

    Act: create-backup name=early. Assert: the backup is made (it uses nothing of the peers).
    """
    state = unit.state()
    alone = dataclasses.replace(
        state, relations={r for r in state.relations if not isinstance(r, testing.PeerRelation)}
    )

    unit.ctx.run(unit.ctx.on.action("create-backup", params={"name": "early"}), alone)

    assert "create_backup early" in unit.workload.calls


@pytest.mark.parametrize("action", ["create-backup", "restore-backup"])
def test_backups_are_refused_on_postgresql(unit: Unit, action: str):
    """Arrange: the database relation. Act: the action.

    Assert: it fails naming the database charm's backups; nothing stopped or copied.
    """
    relation = database_relation(database_secret("garm", "pw"))
    state = unit.state(None, relation)

    with pytest.raises(testing.ActionFailed, match="database charm's backups"):
        unit.ctx.run(unit.ctx.on.action(action, params={"name": "x"}), state)
    assert unit.workload.calls == []


def test_restore_stops_swaps_starts_and_resumes(unit: Unit):
    """Arrange: a backup made with this app's passphrase secret. Act: restore-backup.

    Assert: GARM stopped, then the backup swapped in, then GARM applied (started); no pause
    is left and the status is Active.
    """
    state = unit.state()
    secret = next(s for s in state.secrets if s.label == "garm-db-passphrase")
    unit.workload.backups["b1"] = backup("b1", secret=secret.id)

    out = unit.ctx.run(unit.ctx.on.action("restore-backup", params={"name": "b1"}), state)

    calls = unit.workload.calls
    assert calls.index("stop") < calls.index("restore_backup b1") < calls.index("apply")
    assert PAUSED_SINCE_KEY not in peers_of(out)
    assert out.unit_status == ops.ActiveStatus()
    assert unit.ctx.action_results == {
        "restored": "b1",
        "status": "active: ",
        "unknown-runners": "[]",
        "unknown-runners-busy": 0,
    }


def test_restore_under_an_operators_pause_leaves_garm_stopped(unit: Unit):
    """Arrange: the operator paused; a backup. Act: restore-backup.

    Assert: swapped in, but GARM not started and the operator's pause kept.
    """
    state = unit.state(paused_data())
    secret = next(s for s in state.secrets if s.label == "garm-db-passphrase")
    unit.workload.backups["b1"] = backup("b1", secret=secret.id)

    out = unit.ctx.run(unit.ctx.on.action("restore-backup", params={"name": "b1"}), state)

    assert unit.workload.calls == ["stop", "restore_backup b1"]
    assert peers_of(out)[PAUSED_SINCE_KEY] == PAUSED_AT
    assert isinstance(out.unit_status, ops.MaintenanceStatus)


@pytest.mark.parametrize(
    ("version", "secret", "why"),
    [
        pytest.param("v0.3.0", None, "newer than the installed", id="newer-garm"),
        pytest.param(NEWER, "secret:other", "needs the passphrase in secret", id="other-secret"),
    ],
)
def test_restore_refuses_before_touching_anything(
    unit: Unit, version: str, secret: str | None, why: str
):
    """Arrange: a backup from a newer GARM, or one needing another passphrase secret.

    Act: restore-backup. Assert: it fails saying why; GARM not stopped, nothing swapped, no
    pause left.
    """
    state = unit.state()
    own = next(s for s in state.secrets if s.label == "garm-db-passphrase").id
    unit.workload.backups["b1"] = backup("b1", version, secret or own)

    with pytest.raises(testing.ActionFailed, match=why):
        unit.ctx.run(unit.ctx.on.action("restore-backup", params={"name": "b1"}), state)
    assert unit.workload.calls == []


def test_a_failed_swap_keeps_garm_stopped_and_paused(unit: Unit, monkeypatch: pytest.MonkeyPatch):
    """Arrange: the swap fails. Act: restore-backup.

    Assert: the action fails saying GARM is stopped and to run resume; the pause stays (by
    restore-backup) so no hook starts GARM on a half-restored machine.
    """
    state = unit.state()
    own = next(s for s in state.secrets if s.label == "garm-db-passphrase").id
    unit.workload.backups["b1"] = backup("b1", secret=own)

    def fail(manifest: BackupManifest) -> None:
        raise BackupError("could not swap the database in: No space left on device")

    monkeypatch.setattr(unit.workload, "restore_backup", fail)

    with pytest.raises(testing.ActionFailed, match="run resume"):
        unit.ctx.run(unit.ctx.on.action("restore-backup", params={"name": "b1"}), state)
    assert "apply" not in unit.workload.calls


# Upgrades -----------------------------------------------------------------------------------


def test_restoring_a_pre_upgrade_backup_goes_back_to_the_older_garm(unit: Unit):
    """Arrange: the newer GARM ran; v0.2.1 is attached again; v0.2.1's pre-upgrade backup.

    Act: restore-backup. Assert: the database is v0.2.1's again, so v0.2.1 starts: Active.
    """
    unit.workload.last_ran_version = NEWER
    unit.workload.garm_version = "v0.2.1"
    state = unit.state()
    own = next(s for s in state.secrets if s.label == "garm-db-passphrase").id
    unit.workload.backups["pre"] = backup("pre", "v0.2.1", own)

    out = unit.ctx.run(unit.ctx.on.action("restore-backup", params={"name": "pre"}), state)

    assert unit.workload.last_ran_version == "v0.2.1"
    assert "apply" in unit.workload.calls
    assert out.unit_status == ops.ActiveStatus()


def test_a_newer_binary_is_backed_up_before_it_runs(unit: Unit):
    """Arrange: v0.2.1 last ran; the newer binary is installed. Act: update-status.

    Assert: a pre-upgrade backup is taken before GARM is applied (restarted on the new
    binary); the recorded version is the new one; Active.
    """
    unit.workload.last_ran_version = "v0.2.1"

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    name = f"create_backup pre-upgrade-v0.2.1-{NEWER}"
    assert unit.workload.calls.index(name) < unit.workload.calls.index("apply")
    assert unit.workload.last_ran_version == NEWER
    assert out.unit_status == ops.ActiveStatus()


def test_a_downgrade_is_refused_naming_both_versions(unit: Unit):
    """Arrange: the newer GARM last ran; v0.2.1 is installed. Act: update-status.

    Assert: Blocked naming both versions; GARM not applied (the old process keeps running),
    no call to GARM's write API.
    """
    unit.workload.last_ran_version = NEWER
    unit.workload.installed_binary = NEWER
    unit.workload.garm_version = "v0.2.1"

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    assert out.unit_status == ops.BlockedStatus(
        f"downgrade refused: GARM v0.2.1 is older than {NEWER}, which ran last; attach that "
        "garm-binary again"
    )
    assert unit.workload.installed_binary == NEWER, "systemd would start the older binary"
    assert "apply" not in unit.workload.calls
    assert unit.garm.write_count() == 0


def test_a_failed_migration_leaves_the_database_and_blocks_naming_the_backup(unit: Unit):
    """Arrange: v0.2.1 last ran; the newer GARM's migration of the copy fails. Act: update-status.

    Assert: GARM stopped, backed up, migration tried, the recovery finds GARM's file untouched
    (nothing restored); Blocked naming the backup and saying to attach v0.2.1 again; GARM not
    started; v0.2.1 still the database's version.
    """
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.migration_error = MigrationError("GARM's migration failed: foreign key")

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    name = f"pre-upgrade-v0.2.1-{NEWER}"
    assert unit.workload.calls == [
        "install",
        "stop",
        f"create_backup {name}",
        "prune_backups 10",
        "migrate_database",
        "stop",
    ]
    assert out.unit_status == ops.BlockedStatus(
        f"GARM upgrade failed; database unchanged (backup {name}): attach v0.2.1 again"
    )
    assert unit.workload.last_ran_version == "v0.2.1"


@pytest.mark.parametrize(
    "failure",
    [
        MigrationError("GARM's migration failed: foreign key"),
        OSError(errno.EAGAIN, "Resource temporarily unavailable"),
        RuntimeError("a bug"),
    ],
    ids=["migration-error", "fork-failed", "anything-else"],
)
def test_a_migration_failing_mid_swap_puts_the_backup_back(unit: Unit, failure: Exception):
    """Arrange: v0.2.1 last ran; the migration fails half way through its swap, with any error.

    Act: update-status. Assert: the backup is put back; Blocked naming it; GARM not started.
    """
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.migration_error = failure
    unit.workload.migration_failure = Recovery.RESTORE

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    name = f"pre-upgrade-v0.2.1-{NEWER}"
    assert unit.workload.calls[-3:] == ["migrate_database", "stop", f"restore_backup {name}"]
    assert out.unit_status == ops.BlockedStatus(
        f"GARM upgrade failed; backup {name} restored: attach v0.2.1 again"
    )
    assert "apply" not in unit.workload.calls


def test_a_migration_that_cannot_even_write_its_record_blocks(unit: Unit):
    """Arrange: v0.2.1 last ran; the disk is full, so the migration's record is not written.

    Act: update-status. Assert: Blocked naming the backup, database unchanged; GARM not
    started on a database no migration reached, v0.2.1 still its version.
    """
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.migration_error = OSError(errno.ENOSPC, "No space left on device")
    unit.workload.migration_failure = None

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    name = f"pre-upgrade-v0.2.1-{NEWER}"
    assert out.unit_status == ops.BlockedStatus(
        f"GARM upgrade failed; database unchanged (backup {name}): attach v0.2.1 again"
    )
    assert "apply" not in unit.workload.calls
    assert unit.workload.last_ran_version == "v0.2.1"


class Interrupted(BaseException):
    """Stands for KeyboardInterrupt or SystemExit (which pytest itself would act on)."""


def test_an_interrupted_migration_is_settled_before_the_hook_dies(unit: Unit):
    """Arrange: v0.2.1 last ran; the migration is interrupted mid-swap (a BaseException).

    Act: update-status. Assert: the hook fails (the interrupt goes on), but first the backup
    was put back and the record settled: nothing is left for the next hook.
    """
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.migration_error = Interrupted()
    unit.workload.migration_failure = Recovery.RESTORE

    with pytest.raises(Interrupted):
        unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    assert unit.workload.calls[-2:] == ["stop", f"restore_backup pre-upgrade-v0.2.1-{NEWER}"]
    assert unit.workload.migration_left is None
    assert "apply" not in unit.workload.calls


def test_a_killed_migration_is_settled_first_by_the_next_hook(unit: Unit):
    """Arrange: a hook was killed mid-swap: its record is left, the database neither file.

    Act: update-status. Assert: before anything else touches GARM the backup is put back;
    Blocked naming it; GARM not started, no new backup taken.
    """
    name = f"pre-upgrade-v0.2.1-{NEWER}"
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.backups[name] = backup(name, "v0.2.1")
    unit.workload.migration_left = (Recovery.RESTORE, MigrationRecord(name, "v0.2.1", NEWER))

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    assert unit.workload.calls == ["install", "stop", f"restore_backup {name}"]
    assert out.unit_status == ops.BlockedStatus(
        f"GARM upgrade interrupted; backup {name} restored: attach v0.2.1 again"
    )


def test_a_migration_killed_after_its_swap_is_finished_by_the_next_hook(unit: Unit):
    """Arrange: a hook was killed after swapping the migrated copy in, before recording it.

    Act: update-status. Assert: the newer version is recorded, no second backup, no second
    migration; GARM started on the migrated database: Active.
    """
    name = f"pre-upgrade-v0.2.1-{NEWER}"
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.backups[name] = backup(name, "v0.2.1")
    unit.workload.migration_left = (Recovery.COMPLETED, MigrationRecord(name, "v0.2.1", NEWER))

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    assert unit.workload.last_ran_version == NEWER
    assert not [c for c in unit.workload.calls if c.startswith(("create_backup", "migrate"))]
    assert out.unit_status == ops.ActiveStatus()


def test_a_start_deferred_after_the_migration_never_backs_up_the_new_schema_as_old(unit: Unit):
    """Arrange: v0.2.1 last ran; the hook that migrates cannot start GARM (lease unwritable).

    Act: update-status twice, the second with the lease writable again.
    Assert: one backup only, labelled v0.2.1 (what it holds); the second hook does not take
    the migrated database for a v0.2.1 one: no second backup or migration; Active.
    """
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.lease.error = WorkloadError("cannot write GARM's lease (No space left)")
    first = unit.ctx.run(unit.ctx.on.update_status(), unit.state())
    unit.workload.lease.error = None

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    assert first.unit_status.name == "blocked"
    assert [m.garm_version for m in unit.workload.backups.values()] == ["v0.2.1"]
    assert unit.workload.calls.count("migrate_database") == 1
    assert out.unit_status == ops.ActiveStatus()


def test_a_retried_upgrade_reuses_the_backup_its_failed_migration_put_back(unit: Unit):
    """Arrange: v0.2.1 last ran; the migration fails mid-swap. Act: update-status twice.

    Assert: one backup, taken by the first hook; the second restores that same one.
    """
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.migration_error = MigrationError("GARM's migration failed: foreign key")
    unit.workload.migration_failure = Recovery.RESTORE

    unit.ctx.run(unit.ctx.on.update_status(), unit.state())
    unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    name = f"pre-upgrade-v0.2.1-{NEWER}"
    creates = [c for c in unit.workload.calls if c.startswith("create_backup")]
    restores = [c for c in unit.workload.calls if c.startswith("restore_backup")]
    assert creates == [f"create_backup {name}"]
    assert restores == [f"restore_backup {name}"] * 2


def test_an_older_backup_of_the_same_upgrade_is_never_put_back(unit: Unit):
    """Arrange: an older pre-upgrade backup of these versions; the migration fails mid-swap.

    The operator went back after that earlier attempt, and GARM changed the database since.

    Act: update-status.
    Assert: a new backup is taken under a time-stamped name and that one is put back, not the
    old one, which would lose what GARM did since.
    """
    name = f"pre-upgrade-v0.2.1-{NEWER}"
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.backups[name] = dataclasses.replace(backup(name, "v0.2.1"), sha256="a" * 64)
    unit.workload.database_sha256 = "b" * 64
    unit.workload.migration_error = MigrationError("GARM's migration failed: foreign key")
    unit.workload.migration_failure = Recovery.RESTORE

    unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    (created,) = [c for c in unit.workload.calls if c.startswith("create_backup")]
    (restored,) = [c for c in unit.workload.calls if c.startswith("restore_backup")]
    assert created.startswith(f"create_backup {name}-")
    assert restored == created.replace("create_backup", "restore_backup")


def test_a_failed_migration_whose_backup_cannot_be_put_back_says_so(unit: Unit):
    """Arrange: the migration fails mid-swap, and so does putting the backup back.

    Act: update-status twice. Assert: Blocked saying to run restore-backup, never "restored";
    the record stays, so the second hook tries again and GARM is never started.
    """
    unit.workload.last_ran_version = "v0.2.1"
    unit.workload.migration_error = MigrationError("GARM's migration failed: foreign key")
    unit.workload.migration_failure = Recovery.RESTORE
    unit.workload.restore_error = BackupError("the swap failed")

    unit.ctx.run(unit.ctx.on.update_status(), unit.state())
    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    assert out.unit_status == ops.BlockedStatus(
        "an unfinished migration is not undone (the swap failed): run restore-backup"
    )
    assert unit.workload.calls.count("restore_backup pre-upgrade-v0.2.1-" + NEWER) == 2
    assert "apply" not in unit.workload.calls


def test_rotate_credentials_is_refused_while_paused(unit: Unit):
    """Arrange: paused at PAUSED_AT. Act: rotate-credentials with a new admin password.

    Assert: the action fails saying to resume first; GARM was neither called nor restarted and
    the secrets keep their revisions.
    """
    state = unit.state(paused_data())

    with pytest.raises(testing.ActionFailed, match="run resume first"):
        unit.ctx.run(
            unit.ctx.on.action("rotate-credentials", params={"admin-password": True}), state
        )

    assert unit.workload.calls == []
    assert unit.garm.calls() == []


def test_refresh_runners_is_refused_while_paused(unit: Unit):
    """Arrange: paused at PAUSED_AT. Act: refresh-runners.

    Assert: the action fails saying to resume first; GARM was neither called nor changed.
    """
    state = unit.state(paused_data())

    with pytest.raises(testing.ActionFailed, match="run resume first"):
        unit.ctx.run(unit.ctx.on.action("refresh-runners"), state)

    assert unit.workload.calls == []
    assert unit.garm.calls() == []


# A full disk ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("full", "needed"),
    [
        (MACHINE_PATHS.backend, "7 B"),
        (MACHINE_PATHS.garm_version, "6 B"),
        (MACHINE_PATHS.config, "4 KiB"),
    ],
    ids=["backend-record", "version-record", "garm-config"],
)
def test_a_full_disk_is_a_blocked_status_naming_the_path_and_the_lease_is_renewed(
    unit: Unit, full: Path, needed: str
):
    """Arrange: the lease about to end; the disk full for one file the reconcile writes.

    Act: update-status.
    Assert: no traceback: Blocked naming the file and the space to free; the hook's other work
    completed: the renewed lease is in the peer data Juju commits, the tick scheduled.
    """
    ending = Lease("garm/0", datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=1))
    unit.workload.garm_version = "v0.2.1"
    unit.workload.backend = "" if full == MACHINE_PATHS.backend else "sqlite3"
    unit.workload.full_disk = frozenset({full})

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state(ending.as_app_data()))

    assert out.unit_status.name == "blocked"
    assert out.unit_status.message.endswith(
        f"disk full writing {full}: free at least {needed} there"
    )
    renewed = Lease.from_app_data(peers_of(out))
    assert renewed is not None
    assert renewed.until > ending.until
    assert unit.machine.tick.paths.timer_file.exists()


def test_a_full_disk_for_the_metrics_token_is_a_status_not_a_crash(unit: Unit):
    """Arrange: COS related (the scrape needs a token); the token's file cannot be written.

    Act: update-status. Assert: Blocked naming the token's path and the space to free.
    """
    unit.workload.full_disk = frozenset({MACHINE_PATHS.metrics_token})
    cos = testing.Relation("cos-agent", remote_app_name="grafana-agent")

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state(None, cos))

    assert out.unit_status.name == "blocked"
    assert out.unit_status.message.startswith(f"disk full writing {MACHINE_PATHS.metrics_token}")


def test_a_tick_file_that_cannot_be_written_is_a_blocked_status(unit: Unit):
    """Arrange: a file where the tick's unit directory must go (every write under it fails).

    Act: update-status. Assert: the reconcile completes; Blocked naming the tick's path.
    """
    units = unit.machine.tick.paths.timer_file.parent
    units.parent.mkdir(parents=True, exist_ok=True)
    units.write_text("")

    out = unit.ctx.run(unit.ctx.on.update_status(), unit.state())

    assert out.unit_status.name == "blocked"
    assert out.unit_status.message.startswith("cannot write ")
    assert "apply" in unit.workload.calls
