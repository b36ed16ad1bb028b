"""A recording double of workload.Workload's interface for charm tests."""

from __future__ import annotations

import dataclasses
import datetime
import errno
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from workload import backup
from workload.backup import BackupError, BackupManifest
from workload.config import GarmConfig, OpenStackProvider, ProxyConfig, TlsFiles
from workload.host import (
    CommandError,
    HostWriteError,
    Paths,
    ResourceError,
    VersionRefused,
    WorkloadError,
)
from workload.migration import Recovered
from workload.migration_record import MigrationRecord, Recovery

# The real Workload's paths on a machine (its default root), for the paths the double reports.
MACHINE_PATHS = Paths(Path("/"))


@dataclasses.dataclass
class KeptPasswordDouble:
    """The root-only pending-password file, in memory; it outlives a hook as the disk does."""

    password: str = ""
    keep_error: OSError | None = None

    def keep(self, password: str) -> None:
        """Keep it, or fail like a full disk when told to."""
        if self.keep_error is not None:
            raise self.keep_error
        self.password = password

    def read(self) -> str:
        """The kept password, or empty."""
        return self.password

    def forget(self) -> None:
        """Remove it."""
        self.password = ""


@dataclasses.dataclass
class LeaseDouble:
    """The lease file the watchdog reads, in memory; it outlives a hook as the disk does."""

    until: datetime.datetime | None = None
    error: WorkloadError | None = None

    def hold_until(self, end: datetime.datetime) -> None:
        """Write the lease's end, or fail like the disk or systemd when told to."""
        if self.error is not None:
            raise self.error
        self.until = end

    def end(self) -> datetime.datetime | None:
        """The lease's end, or None."""
        return self.until

    def drop(self) -> None:
        """No lease."""
        self.until = None


