"""One holistic reconcile of this unit: install GARM, then stand by or run it.

Only the leader runs GARM (docs/adr/0003-leader-runs-garm.md). Its pass goes: secrets,
database, backend switch, hand-over (ADR 0005), render and start, bootstrap, metrics token,
GARM's objects, release of providers no scale set uses. Each step goes on (None) or ends the
pass with the status `charm_status` words. Everything is derived afresh from what the hook read
once (`CharmState`), the relations, Juju secrets and what GARM answers, so a repeated pass
changes nothing; the one thing remembered is the last valid debug-ssh relay (ADR 0014).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import ops
from ops.framework import BoundStoredState

import charm_status
from charm_config import POSTGRESQL, SQLITE, CharmConfig, CharmState, backend_switch_problem
from garm_api import (
    GarmApiError,
    GarmClient,
    GarmError,
    GarmNotInitialised,
    GarmUnreachable,
    WireFormatError,
)
from juju_secrets import JujuSecretStore
from reconcile.bootstrap import (
    DB_PASSPHRASE_LABEL,
    BootstrapSecrets,
    ControllerUrls,
    admin_content,
    bootstrap,
    ensure_secrets,
    wait_until_serving,
)
from reconcile.charm_metrics import CompletedPass
from reconcile.credential_rotation import settle_admin_password
from reconcile.desired_state import DesiredState
from reconcile.garm_objects import ObjectsOutcome, reconcile_objects
from reconcile.github.dropped_verdict import sightings_from_json, sightings_to_json
from reconcile.github.http import Quotas
from reconcile.github.offline_runners import CHECK_EVERY as OFFLINE_CHECK_EVERY
from reconcile.github.scalesets import CHECK_EVERY, RESTART_EVERY, is_due
from reconcile.github.view import from_json as views_from_json
from reconcile.github.view import to_json as views_to_json
from reconcile.metrics_token import token_is_current
from reconcile.provider_retention import retained_providers, retention_message
from reconcile.restore_check import RestoreCheck, check_restore, unknown_check
from reconcile.teardown import TeardownReport, teardown, teardown_pass
from relations import cos_agent, debug_ssh
from relations.certificates import LOCAL_URL_HOST, Certificates
from relations.configurators import read_configurators
from relations.database import Database, DatabaseState
from relations.debug_ssh import DebugSsh, read_debug_ssh
from relations.peers import PeerData
from relations.peers import lease as fencing
from relations.peers.handover import decide
from scaleset_reconciler import ReconcileReport, ReconcileSettings, dropped_and_kept
from scaleset_reconciler.drain_clock import Hold
from workload.backup import BackupManifest
from workload.config import GarmConfig, ProxyConfig, TlsFiles
from workload.host import WorkloadError
from workload.machine import Workload
from workload.migration import Recovered
from workload.migration_record import MigrationRecord, Recovery
from workload.releases import GARM_RESOURCE, PROVIDER_RESOURCE
from workload.upgrade import Step, upgrade_step
from workload.version import garm_built_after_v0_2_1

logger = logging.getLogger(__name__)

CONFIGURATOR_RELATION: Final = "garm-configurator"


class GarmReconciler:
    """This unit's reconcile: the charm calls it with the `CharmState` its hook read once."""

    def __init__(
        self,
        charm: ops.CharmBase,
        stored: BoundStoredState,
        *,
        peers: PeerData,
        workload: Workload,
        secrets: JujuSecretStore,
        database: Database,
        certificates: Certificates,
        address: Callable[[], str],
        clock: Callable[[], datetime.datetime],
    ) -> None:
        """Take what the pass drives.

        Args:
            charm: the charm (its unit, app, model, relations and resources).
            stored: where the last valid debug-ssh relay is kept between hooks.
            peers: the peer relation's databags (the lease, the claim, the pause, ...).
            workload: GARM on this machine.
            secrets: GARM's bootstrap secrets in Juju.
            database: the database relation.
            certificates: the certificates relation (GARM's TLS files).
            address: the unit's address (a hook tool call: asked only when needed).
            clock: the time every decision is taken at.
        """
        self._charm = charm
        self._stored = stored
        self._peers = peers
        self._workload = workload
        self._secrets = secrets
        self._database = database
        self._certificates = certificates
        self._address = address
        self._clock = clock
        # Set by rotate-credentials: this hook wrote the admin password, and Juju commits that
        # revision only when the hook ends, so the password kept on disk must stay until then.
        self.password_uncommitted = False
        # Whether this hook already published a renewed lease (`renew_lease`).
        self._lease_renewed = False
        # The last scale-set pass that completed in this hook, for the charm's metrics (ADR 0030).
        self.completed_pass: CompletedPass | None = None
        # Set by the charm while the teardown action holds the scale sets down (ADR 0036).
        self.teardown_since: datetime.datetime | None = None
        # The last scale-set pass's report in this hook, for an action's output (`resume`).
        self.last_report: ReconcileReport | None = None

    def stand_down(self, *, leader: bool = True) -> None:
        """First, whatever else fails: a unit that is not the leader must not keep GARM running.

        A non-leader also echoes the leader's claim: it stopped for good (ADR 0019). Only once
        GARM is seen stopped: the echo lets the new leader start GARM at once, so a failed
        `systemctl stop` says "running" instead, and the new leader waits for the lease to end
        (by when the watchdog has stopped GARM here, or the stop is retried at the next hook).
        """
        stopped = self._workload.stop()
        self._peers.say_running(not stopped, acknowledge_claim=stopped and not leader)

    def renew_lease(self) -> None:
        """First on the leader, whatever else fails: extend the lease it holds (ADR 0019).

        Hands the watchdog the committed end; a failure is logged, and the watchdog then stops
        GARM when that end passes unless a later hook renews.
        """
        if not self._peers.up:
            return
        me = self._charm.unit.name
        decision = fencing.renew(me, self._peers.committed_lease(), self._clock())
        if decision.publish is not None:
            self._peers.publish_lease(decision.publish)
            self._lease_renewed = True
        if decision.run_until is not None:
            try:
                self._workload.lease.hold_until(decision.run_until)
            except WorkloadError as error:
                logger.warning("GARM's lease not written (retried at the next hook): %s", error)

    def reconcile(self, state: CharmState) -> ops.StatusBase:
        """Install, then run GARM on the leader or stand by elsewhere; the unit's status."""
        self._open_api_port(state.config.port if state.leader else None)
        problem = self._install(state.proxy)
        if problem is not None:
            return problem
        version = self._workload.version()
        self._charm.unit.set_workload_version(version)
        if not state.leader:
            return charm_status.standing_by(self._database.state())
        return self._run_garm(state, version)

    def desired(self) -> DesiredState:
        """What the configurators ask for, with the debug-ssh relay for every scale set."""
        model = self._charm.model
        relay = read_debug_ssh(model.relations[debug_ssh.RELATION], self._last_relay())
        self._keep_relay(relay)
        debug_env = tuple(relay.env_entries().items()) if relay is not None else ()
        return read_configurators(
            model, model.relations[CONFIGURATOR_RELATION], debug_env, now=self._clock()
        )

    def _open_api_port(self, port: int | None) -> None:
        """Open GARM's API port where GARM runs (the leader), so `juju expose` reaches it.

        A standby unit runs no GARM and opens nothing; a changed port closes the old one.
        """
        try:
            self._charm.unit.set_ports(*([port] if port is not None else []))
        except ops.ModelError as error:
            logger.warning("could not open GARM's port (retried at the next hook): %s", error)

    def _install(self, proxy: ProxyConfig) -> ops.StatusBase | None:
        if not self._workload.is_installed():
            self._charm.unit.status = charm_status.installing()
        try:
            self._workload.install(
                self._resource(GARM_RESOURCE),
                self._resource(PROVIDER_RESOURCE),
                proxy,
                refusal=self._version_refusal,
            )
        except WorkloadError as error:
            return charm_status.install_failed(error)
        return None

    def _version_refusal(self, version: str) -> str | None:
        """Why a new GARM binary must not replace the installed one (a downgrade), or None."""
        decision = upgrade_step(self._workload.recorded_version(), version)
        return charm_status.upgrade_refusal(decision) if decision.step is Step.REFUSED else None

    def _resource(self, name: str) -> Path | None:
        try:
            return self._charm.model.resources.fetch(name)
        except (ops.ModelError, NameError):
            return None

    def _run_garm(self, state: CharmState, version: str) -> ops.StatusBase:
        creds = ensure_secrets(self._secrets)
        if creds is None:
            return charm_status.secrets_created()
        database = self._database.state()
        unusable = charm_status.database_unusable(database, version)
        if unusable is not None:
            return unusable
        tls = self._certificates.tls_files()
        client = local_client(state.config, tls)
        backend = POSTGRESQL if database.postgres is not None else SQLITE
        problem = self._backend_problem(backend, client, creds)
        if problem is not None:
            return charm_status.backend_switch_refused(problem)
        upgrade = self._upgrade(version, sqlite=backend == SQLITE, keep=state.config.backup_keep)
        if upgrade is not None:
            return upgrade
        handover = self._take_over(sqlite=backend == SQLITE)
        if handover is not None:
            return handover
        desired = self.desired()
        garm_config = _garm_config(
            state,
            creds,
            database,
            desired,
            version=version,
            tls=tls,
            rendered_providers=self._workload.rendered_provider_names(),
        )
        status = (
            self._start(client, garm_config, backend)
            or self._bootstrap(client, state.config, creds, tls)
            or self._keep_metrics_token(client, creds)
            or self._objects(client, state.config, desired, garm_config)
        )
        return charm_status.certificate_awaited(
            status,
            # The previous certificate, kept while the issued one fails its checks, is not it.
            serving_tls=tls is not None and not self._certificates.rejection(),
            requested=self._certificates.requested(),
            refusal=self._certificates.refusal,
        )

    def _backend_problem(
        self, backend: str, client: GarmClient, creds: BootstrapSecrets
    ) -> str | None:
        recorded = self._workload.recorded_backend()
        if recorded in ("", backend):
            return None
        return backend_switch_problem(
            backend,
            recorded,
            sqlite_has_state=self._workload.has_sqlite_state(),
            garm_has_objects=_garm_has_objects(client, creds),
        )

    def _upgrade(self, version: str, *, sqlite: bool, keep: int) -> ops.StatusBase | None:
        """Refuse a downgrade; back SQLite up before a newer GARM migrates it (ADR 0025).

        The install refuses a downgrade before the binary is swapped in; this refusal is for a
        binary installed before (by an earlier charm revision, or by hand). The GARM that runs
        keeps its binary until the restart `_start` makes, so it runs on as it was.
        """
        if sqlite:
            left_behind = self._recover_migration()
            if left_behind is not None:
                return left_behind
        last_ran = self._workload.recorded_version()
        decision = upgrade_step(last_ran, version)
        if decision.step is Step.REFUSED:
            return charm_status.upgrade_refused(decision)
        if decision.step is Step.SAME:
            return None
        self._charm.unit.status = charm_status.upgrading(decision)
        if not sqlite:
            logger.warning("upgrading GARM on PostgreSQL: back it up with the database's charm")
            return None
        self._workload.stop()
        try:
            backup = self._pre_upgrade_backup(decision.backup_name, last_ran)
        except WorkloadError as error:
            return charm_status.pre_upgrade_backup_failed(error)
        logger.info("upgrading GARM %s -> %s, backup %s", last_ran, version, backup.name)
        self._workload.prune_backups(keep, just_made=backup.name)
        return self._migrate(backup, last_ran, version)

    def _pre_upgrade_backup(self, name: str, last_ran: str) -> BackupManifest:
        """The backup taken before this upgrade (GARM stopped: nothing changes under it).

        A retried upgrade reuses the backup it took, which its failed migration restored, so
        the database is that backup byte for byte. A backup of the same name that does not
        match is older than the database (an earlier upgrade between the same versions, the
        operator having gone back since): restoring it would lose what GARM did since, so a
        new one is taken under a time-stamped name.
        """
        found = self._workload.matching_backup(name)
        if found is not None:
            return found
        now = self._clock()
        if self._workload.backup_exists(name):
            name = f"{name}-{now.astimezone(datetime.UTC):%Y%m%dT%H%M%SZ}"
        return self._workload.create_backup(
            name,
            passphrase_secret=passphrase_secret_ref(self._charm.model),
            now=now,
            garm_version=last_ran,
        )

    def _migrate(
        self, backup: BackupManifest, last_ran: str, version: str
    ) -> ops.StatusBase | None:
        """Let the new GARM migrate a copy of the database offline (ADR 0035).

        Whatever fails, even a failed fork or a full disk, the recovery the next hook would run
        runs at once: the database is the old one or the backup again, never half migrated. A
        GARM without `garm admin` (v0.2.1 and older) migrates when it starts instead.
        """
        if not garm_built_after_v0_2_1(version):
            return None
        try:
            kept = self._workload.migrate_database(backup.name, last_ran, version)
        except Exception as error:  # every failure ends in the recovery, which keeps the data
            logger.error("GARM %s could not migrate the database: %s", version, error)
            settled = self._recover_migration(failed=True)
            if settled is not None or self._workload.recorded_version() == version:
                return settled
            # No record was left (its own write failed): nothing was touched, GARM stays off.
            untouched = Recovered(
                Recovery.UNTOUCHED, MigrationRecord(backup.name, last_ran, version)
            )
            return charm_status.migration_recovered(untouched, failed=True)
        except BaseException:
            # Interrupted (SIGINT, SystemExit): settle it now if that can still be done; if
            # not, the record the migration left lets the next hook do it first.
            with contextlib.suppress(Exception):
                self._workload.recover_migration()
            raise
        logger.info("GARM %s migrated the database; %d runners kept", version, kept)
        return None

    def _recover_migration(self, *, failed: bool = False) -> ops.StatusBase | None:
        """Settle a migration left behind (this hook's, failed, or a killed hook's), first.

        None when there was none, or it had finished (the migrated database is in place).
        """
        try:
            recovered = self._workload.recover_migration()
        except WorkloadError as error:
            logger.error("an interrupted migration could not be settled: %s", error)
            return charm_status.migration_not_restored(error)
        if recovered is None:
            return None
        logger.warning(
            "migration %s -> %s (backup %s) left behind: %s",
            recovered.record.from_version,
            recovered.record.to_version,
            recovered.record.backup,
            recovered.outcome.value,
        )
        return charm_status.migration_recovered(recovered, failed=failed)

    def _take_over(self, *, sqlite: bool) -> ops.StatusBase | None:
        """Claim GARM for this leader; None when it may run it now (ADR 0005)."""
        peers = self._peers
        if not peers.up:
            # No peer relation yet (the first hooks): no other unit to fence against.
            return self._hold_lease(self._clock() + fencing.LEASE_LENGTH)
        committed = peers.committed_lease()
        claim = peers.claim()
        running = peers.others_running()
        decision = decide(self._charm.unit.name, claim, running, sqlite=sqlite, now=self._clock())
        if decision.claim != claim:
            peers.publish_claim(decision.claim)
        status = charm_status.handed_over(decision) or self._take_lease(
            committed, holder_stopped=peers.holder_stopped(committed, decision.claim)
        )
        if status is not None:
            self.stand_down()
        return status

    def _take_lease(
        self, committed: fencing.Lease | None, *, holder_stopped: bool
    ) -> ops.StatusBase | None:
        """Take or keep the lease; None when this unit holds a committed one (ADR 0019)."""
        me = self._charm.unit.name
        lease = fencing.decide(me, committed, holder_stopped, now=self._clock())
        # One lease per hook: a renewal at the hook's start already published it.
        if lease.publish is not None and not self._lease_renewed:
            self._peers.publish_lease(lease.publish)
        if lease.run_until is None:
            return charm_status.fenced(lease.message)
        return self._hold_lease(lease.run_until)

    def _hold_lease(self, until: datetime.datetime) -> ops.StatusBase | None:
        try:
            self._workload.lease.hold_until(until)
        except WorkloadError as error:
            return charm_status.not_started(error)
        return None

    def _start(
        self, client: GarmClient, garm_config: GarmConfig, backend: str
    ) -> ops.StatusBase | None:
        """Render and (re)start GARM as needed; a restarted GARM is waited for, boundedly.

        The version is recorded before GARM starts: a GARM without `garm admin` migrates the
        database as it starts, and a hook killed right after must not leave the migrated
        database labelled with the old version (a later backup would carry that label). A
        start that fails errs the safe way: a label newer than the schema only refuses more.
        """
        self._workload.record_version(garm_config.garm_version)
        try:
            started = self._workload.apply(garm_config)
        except WorkloadError as error:
            return charm_status.not_started(error)
        self._workload.record_backend(backend)
        self._peers.say_running(True)
        if started and not wait_until_serving(client):
            return charm_status.starting()
        return None

    def _bootstrap(
        self,
        client: GarmClient,
        config: CharmConfig,
        creds: BootstrapSecrets,
        tls: TlsFiles | None,
    ) -> ops.StatusBase | None:
        urls = ControllerUrls.from_base(
            public_url(config, self._address(), tls), tls.ca.encode() if tls else b""
        )
        try:
            accepted = settle_admin_password(
                client,
                self._secrets,
                self._workload.pending_admin_password,
                may_forget=not self.password_uncommitted,
                admin=admin_content(creds),
            )
            if accepted is not None:
                creds = dataclasses.replace(
                    creds, admin_password=accepted, pending_admin_password=""
                )
            bootstrap(client, creds, urls)
        except charm_status.BOOTSTRAP_FAILURES as error:
            return charm_status.bootstrap_failed(error)
        return None

    def _keep_metrics_token(
        self, client: GarmClient, creds: BootstrapSecrets
    ) -> ops.StatusBase | None:
        """Keep a valid metrics token where the scrape job points, while COS is related.

        A refusal only leaves the scrape failing (logged, retried at the next hook); an outage
        interrupts the reconcile like any other.
        """
        if not self._charm.model.relations[cos_agent.RELATION_NAME]:
            return None
        if token_is_current(self._workload.metrics_token(), creds.jwt_secret, self._clock()):
            return None
        try:
            token = client.metrics_token()
        except GarmUnreachable as error:
            return charm_status.interrupted(error)
        except (GarmApiError, WireFormatError) as error:
            logger.warning("no metrics token for the scrape (retried at the next hook): %s", error)
            return None
        self._workload.write_metrics_token(token)
        logger.info("wrote a new metrics token for the scrape")
        return None

    def tear_down(
        self, config: CharmConfig, *, since: datetime.datetime, sleep: Callable[[float], None]
    ) -> TeardownReport:
        """Tear down the charm's scale sets, waiting until `since` + `teardown-timeout`.

        Raises:
            GarmError: GARM cannot be reached, is not set up, or refused the login.
            WorkloadError: the admin credentials are not there yet.
        """
        creds = ensure_secrets(self._secrets)
        if creds is None:
            raise WorkloadError("GARM's admin credentials do not exist yet: nothing to tear down")
        client = local_client(config, self._certificates.tls_files())
        client.login(creds.admin_username, creds.admin_password)
        return teardown(
            client, deadline=since + config.teardown_timeout, clock=self._clock, sleep=sleep
        )

    def check_restore(
        self, config: CharmConfig, known: frozenset[str], *, force: bool
    ) -> RestoreCheck | str:
        """The runners GARM runs now that a backup holding `known` lacks; or why not to go on.

        GARM is asked before it is stopped. If it cannot answer, nothing can be named: the
        restore is refused unless forced (then it goes on naming none).
        """
        creds = ensure_secrets(self._secrets)
        if creds is None:
            # Never bootstrapped here: GARM has run no runner this charm could name.
            return check_restore([], known, force=force)
        try:
            client = local_client(config, self._certificates.tls_files())
            client.login(creds.admin_username, creds.admin_password)
            live = client.list_instances()
        except GarmError as error:
            logger.warning("restore: GARM's runners cannot be listed: %s", error)
            refusal = unknown_check(error, force=force)
            return refusal if refusal is not None else check_restore([], known, force=force)
        return check_restore(live, known, force=force)

    def _objects(
        self,
        client: GarmClient,
        config: CharmConfig,
        desired: DesiredState,
        garm_config: GarmConfig,
    ) -> ops.StatusBase:
        """The scale-set pass; while torn down, one teardown pass instead (never waits)."""
        if self.teardown_since is None:
            return self._reconcile_objects(client, config, desired, garm_config)
        try:
            report = teardown_pass(client, now=self._clock())
        except GarmError as error:
            return charm_status.interrupted(error)
        return charm_status.torn_down(report, self.teardown_since + config.teardown_timeout)

    def _reconcile_objects(
        self,
        client: GarmClient,
        config: CharmConfig,
        desired: DesiredState,
        garm_config: GarmConfig,
    ) -> ops.StatusBase:
        now = self._clock()
        ask_github = is_due(str(self._stored.github_scalesets_asked_at), now, CHECK_EVERY)
        # The installations' quotas as the last pass saw them (ADR 0039); this pass's skips only.
        quotas = Quotas.from_json(str(self._stored.github_quotas)).fresh()
        check_offline = is_due(str(self._stored.offline_checked_at), now, OFFLINE_CHECK_EVERY)
        try:
            outcome = reconcile_objects(
                client,
                desired,
                now=now,
                settings=reconcile_settings(config, self._peers.drain_holds(now)),
                proxy=garm_config.proxy,
                ask_github_scalesets=ask_github,
                quotas=quotas,
                offline_since=_sightings(str(self._stored.offline_since))
                if check_offline
                else None,
                github_view=views_from_json(_loaded(str(self._stored.github_view))),
                missing_sightings=sightings_from_json(str(self._stored.github_missing_since)),
            )
            self._keep_github_answers(outcome, quotas, now, ask_github=ask_github)
            self.completed_pass = CompletedPass(
                outcome.report,
                desired.specs,
                now,
                quotas.rows(),
                outcome.offline,
                outcome.github_view,
            )
            self.last_report = outcome.report
            kept = self._release_unused_providers(garm_config, outcome.report.provider_scalesets)
            self._restart_for_dropped_sets(client, dropped_and_kept(outcome.report), now)
        except (GarmError, WorkloadError) as error:
            return charm_status.interrupted(error)
        return charm_status.objects_reconciled(outcome, kept, has_specs=bool(desired.specs))

    def _keep_github_answers(
        self, outcome: ObjectsOutcome, quotas: Quotas, now: datetime.datetime, *, ask_github: bool
    ) -> None:
        """Store what GitHub answered this pass, for the next passes and the actions."""
        if ask_github:
            self._stored.github_scalesets_asked_at = now.isoformat()
        self._stored.github_quotas = quotas.to_json()
        if outcome.github_view is not None:
            self._stored.github_view = json.dumps(views_to_json(outcome.github_view))
        if outcome.offline is not None:
            self._stored.offline_checked_at = now.isoformat()
            self._stored.offline_since = json.dumps(dict(outcome.offline.since))
        if outcome.missing_sightings is not None:
            self._stored.github_missing_since = sightings_to_json(outcome.missing_sightings)

    def _restart_for_dropped_sets(
        self, client: GarmClient, dropped: Sequence[str], now: datetime.datetime
    ) -> None:
        """Restart GARM so it deletes old scale sets GitHub dropped (ADR 0029), once an hour.

        GARM keeps such a set through every delete until its worker, at its start, has created
        it again at GitHub (garm-behaviour B33); GitHub's own answer that the set is gone tells
        this apart from a delete kept for another cause, which a restart would not help.
        """
        last = str(self._stored.garm_restarted_for_github_at)
        if not dropped or not is_due(last, now, RESTART_EVERY):
            return
        logger.warning(
            "restarting GARM: GitHub dropped the old scale sets %s, which GARM deletes only "
            "after a restart",
            ", ".join(dropped),
        )
        self._stored.garm_restarted_for_github_at = now.isoformat()
        self._workload.restart()
        if not wait_until_serving(client):
            logger.warning("GARM is not serving yet after its restart; the next hook goes on")

    def _release_unused_providers(self, garm: GarmConfig, in_use: Mapping[str, int]) -> str:
        """Drop kept providers GARM has no scale set on any more (one restart); say who stays.

        Only a completed pass gets here, so `in_use` is what GARM holds: nothing is dropped on
        an outage, which ends the pass before.
        """
        desired = [provider.name for provider in garm.providers]
        kept = retained_providers(desired, garm.kept_providers, in_use)
        released = sorted(set(garm.kept_providers) - set(kept))
        if released:
            logger.info("removing providers no scale set uses any more: %s", ", ".join(released))
            self._workload.apply(dataclasses.replace(garm, kept_providers=kept))
        return retention_message(kept, in_use)

    def _last_relay(self) -> DebugSsh | None:
        """The last valid relay: the leader's copy in the peer app data, where any leader reads it.

        The unit's own copy (all the previous charm version kept) counts until a leader has
        kept one there, and where there is no peer relation yet.
        """
        kept = self._peers.kept_relay()
        if kept is not None:
            return debug_ssh.kept_relay(kept)
        last = dict(self._stored.debug_ssh)
        return DebugSsh(**last) if last else None

    def _keep_relay(self, relay: DebugSsh | None) -> None:
        self._stored.debug_ssh = dataclasses.asdict(relay) if relay is not None else {}
        if self._charm.unit.is_leader():
            self._peers.keep_relay(debug_ssh.kept_value(relay))


