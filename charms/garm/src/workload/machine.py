"""GARM on this machine: the one object the charm drives (install, apply, stop, remove).

A facade: each job lives in its own module (docs/adr/0012-workload-split-one-job-per-module.md).
`releases` pins, downloads and verifies tarballs; `install` puts the user, directories and
binaries in place; `rendering` renders and writes what GARM runs with; `service` drives systemd
and restarts GARM only when that changed; `version` reads what the binary can do; `host` holds
the paths, commands and file primitives; `config` the values the charm hands in. No ops imports
anywhere below this module.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from workload import backup, backup_retention, backup_runners, migration, migration_record, service
from workload.config import GarmConfig, ProxyConfig, TlsFiles
from workload.host import (
    SYSTEM_USER,
    CommandError,
    IdLookup,
    Paths,
    Runner,
    lookup_ids,
    machine_arch,
    read_intact,
    read_text,
    remove_tree,
    run_command,
    write_atomic,
)
from workload.install import Installer, VersionCheck
from workload.lease import GarmLease
from workload.pending_password import PendingPasswordFile
from workload.releases import Fetcher, fetch_url
from workload.rendering import RenderedFile, render_files, rendered_provider_names, write_files
from workload.version import installed_version

METRICS_TOKEN_MODE = 0o600


class Workload:
    """GARM on this machine."""

    def __init__(
        self,
        root: Path = Path("/"),
        *,
        runner: Runner = run_command,
        fetcher: Fetcher = fetch_url,
        arch: str | None = None,
        ids: IdLookup = lookup_ids,
    ) -> None:
        self.paths = Paths(root)
        # The admin password a rotation is giving GARM, until a committed secret holds it.
        self.pending_admin_password = PendingPasswordFile.under(self.paths)
        # GARM runs here only while this unit holds the lease; a watchdog enforces it.
        self.lease = GarmLease(self.paths)
        self._run = runner
        self._installer = Installer(
            self.paths, run=runner, fetch=fetcher, arch=arch or machine_arch(), ids=ids
        )

    def install(
        self,
        garm_tarball: Path | None,
        provider_tarball: Path | None,
        proxy: ProxyConfig,
        refusal: VersionCheck | None = None,
    ) -> None:
        """Create the user and directories and install both binaries.

        Args:
            garm_tarball: the attached `garm-binary` resource, or None to download.
            provider_tarball: the attached `garm-provider-openstack` resource, or None.
            proxy: the model's proxy, used for downloads.
            refusal: why a new GARM binary's version must not be installed, or None.

        Raises:
            ResourceError: a tarball is missing, unverifiable or lacks its binary.
            VersionRefused: the new GARM binary was refused; the installed one stays.
            CommandError: creating the user or setting ownership failed.
        """
        self._installer.install(garm_tarball, provider_tarball, proxy, refusal)

    def is_installed(self) -> bool:
        """Whether both binaries are in place."""
        return self._installer.is_installed()

    def apply(self, config: GarmConfig) -> bool:
        """Render every file and (re)start GARM if anything it runs with changed.

        Returns:
            True when the service was started or restarted in this call.

        Raises:
            CommandError: systemd refused.
        """
        files = self.render_files(config)
        reread = write_files(files, config, self.paths, self._installer.garm_ids()[1])
        return service.restart_if_changed(
            self.paths,
            files,
            config.proxy,
            self._installer.installed_digests(),
            repaired=bool(reread),
        )

    def render_files(self, config: GarmConfig) -> dict[Path, RenderedFile]:
        """Every file the service reads: path -> (content, mode, owned by the garm user)."""
        return render_files(config, self.paths)

    def rendered_provider_names(self) -> frozenset[str]:
        """The providers whose files are on disk: what the last apply rendered or kept."""
        return rendered_provider_names(self.paths)

    def is_running(self) -> bool:
        """Whether systemd reports GARM active."""
        return service.is_running()

    def restart(self) -> None:
        """Restart GARM as it runs: its scale-set workers look their sets up at GitHub again.

        Raises:
            CommandError: systemd refused.
        """
        service.restart()

    def stop(self) -> bool:
        """Stop GARM (a standby unit, or before removal) and forget how it was started.

        Best effort, like removal: a failure is logged, and the forgotten fingerprint makes the
        next `apply` start GARM afresh. The lease goes first: were systemd to fail here, the
        lease watchdog still stops GARM.

        Returns:
            Whether GARM is seen stopped afterwards (systemd no longer reports it active).
        """
        self.lease.drop()
        return service.stop(self.paths)

    def remove(self) -> None:
        """Stop and disable GARM, remove its unit and every file holding a credential.

        `config.toml`, the environment file, the PostgreSQL CA, the TLS certificate and key, the
        metrics token and every provider's files go;
        GARM's data (`/var/lib/garm`, the SQLite database) stays on disk, encrypted with a
        passphrase that went with the Juju secrets. Best effort on systemd: a remove hook that
        failed there would leave the unit stuck in error.
        """
        service.remove(self.paths)
        self.lease.remove()
        for path in (
            self.paths.config,
            self.paths.environment,
            self.paths.postgresql_ca,
            self.paths.tls_certificate,
            self.paths.tls_private_key,
            self.paths.tls_ca,
            self.paths.metrics_token,
            self.paths.provider_dirs,
        ):
            remove_tree(path)

    def version(self) -> str:
        """GARM's version as `garm --version` prints it (e.g. "v0.2.1"); empty when unknown."""
        return installed_version(self.paths, self._run)

    def served_tls(self) -> TlsFiles | None:
        """The certificate chain, key and CA GARM serves now (as last applied), or None."""
        chain, key, ca = (
            read_text(path)
            for path in (self.paths.tls_certificate, self.paths.tls_private_key, self.paths.tls_ca)
        )
        if not (chain and key and ca):
            return None
        return TlsFiles(certificate_chain=chain, private_key=key, ca=ca)

    def recorded_backend(self) -> str:
        """The backend GARM last ran with ("sqlite3", "postgresql"), or "" if it never ran."""
        return read_text(self.paths.backend).strip()

    def reset_admin_password(self, username: str, password: str) -> None:
        """Set a GARM user's password in its database (`garm admin`, builds after v0.2.1).

        Runs as GARM's user, so files the database opens stay GARM's. The password is on the
        command line for the moment the command runs: `garm admin` takes it no other way.

        Raises:
            CommandError: the command failed; its output is not repeated (it may echo input).
        """
        result = self._run(
            [
                "runuser",
                "-u",
                SYSTEM_USER,
                "--",
                str(self.paths.garm_binary),
                "admin",
                "password-reset",
                username,
                "--new-password",
                password,
                "--config",
                str(self.paths.config),
            ]
        )
        if result.returncode != 0:
            raise CommandError(
                f"garm admin password-reset failed with exit status {result.returncode}"
            )

    def metrics_token(self) -> str:
        """The token the metrics scrape sends; empty when none was written."""
        # A token file someone loosened or replaced counts as none: a fresh one is written.
        token = read_intact(self.paths.metrics_token, METRICS_TOKEN_MODE)
        return (token or b"").decode(errors="replace").strip()

    def write_metrics_token(self, token: str) -> None:
        """Keep the scrape's token where its scrape job points (root only, 0600).

        Not a file GARM runs with: a new token never restarts GARM.
        """
        write_atomic(self.paths.metrics_token, token.encode(), METRICS_TOKEN_MODE)

    def record_backend(self, backend: str) -> None:
        """Remember which backend GARM now keeps its state in."""
        if self.recorded_backend() != backend:
            write_atomic(self.paths.backend, backend.encode(), 0o600)

    def has_sqlite_state(self) -> bool:
        """Whether a SQLite database with content exists."""
        path = self.paths.sqlite_db
        return path.is_file() and path.stat().st_size > 0

    # Backups and upgrades (docs/adr/0025-backups-and-upgrades.md) ---------------------------

    def create_backup(
        self,
        name: str,
        *,
        passphrase_secret: str,
        now: datetime.datetime,
        garm_version: str | None = None,
    ) -> backup.BackupManifest:
        """An online copy of GARM's SQLite database and its manifest, root only.

        Args:
            name: the backup's name.
            passphrase_secret: the reference of the passphrase's Juju secret.
            now: the time the backup is taken at.
            garm_version: the GARM whose schema the database holds; by default the one that
                last ran on it (recorded), else the installed one. A backup is labelled with
                its schema, never with a binary that has not migrated it yet.

        Raises:
            BackupError: no database, a bad or taken name, or SQLite failed.
        """
        return backup.create_backup(
            self.paths,
            name=name,
            garm_version=(self.recorded_version() or self.version())
            if garm_version is None
            else garm_version,
            passphrase_secret=passphrase_secret,
            now=now,
        )

    def read_backup(self, name: str) -> backup.BackupManifest:
        """The backup `name`'s manifest, its database checked against the sha256.

        Raises:
            BackupError: no such backup, or it does not match its manifest.
        """
        return backup.read_backup(self.paths, name)

    def backup_runners(self, manifest: backup.BackupManifest) -> frozenset[str]:
        """The names of the runners the backup's database holds (read-only).

        Raises:
            BackupError: the copy cannot be read as GARM's database.
        """
        return backup_runners.known_runners(self.paths, manifest)

    def matching_backup(self, prefix: str) -> backup.BackupManifest | None:
        """A backup named `prefix` (or `prefix-<suffix>`) holding GARM's database as it is now."""
        return backup.matching_backup(self.paths, prefix)

    def backup_exists(self, name: str) -> bool:
        """Whether anything is kept under the backup name `name` (whole or not)."""
        return backup.backup_dir(self.paths, name).exists()

    def restore_backup(self, manifest: backup.BackupManifest) -> None:
        """Swap the backup's database in for GARM's; GARM must be stopped (`stop`).

        Raises:
            BackupError: GARM still runs, or the swap failed (the old database stays).
        """
        if self.is_running():
            raise backup.BackupError("GARM is still running: not restored")
        uid, gid = self._installer.garm_ids()
        backup.restore_backup(self.paths, manifest, uid=uid, gid=gid)
        # The operator's choice of database supersedes a migration a hook left behind.
        migration_record.clear_record(self.paths)
        try:
            backup_retention.note_restored(self.paths, manifest.name)
        except OSError as error:
            raise backup.BackupError(
                f"restored, but could not note it (pruning may remove {manifest.name}): "
                f"{error.strerror}"
            ) from None

    def prune_backups(self, keep: int, *, just_made: str) -> list[str]:
        """Remove the oldest backups beyond `keep`, never one still needed; the names removed."""
        return backup_retention.prune(self.paths, keep, just_made=just_made)

    def backup_path(self, name: str) -> Path:
        """Where the backup `name` keeps its copy of the database."""
        return backup.backup_dir(self.paths, name) / backup.DATABASE_FILE

    def migrate_database(self, backup_name: str, from_version: str, to_version: str) -> int:
        """Let the installed (newer) GARM migrate a copy of its stopped database; swap it in.

        Args:
            backup_name: the pre-upgrade backup, put back by `recover_migration` if need be.
            from_version: the version whose schema the database holds.
            to_version: the installed version, recorded once the migrated copy is in.

        Returns:
            How many runners were set aside during the migration and put back.

        Raises:
            Exception: anything at all; the database is the old one or the migrated one, and
                `recover_migration` settles which (run it at once, and at the next hook).
        """
        return migration.migrate_on_copy(
            self.paths,
            self._run,
            backup_name=backup_name,
            from_version=from_version,
            to_version=to_version,
            ids=self._installer.garm_ids(),
        )

    def recover_migration(self) -> migration.Recovered | None:
        """Settle a migration a hook left behind (killed or failed); None when there is none.

        GARM is stopped first: it must not run on a database the charm may put back.

        Raises:
            WorkloadError: the backup could not be put back; nothing may start GARM.
        """
        if not migration_record.record_path(self.paths).exists():
            return None
        self.stop()
        if self.is_running():
            raise backup.BackupError("GARM is still running: an interrupted migration waits")
        return migration.recover(self.paths, self._installer.garm_ids())

    def recorded_version(self) -> str:
        """The GARM version that last ran on this machine's database, or "" if none did."""
        return read_text(self.paths.garm_version).strip()

    def record_version(self, version: str) -> None:
        """Remember the GARM version that now runs on (so has migrated) the database."""
        migration.record_version(self.paths, version)