@dataclasses.dataclass
class RecordingWorkload:
    """Records what the charm asked of the workload and answers like a healthy machine."""

    install_error: ResourceError | None = None
    # A build past v0.2.1 by default: the pinned v0.2.1 has no PostgreSQL backend.
    garm_version: str = "v0.2.1-96-gafda4e76"
    sqlite_state: bool = False
    backend: str = ""
    installed: bool = False
    running: bool = False
    calls: list[str] = dataclasses.field(default_factory=list[str])
    installs: list[tuple[Path | None, Path | None, ProxyConfig]] = dataclasses.field(
        default_factory=list[tuple[Path | None, Path | None, ProxyConfig]]
    )
    applied: list[GarmConfig] = dataclasses.field(default_factory=list[GarmConfig])
    restarts: int = 0
    password_reset_error: CommandError | None = None
    on_password_reset: Callable[[str, str], None] | None = None
    # What each provider's files on disk were rendered from (kept ones stay as they were).
    provider_files: dict[str, OpenStackProvider] = dataclasses.field(
        default_factory=dict[str, OpenStackProvider]
    )
    # The metrics token the scrape reads, as the charm last wrote it.
    metrics_token_file: str = ""
    pending_admin_password: KeptPasswordDouble = dataclasses.field(
        default_factory=KeptPasswordDouble
    )
    lease: LeaseDouble = dataclasses.field(default_factory=LeaseDouble)
    # The GARM version that last ran on the database, and the backups taken, by name.
    last_ran_version: str = ""
    backups: dict[str, BackupManifest] = dataclasses.field(
        default_factory=dict[str, BackupManifest]
    )
    migration_error: BaseException | None = None
    # What a failed migration leaves for the recovery to find (the real one: GARM's file as it
    # was, or, failing mid-swap, neither file), and the record a killed hook left behind.
    migration_failure: Recovery | None = Recovery.UNTOUCHED  # None: no record (its write failed)
    migration_left: tuple[Recovery, MigrationRecord] | None = None
    # The version of the GARM binary in place (what systemd would start after a reboot).
    installed_binary: str = ""
    # The sha256 of GARM's database file: a backup copies it, a restore brings one back.
    database_sha256: str = "0" * 64
    restore_error: BackupError | None = None
    # The files whose write fails as on a full disk (the real workload's HostWriteError).
    full_disk: frozenset[Path] = frozenset()

    # The runner names each backup's database holds, by backup name (none when absent).
    backup_runner_names: dict[str, frozenset[str]] = dataclasses.field(
        default_factory=dict[str, frozenset[str]]
    )
    # The backup the last restore put in place: pruning spares it.
    last_restored: str = ""
    # systemd fails to stop GARM: it keeps running after `stop`, as on a machine whose
    # `systemctl disable --now` failed.
    stop_fails: bool = False

    def install(
        self,
        garm_tarball: Path | None,
        provider_tarball: Path | None,
        proxy: ProxyConfig,
        refusal: Callable[[str], str | None] | None = None,
    ) -> None:
        """Record an install; fail like workload does when told to.

        A binary `refusal` refuses is not installed, as the workload does: `installed_binary`
        keeps the version that was there.
        """
        self.calls.append("install")
        self.installs.append((garm_tarball, provider_tarball, proxy))
        if self.install_error is not None:
            raise self.install_error
        reason = refusal(self.garm_version) if refusal is not None else None
        if reason is not None:
            raise VersionRefused(reason)
        self.installed = True
        self.installed_binary = self.garm_version

    def is_installed(self) -> bool:
        """Whether install succeeded before."""
        return self.installed

    def version(self) -> str:
        """GARM's version."""
        return self.garm_version if self.installed else ""

    def apply(self, config: GarmConfig) -> bool:
        """Record the config; restart only when what GARM runs with changed.

        Like the real workload, a provider going from rendered to kept changes nothing GARM
        reads: its files stay as they were rendered.
        """
        self.calls.append("apply")
        self._write(MACHINE_PATHS.config, 4096)
        before = (self.applied[-1] if self.applied else None, dict(self.provider_files))
        self.provider_files = {
            **{name: self.provider_files[name] for name in config.kept_only},
            **{provider.name: provider for provider in config.providers},
        }
        changed = (
            before[0] is None
            or _settings(before[0]) != _settings(config)
            or before[1] != self.provider_files
            or not self.running
        )
        self.applied.append(config)
        self.running = True
        self.restarts += changed
        return changed

    def rendered_provider_names(self) -> frozenset[str]:
        """The providers whose files the last apply left on disk."""
        return frozenset(self.provider_files)

    def restart(self) -> None:
        """Record a restart of GARM as it runs (its workers start again)."""
        self.calls.append("restart")
        self.restarts += 1

    def stop(self) -> bool:
        """Record a stop; the lease goes with it, as on the machine. Whether GARM stopped."""
        self.calls.append("stop")
        self.lease.drop()
        self.running = self.running and self.stop_fails
        return not self.running

    def remove(self) -> None:
        """Record a removal."""
        self.calls.append("remove")
        self.running = False

    def served_tls(self) -> TlsFiles | None:
        """The certificate the last apply gave GARM, or None."""
        return self.applied[-1].tls if self.applied else None

    def recorded_backend(self) -> str:
        """The backend GARM last ran with."""
        return self.backend

    def record_backend(self, backend: str) -> None:
        """Remember the backend."""
        if self.backend != backend:
            self._write(MACHINE_PATHS.backend, len(backend))
        self.backend = backend

    def reset_admin_password(self, username: str, password: str) -> None:
        """Record a password reset and hand it to `on_password_reset` (the GARM it changes)."""
        self.calls.append("reset_admin_password")
        if self.password_reset_error is not None:
            raise self.password_reset_error
        if self.on_password_reset is not None:
            self.on_password_reset(username, password)

    def metrics_token(self) -> str:
        """The token the metrics scrape sends."""
        return self.metrics_token_file

    def write_metrics_token(self, token: str) -> None:
        """Record the scrape's new token."""
        self.calls.append("write_metrics_token")
        self._write(MACHINE_PATHS.metrics_token, len(token))
        self.metrics_token_file = token

    def has_sqlite_state(self) -> bool:
        """Whether a SQLite database with content exists."""
        return self.sqlite_state

    def recorded_version(self) -> str:
        """The GARM version that last ran on the database."""
        return self.last_ran_version

    def record_version(self, version: str) -> None:
        """Remember the version now running."""
        if version and version != self.last_ran_version:
            self._write(MACHINE_PATHS.garm_version, len(version))
            self.last_ran_version = version

    def _write(self, path: Path, size: int) -> None:
        """Fail as the workload's write_atomic does on a full disk, for the files told."""
        if path in self.full_disk:
            raise HostWriteError(path, OSError(errno.ENOSPC, "No space left on device"), size)

    def create_backup(
        self,
        name: str,
        *,
        passphrase_secret: str,
        now: datetime.datetime,
        garm_version: str | None = None,
    ) -> BackupManifest:
        """Record a backup, refusing a taken name as the workload does."""
        self.calls.append(f"create_backup {name}")
        if name in self.backups:
            raise BackupError(f"a backup called {name} exists already: choose another name")
        manifest = BackupManifest(
            name,
            now.isoformat(),
            (self.last_ran_version or self.version()) if garm_version is None else garm_version,
            self.database_sha256,
            4096,
            passphrase_secret,
        )
        self.backups[name] = manifest
        return manifest

    def matching_backup(self, prefix: str) -> BackupManifest | None:
        """The newest backup of that name (or `<prefix>-...`) holding the database as it is."""
        names = sorted(n for n in self.backups if n == prefix or n.startswith(f"{prefix}-"))
        return next(
            (
                self.backups[n]
                for n in reversed(names)
                if self.backups[n].sha256 == self.database_sha256
            ),
            None,
        )

    def backup_exists(self, name: str) -> bool:
        """Whether a backup of that name is kept."""
        return name in self.backups

    def read_backup(self, name: str) -> BackupManifest:
        """A recorded backup, or the workload's error."""
        if name not in self.backups:
            raise BackupError(f"no backup called {name}")
        return self.backups[name]

    def restore_backup(self, manifest: BackupManifest) -> None:
        """Record a restore; refuse while GARM runs, as the workload does."""
        if self.running:
            raise BackupError("GARM is still running: not restored")
        self.calls.append(f"restore_backup {manifest.name}")
        if self.restore_error is not None:
            raise self.restore_error
        self.database_sha256 = manifest.sha256
        self.last_restored = manifest.name

    def prune_backups(self, keep: int, *, just_made: str) -> list[str]:
        """Drop the oldest backups beyond `keep`; the one just made and the last restored stay."""
        self.calls.append(f"prune_backups {keep}")
        others = sorted(
            (name for name in self.backups if name != just_made),
            key=lambda name: (self.backups[name].created, name),
        )
        newest = others[max(0, len(others) - (keep - 1)) :] if keep > 1 else []
        removed = [name for name in others if name not in {*newest, self.last_restored}]
        for name in removed:
            del self.backups[name]
        return removed

    def migrate_database(self, backup_name: str, from_version: str, to_version: str) -> int:
        """Record a migration on a copy; fail like the workload when told to.

        As the workload does, a migration that succeeds records the new version as the
        database's, and one that fails leaves its record for `recover_migration`.
        """
        self.calls.append("migrate_database")
        record = MigrationRecord(backup_name, from_version, to_version)
        if self.migration_error is not None:
            if self.migration_failure is not None:
                self.migration_left = (self.migration_failure, record)
            raise self.migration_error
        self.database_sha256 = hashlib.sha256(
            f"{self.database_sha256}{to_version}".encode()
        ).hexdigest()
        self.last_ran_version = to_version
        return 0

    def recover_migration(self) -> Recovered | None:
        """Settle what a migration left behind as the workload does (GARM stopped first)."""
        if self.migration_left is None:
            return None
        outcome, record = self.migration_left
        self.stop()
        if outcome is Recovery.RESTORE:
            self.restore_backup(self.read_backup(record.backup))
        elif outcome is Recovery.COMPLETED:
            self.last_ran_version = record.to_version
        self.migration_left = None
        return Recovered(outcome, record)

    def backup_runners(self, manifest: BackupManifest) -> frozenset[str]:
        """The runner names the backup holds, as the test set them."""
        return self.backup_runner_names.get(manifest.name, frozenset())

    def backup_path(self, name: str) -> Path:
        """Where the workload keeps the backup's database, on the machine (root `/`)."""
        return backup.backup_dir(MACHINE_PATHS, name) / backup.DATABASE_FILE


def _settings(config: GarmConfig) -> GarmConfig:
    """Everything but the providers, which the double compares by their files."""
    return dataclasses.replace(config, providers=(), kept_providers=())


def this_users_ids(name: str) -> tuple[int, int]:
    """The test's own uid and gid for any user name: tests must not need a real `garm` user."""
    return os.getuid(), os.getgid()