def local_client(config: CharmConfig, tls: TlsFiles | None) -> GarmClient:
    """A client for GARM on this machine; with TLS it verifies GARM against the relation's CA.

    `127.0.0.1` is among the certificate's names (`relations.certificates.certificate_names`).
    """
    if tls is None:
        return GarmClient(f"http://127.0.0.1:{config.port}")
    return GarmClient(f"https://{LOCAL_URL_HOST}:{config.port}", ca_cert=tls.ca)


def passphrase_secret_ref(model: ops.Model) -> str:
    """The reference of the Juju secret holding GARM's database passphrase; "" if unknown.

    A backup records it: the database is useless without the passphrase (ADR 0025).
    """
    try:
        return model.get_secret(label=DB_PASSPHRASE_LABEL).get_info().id
    except (ops.SecretNotFoundError, ops.ModelError):
        return ""


def public_url(config: CharmConfig, address: str, tls: TlsFiles | None) -> str:
    """Where runners and GitHub reach GARM: `external-url` as given, else the unit's address.

    The default follows what GARM serves (https with a certificate); an `external-url` is the
    operator's (a proxy in front of GARM may speak either), so it is never rewritten.
    """
    url = config.base_url(address)
    if tls is not None and not config.external_url:
        return "https://" + url.removeprefix("http://")
    return url


def reconcile_settings(
    config: CharmConfig, drain_holds: tuple[Hold, ...] = ()
) -> ReconcileSettings:
    """The scale-set pass's timings, from the config and the pauses that held the drain clock."""
    return ReconcileSettings(
        handover_grace=config.handover_grace,
        drain_timeout=config.drain_timeout,
        handover_timeout=config.handover_timeout,
        refresh_surge=config.refresh_surge,
        runner_stuck_timeout=config.runner_stuck_timeout or None,
        changeover_surge=config.changeover_surge,
        max_writes=config.max_writes_per_pass,
        drain_holds=drain_holds,
    )


def _garm_config(
    state: CharmState,
    creds: BootstrapSecrets,
    database: DatabaseState,
    desired: DesiredState,
    *,
    version: str,
    tls: TlsFiles | None,
    rendered_providers: frozenset[str],
) -> GarmConfig:
    return GarmConfig(
        jwt_secret=creds.jwt_secret,
        db_passphrase=creds.db_passphrase,
        port=state.config.port,
        log_level=state.config.log_level,
        postgres=database.postgres,
        providers=desired.providers,
        proxy=state.proxy,
        # Until this hook's pass shows which of them GARM still uses, keep every provider
        # whose configurator is gone: its scale sets may still have runners to delete.
        kept_providers=retained_providers(
            [provider.name for provider in desired.providers], rendered_providers, in_use=None
        ),
        garm_version=version,
        tls=tls,
    )


def _loaded(text: str) -> Any:
    """A JSON value kept in the stored state; unreadable or empty: an empty object."""
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def _sightings(text: str) -> dict[str, str]:
    """The kept first sightings of offline runners (name -> ISO time); unreadable: none."""
    loaded = _loaded(text)
    if not isinstance(loaded, dict):
        return {}
    items = cast(dict[Any, Any], loaded).items()
    return {str(k): v for k, v in items if isinstance(v, str)}


def _garm_has_objects(client: GarmClient, creds: BootstrapSecrets) -> bool | None:
    """Whether GARM holds credentials or scale sets; None when it cannot tell."""
    try:
        client.login(creds.admin_username, creds.admin_password)
        return bool(client.list_github_credentials() or client.list_scalesets())
    except GarmNotInitialised:
        return False
    except GarmError:
        return None
