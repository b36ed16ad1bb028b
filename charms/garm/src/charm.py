#!/usr/bin/env python3
"""Charm entry point for garm: every event leads to one holistic reconcile.

Only the leader runs GARM (docs/adr/0003-leader-runs-garm.md); other units install the binaries
and stand by. A hook reads the config once (`CharmState`) and hands it to the reconcile
(`charm_reconcile`), which derives everything from it, the relations, Juju secrets and what
GARM answers, so any event can run it and a repeated run changes nothing. `charm_status` words
every status.
"""

from __future__ import annotations

import datetime
import gc
import json
import logging
import os
import time

import ops

import charm_status
from charm_config import CharmState, InvalidConfigError
from charm_reconcile import (
    CONFIGURATOR_RELATION,
    GarmReconciler,
    local_client,
    passphrase_secret_ref,
    public_url,
    reconcile_settings,
)
from garm_api import GarmError
from juju_secrets import JujuSecretStore
from reconcile.bootstrap import read_secrets
from reconcile.charm_metrics import MetricsState, after_pass, render
from reconcile.credential_rotation import RotationError, rotate_admin_password, rotate_jwt_secret
from reconcile.garm_objects import list_scalesets
from reconcile.github.http import Quotas
from reconcile.github.view import from_json as views_from_json
from reconcile.restore_check import RestoreCheck
from reconcile.teardown import TeardownReport
from relations import certificates, cos_agent, debug_ssh
from relations import database as database_relation
from relations.database import Database
from relations.peers import RELATION as PEER_RELATION
from relations.peers import PeerData
from relations.peers.pause import OPERATOR, RESTORE, Maintenance, paused_tick
from scaleset_reconciler import ReconcileReport
from scaleset_reconciler.refresh_request import UnknownScaleset, request_refresh
from workload.backup import BackupManifest, restore_problem
from workload.exporter import CharmExporter, ExporterError
from workload.host import HostWriteError, WorkloadError
from workload.machine import Workload
from workload.tick import ReconcileTick, TickError, TickSchedule
from workload.version import garm_built_after_v0_2_1

logger = logging.getLogger(__name__)

# A hook is one short process: what the imports above made lives until it ends, so the
# collector is told to leave it out of every later collection instead of walking it again in
# each full one (about half the collector's time in a tick over 1,000 scale sets; docs/
# reference/performance.md). Garbage made from here on is collected as before.
gc.freeze()


class ReconcileTickEvent(ops.EventBase):
    """The leader's timer fired (`workload/tick.py`): reconcile between hooks."""


class GarmCharmEvents(ops.CharmEvents):
    """Juju's events, plus the tick the timer dispatches as `hooks/reconcile-tick`."""

    reconcile_tick = ops.EventSource(ReconcileTickEvent)


class GarmCharm(ops.CharmBase):
    """Machine charm that installs, bootstraps and drives GARM."""

    on = GarmCharmEvents()
    # The unit's copy of the last valid debug-ssh relay (docs/adr/0014-bad-input-changes-
    # nothing.md): the leader's copy in the peer app data wins; this one serves an upgrade from
    # a version that kept only this, and a model without the peer relation yet.
    _stored = ops.StoredState()

    def __init__(self, framework: ops.Framework) -> None:
        super().__init__(framework)
        self._stored.set_default(
            debug_ssh={},
            github_scalesets_asked_at="",
            garm_restarted_for_github_at="",
            github_quotas="",
            offline_checked_at="",
            offline_since="{}",
            github_view="{}",
            # GitHub's first "missing" answers, to be confirmed at a later check (ADR 0029).
            github_missing_since="",
        )
        # What this hook read from Juju, once: the state, or why the config is invalid.
        self._snapshot: CharmState | InvalidConfigError | None = None
        self._unit_address: str | None = None
        self._status: ops.StatusBase | None = None
        self._workload = Workload()
        self._tick = ReconcileTick()
        self._exporter = CharmExporter()
        self._secrets = JujuSecretStore(self.model)
        # Read once, written once as the hook ends (ADR 0045).
        self._peers = PeerData(self)
        database = Database(self)
        self._certificates = certificates.Certificates(
            self, self._certificate_names, served=self._workload.served_tls
        )
        self._reconciler = GarmReconciler(
            self,
            self._stored,
            peers=self._peers,
            workload=self._workload,
            secrets=self._secrets,
            database=database,
            certificates=self._certificates,
            address=self._address,
            clock=utc_now,
        )
        for event in (
            self.on.install,
            self.on.start,
            self.on.config_changed,
            self.on.upgrade_charm,
            self.on.update_status,
            self.on.leader_elected,
            self.on.secret_changed,
            self.on[database_relation.RELATION_NAME].relation_changed,
            self.on[database_relation.RELATION_NAME].relation_broken,
            self.on[CONFIGURATOR_RELATION].relation_changed,
            self.on[CONFIGURATOR_RELATION].relation_broken,
            self.on[debug_ssh.RELATION].relation_changed,
            self.on[debug_ssh.RELATION].relation_broken,
            self.on[certificates.RELATION_NAME].relation_changed,
            self.on[certificates.RELATION_NAME].relation_broken,
            self.on[PEER_RELATION].relation_changed,
            self.on[PEER_RELATION].relation_departed,
            self.on[cos_agent.RELATION_NAME].relation_joined,
            self.on[cos_agent.RELATION_NAME].relation_changed,
            self.on.reconcile_tick,
        ):
            framework.observe(event, self._reconcile)
        database.observe(self._reconcile)
        self._certificates.observe(self._reconcile)
        framework.observe(self.on.stop, self._on_stop)
        framework.observe(self.on.remove, self._on_remove)
        framework.observe(self.on.teardown_action, self._on_teardown)
        framework.observe(self.on.get_credentials_action, self._on_get_credentials)
        framework.observe(self.on.list_scalesets_action, self._on_list_scalesets)
        framework.observe(self.on.rotate_credentials_action, self._on_rotate_credentials)
        framework.observe(self.on.pause_action, self._on_pause)
        framework.observe(self.on.resume_action, self._on_resume)
        framework.observe(self.on.create_backup_action, self._on_create_backup)
        framework.observe(self.on.restore_backup_action, self._on_restore_backup)
        framework.observe(self.on.refresh_runners_action, self._on_refresh_runners)
        framework.observe(self.on.collect_unit_status, self._on_collect_status)
        framework.observe(self.on.collect_app_status, self._on_collect_status)

    def _certificate_names(self) -> certificates.CertificateNames | None:
        """What GARM's certificate must cover; None while the config is invalid (it blocks)."""
        try:
            state = self._state()
        except InvalidConfigError:
            return None
        return certificates.certificate_names(state.config.external_url, self._address())

    # The reconcile ------------------------------------------------------------------------

    def _reconcile(self, _: ops.EventBase) -> None:
        try:
            leader = self.unit.is_leader()
        except ops.ModelError:
            # Cut off from the controller, a former leader may have been replaced: GARM goes
            # now, not when the lease ends (docs/adr/0019-fencing-and-durable-rotation.md). The
            # hook then fails as it would anyway (ops asks again to collect statuses): Juju
            # runs it again once the controller answers.
            self._reconciler.stand_down()
            raise
        if leader:
            self._reconciler.renew_lease()
        else:
            self._reconciler.stand_down(leader=False)
        pause = self._maintenance()
        self._reconciler.teardown_since = self._teardown_since()
        try:
            state = self._state()
        except InvalidConfigError as error:
            state, status = None, charm_status.invalid_config(error)
        else:
            # Paused: nothing installed, rendered, started, stopped or written to GARM (ADR 0024).
            status = charm_status.paused(pause) if pause else self._reconcile_garm(state)
        self._status = charm_status.bounded(status)
        logger.info("reconcile: %s %s", self._status.name, self._status.message)
        if state is not None:
            # A bad config leaves what was published and scheduled as it is until it is fixed.
            self._publish_cos_agent(state)
            self._schedule_tick(state, paused=pause is not None)
            self._keep_charm_metrics(state, paused=pause is not None)

    def _reconcile_garm(self, state: CharmState) -> ops.StatusBase:
        """The reconcile's status; a file the charm could not write is one too, never a crash.

        The hook then completes: what it already did (the renewed lease first) is committed.
        """
        try:
            return self._reconciler.reconcile(state)
        except HostWriteError as error:
            return charm_status.host_write_failed(error)

    def _publish_cos_agent(self, state: CharmState) -> None:
        """Tell COS what to scrape and alert on; a failure here never touches GARM's reconcile."""
        try:
            cos_agent.publish(
                self,
                port=state.config.port,
                runs_garm=state.leader,
                tls=self._certificates.tls_files() is not None,
            )
        except (ops.ModelError, OSError, ValueError) as error:
            logger.warning("cos-agent data not published (retried at the next hook): %s", error)

    def _schedule_tick(self, state: CharmState, *, paused: bool) -> None:
        """Keep the reconcile tick on the leader at `reconcile-interval`; nowhere else.

        While paused the tick renews GARM's lease and does nothing else, at most a minute
        apart (`paused_tick`): the pause promises GARM keeps running (ADR 0024).
        A systemd failure is logged and retried at the next hook, which reconciles anyway.
        """
        interval = state.config.reconcile_interval
        if paused:
            interval = paused_tick(interval)
        if not state.leader or not interval:
            self._tick.remove()
            return
        try:
            self._tick.install(TickSchedule(self.unit.name, self.charm_dir, interval))
        except TickError as error:
            logger.warning("reconcile tick not installed (hooks still reconcile): %s", error)
            self._blocked_by_a_write(error)

    def _keep_charm_metrics(self, state: CharmState, *, paused: bool) -> None:
        """Serve the charm's per-scale-set metrics on the leader while COS scrapes (ADR 0030).

        The metrics follow the last completed pass; while paused no pass runs, so only the
        pause gauge changes. A failure is logged and retried at the next hook: it never
        touches GARM's reconcile.
        """
        if not state.leader or not self.model.relations[cos_agent.RELATION_NAME]:
            self._exporter.remove()
            return
        # Taken once: a second reconcile in this hook must not count the same pass again.
        completed, self._reconciler.completed_pass = self._reconciler.completed_pass, None
        try:
            metrics = MetricsState.from_json(self._exporter.read_state())
            if completed is not None:
                metrics = after_pass(metrics, completed)
                self._exporter.keep_state(metrics.to_json())
            self._exporter.publish(render(metrics, paused=paused))
            self._exporter.install()
        except ExporterError as error:
            logger.warning("charm metrics not served (retried at the next hook): %s", error)
            self._blocked_by_a_write(error)

    def _blocked_by_a_write(self, error: Exception) -> None:
        """A file of the tick or the exporter the disk refused is the unit's status too.

        Unless the reconcile is Blocked already: its own reason comes first.
        """
        cause = error.__cause__
        if isinstance(cause, HostWriteError) and not isinstance(self._status, ops.BlockedStatus):
            self._status = charm_status.host_write_failed(cause)

    # Other events -------------------------------------------------------------------------

    # Removal (docs/adr/0036-teardown-on-removal.md) -------------------------------------------

    def _on_stop(self, _: ops.StopEvent) -> None:
        """When the whole application goes, tear the charm's scale sets down before GARM goes.

        Only the leader, and only when Juju plans no unit any more: a unit removed from an
        application that stays hands GARM to the next leader instead. Waits at most
        `teardown-timeout`; nothing here may fail the hook, which would hold up the removal.
        """
        try:
            removing = self.unit.is_leader() and self.app.planned_units() == 0
        except ops.ModelError as error:
            logger.warning("teardown skipped: cannot tell whether the application goes: %s", error)
            return
        if not removing:
            return
        since = utc_now()
        try:
            until = since + self._state().config.teardown_timeout
            self.unit.status = charm_status.removing(until)
            report = self._tear_down(since)
        except (InvalidConfigError, GarmError, WorkloadError) as error:
            logger.error(
                "teardown on removal not done (%s): the charm's scale sets, their runners and "
                "VMs may remain; see docs/how-to/remove-garm.md",
                error,
            )
            return
        report.log_leftovers()
        logger.info(
            "teardown on removal: deleted %s; left %s", report.deleted or "-", report.remaining
        )

    def _on_teardown(self, event: ops.ActionEvent) -> None:
        """Tear down ahead of removal, waiting up to `teardown-timeout`; say what remains.

        The time it began is kept in the peer data: until `resume`, every hook keeps the scale
        sets down instead of creating them again. Each run waits `teardown-timeout` afresh.
        """
        if not self._leader_peers(event, "teardown"):
            return
        if self._maintenance() is not None:
            event.fail("the charm is paused: run resume first, then teardown")
            return
        since = utc_now()
        self._peers.begin_teardown(since)
        try:
            report = self._tear_down(since)
        except (InvalidConfigError, GarmError, WorkloadError) as error:
            event.fail(f"teardown interrupted ({error}); run it again")
            return
        self._reconcile(event)
        event.set_results(_teardown_results(report))
        if not report.done:
            event.fail(
                f"{len(report.leftovers)} runners remain in {len(report.remaining)} scale sets: "
                "see remaining; run teardown again to wait longer"
            )

    def _tear_down(self, since: datetime.datetime) -> TeardownReport:
        config = self._state().config
        return self._reconciler.tear_down(config, since=since, sleep=time.sleep)

    def _teardown_since(self) -> datetime.datetime | None:
        """When the teardown action began (kept for every leader), or None."""
        return self._peers.teardown_since()

    def _on_remove(self, _: ops.RemoveEvent) -> None:
        self._tick.remove()
        self._exporter.remove()
        self._workload.remove()

    def _on_get_credentials(self, event: ops.ActionEvent) -> None:
        creds = read_secrets(self._secrets)
        if creds is None:
            event.fail(
                "GARM's admin credentials do not exist yet: the leader creates them when it "
                "first configures GARM"
            )
            return
        try:
            state = self._state()
        except InvalidConfigError as error:
            event.fail(str(error))
            return
        url = public_url(state.config, self._address(), self._certificates.tls_files())
        event.set_results(
            {"username": creds.admin_username, "password": creds.admin_password, "url": url}
        )

    def _on_list_scalesets(self, event: ops.ActionEvent) -> None:
        if not self.unit.is_leader():
            event.fail("GARM runs on the leader only: juju run garm/leader list-scalesets")
            return
        creds = read_secrets(self._secrets)
        if creds is None:
            event.fail("GARM is not bootstrapped yet")
            return
        try:
            config = self._state().config
            client = local_client(config, self._certificates.tls_files())
            client.login(creds.admin_username, creds.admin_password)
            now = utc_now()
            listing = list_scalesets(
                client,
                self._reconciler.desired(),
                now=now,
                settings=reconcile_settings(config, self._peers.drain_holds(now)),
            )
        except (InvalidConfigError, GarmError) as error:
            event.fail(str(error))
            return
        event.set_results(
            {
                "count": len(listing.scalesets),
                "scalesets": json.dumps(listing.scalesets),
                "changeovers": json.dumps(listing.changeovers),
                "surge": json.dumps(listing.surge),
                "github-api": json.dumps(Quotas.from_json(str(self._stored.github_quotas)).rows()),
                "offline-runners": str(self._stored.offline_since),
                "github-view": json.dumps(
                    [
                        view.row()
                        for view in views_from_json(
                            json.loads(str(self._stored.github_view))
                        ).values()
                    ]
                ),
            }
        )

    def _on_refresh_runners(self, event: ops.ActionEvent) -> None:
        """Mark the scale sets for a full refresh in GARM, then reconcile once to start it."""
        if not self.unit.is_leader():
            event.fail("GARM runs on the leader only: juju run garm/leader refresh-runners")
            return
        if self._maintenance() is not None:
            event.fail("the charm is paused: run resume first, then refresh-runners")
            return
        creds = read_secrets(self._secrets)
        if creds is None:
            event.fail("GARM is not bootstrapped yet")
            return
        logical = str(event.params.get("scaleset") or "").strip() or None
        try:
            config = self._state().config
            client = local_client(config, self._certificates.tls_files())
            client.login(creds.admin_username, creds.admin_password)
            marked = request_refresh(client, logical, now=utc_now())
        except (InvalidConfigError, GarmError, UnknownScaleset) as error:
            event.fail(str(error))
            return
        self._reconcile(event)
        event.set_results({"scalesets": ",".join(marked), "count": len(marked)})

    def _on_rotate_credentials(self, event: ops.ActionEvent) -> None:
        """New JWT key (and admin password), then one reconcile: one restart, a new login.

        Whatever goes wrong ends as a failed action, never a crashed one: a crash would discard
        the secret revisions while GARM may already have the new password (ADR 0019), and the
        charm must stay usable for the next hook, which settles a half-way rotation.
        """
        try:
            self._rotate_credentials(event)
        except Exception as error:  # every failure must reach the operator as a failed action
            logger.exception("rotate-credentials failed")
            event.fail(
                f"rotate-credentials failed ({type(error).__name__}; see juju debug-log); the "
                "next hook keeps GARM's admin password usable: run the action again"
            )

    def _rotate_credentials(self, event: ops.ActionEvent) -> None:
        if not self.unit.is_leader():
            event.fail("GARM runs on the leader only: juju run garm/leader rotate-credentials")
            return
        if self._maintenance() is not None:
            # A rotation restarts GARM and writes its database: exactly what a pause forbids.
            event.fail("the charm is paused: run resume first, then rotate-credentials")
            return
        password = bool(event.params.get("admin-password", False))
        if password and not garm_built_after_v0_2_1(self._workload.version()):
            event.fail(
                f"GARM {self._workload.version() or '(unknown version)'} cannot change its admin "
                "password (no `garm admin`): attach a garm-binary built after v0.2.1"
            )
            return
        try:
            if password:
                self._reconciler.password_uncommitted = True
                rotate_admin_password(
                    self._secrets,
                    self._reset_admin_password,
                    self._workload.pending_admin_password,
                )
            rotate_jwt_secret(self._secrets)
        except RotationError as error:
            event.fail(f"{error}; run the action again")
            return
        self._reconcile(event)
        status = self._status or charm_status.unknown()
        rotated = "jwt-secret,admin-password" if password else "jwt-secret"
        event.set_results({"rotated": rotated, "status": f"{status.name}: {status.message}"})
        if not isinstance(status, ops.ActiveStatus):
            event.fail(f"rotated {rotated}, but GARM is not active yet: {status.message}")

    def _reset_admin_password(self, username: str, password: str) -> None:
        try:
            self._workload.reset_admin_password(username, password)
        except WorkloadError as error:
            raise RotationError(str(error)) from None

    # Maintenance and backups (docs/adr/0024-maintenance-mode.md, 0025) -----------------------

    def _on_pause(self, event: ops.ActionEvent) -> None:
        """Pause the charm's hands on GARM until `resume`; a second pause keeps the first."""
        if not self._leader_peers(event, "pause"):
            return
        pause = self._maintenance()
        if pause is None:
            pause = Maintenance(utc_now(), OPERATOR)
            self._peers.set_pause(pause)
        self._reconcile(event)
        event.set_results({"paused-since": pause.since.isoformat(), "paused-by": pause.by})

    def _on_resume(self, event: ops.ActionEvent) -> None:
        """End any pause, then reconcile at once: GARM is started again if it was stopped.

        The pause held the drain clock (ADR 0042): the output says by how much, and when each
        retired scale set's drain now ends.
        """
        if not self._leader_peers(event, "resume"):
            return
        held = self._peers.resume(utc_now())
        self._reconcile(event)
        status = self._status or charm_status.unknown()
        event.set_results(
            {
                "status": f"{status.name}: {status.message}",
                "drain-clock-held": f"{int(held.total_seconds())}s",
                "drain-deadlines": json.dumps(drain_deadlines(self._reconciler.last_report)),
            }
        )

    def _on_create_backup(self, event: ops.ActionEvent) -> None:
        """An online copy of GARM's SQLite database with its manifest (ADR 0025)."""
        if not self._leader_only(event, "create-backup") or self._on_postgresql(event):
            return
        now = utc_now()
        name = str(event.params.get("name") or f"garm-{now:%Y%m%dT%H%M%SZ}")
        try:
            manifest = self._workload.create_backup(
                name, passphrase_secret=passphrase_secret_ref(self.model), now=now
            )
        except WorkloadError as error:
            event.fail(str(error))
            return
        results = manifest.as_results(self._workload.backup_path(name))
        try:
            keep = self._state().config.backup_keep
        except InvalidConfigError:
            keep = None  # a bad config changes nothing: no backup is removed for it
        if keep is not None:
            results["pruned"] = ",".join(self._workload.prune_backups(keep, just_made=name))
        event.set_results(results)

    def _on_restore_backup(self, event: ops.ActionEvent) -> None:
        """Pause, stop GARM, swap the checked backup in, then start GARM and resume (ADR 0025).

        Under an operator's pause GARM stays stopped until `resume`; a failed swap keeps the
        old database and the pause, so nothing starts until the operator looks.
        """
        if not self._leader_peers(event, "restore-backup") or self._on_postgresql(event):
            return
        name = str(event.params.get("name", ""))
        checked = self._checked_restore(event, name)
        if checked is None:
            return
        manifest, doomed = checked
        held = self._maintenance()
        if held is None:
            self._peers.set_pause(Maintenance(utc_now(), RESTORE))
        self._tick.remove()
        self._workload.stop()
        try:
            self._workload.restore_backup(manifest)
        except WorkloadError as error:
            self._reconcile(event)
            event.fail(f"{error}; the old database stays, GARM is stopped: run resume to start it")
            return
        # The database is now the one that GARM wrote: going back to it is not a downgrade.
        try:
            self._workload.record_version(manifest.garm_version)
        except WorkloadError as error:
            self._reconcile(event)
            event.fail(f"restored, but {error}; then run resume")
            return
        if held is None:
            self._peers.clear_pause()
        self._reconcile(event)
        status = self._status or charm_status.unknown()
        event.set_results(
            {"restored": name, "status": f"{status.name}: {status.message}", **doomed}
        )

    def _checked_restore(
        self, event: ops.ActionEvent, name: str
    ) -> tuple[BackupManifest, dict[str, str | int]] | None:
        """The backup and the runners it will kill, or None once the action failed saying why.

        Everything is checked here, before GARM is stopped: a refusal changes nothing.
        """
        try:
            manifest = self._workload.read_backup(name)
        except WorkloadError as error:
            event.fail(str(error))
            return None
        problem = restore_problem(manifest, self._workload.version())
        if problem is None and manifest.passphrase_secret != passphrase_secret_ref(self.model):
            problem = (
                f"backup {name} needs the passphrase in secret {manifest.passphrase_secret}, "
                "not this application's garm-db-passphrase: not restored"
            )
        if problem is not None:
            event.fail(problem)
            return None
        check = self._restore_check(manifest, force=bool(event.params.get("force", False)))
        if isinstance(check, str):
            event.fail(check)
            return None
        doomed = _doomed_results(check)
        refusal = check.refusal(name)
        if refusal is not None:
            event.set_results(doomed)
            event.fail(refusal)
            return None
        return manifest, doomed

    def _restore_check(self, manifest: BackupManifest, *, force: bool) -> RestoreCheck | str:
        """What the restore will have GARM delete (asked before GARM stops), or why not go on."""
        try:
            known = self._workload.backup_runners(manifest)
            config = self._state().config
        except (WorkloadError, InvalidConfigError) as error:
            return str(error)
        return self._reconciler.check_restore(config, known, force=force)

    def _leader_peers(self, event: ops.ActionEvent, action: str) -> bool:
        """Whether this unit leads, the peer relation up; else the action fails, saying why."""
        if not self._leader_only(event, action):
            return False
        if not self._peers.up:
            event.fail("the peer relation is not up yet: run the action again in a minute")
            return False
        return True

    def _leader_only(self, event: ops.ActionEvent, action: str) -> bool:
        """Whether this unit leads; else the action fails, naming where to run it."""
        if self.unit.is_leader():
            return True
        event.fail(f"GARM runs on the leader only: juju run garm/leader {action}")
        return False

    def _on_postgresql(self, event: ops.ActionEvent) -> bool:
        """Whether GARM's state is in PostgreSQL; then the backup action fails, saying why."""
        if not self.model.relations[database_relation.RELATION_NAME]:
            return False
        event.fail(
            "GARM keeps its state in PostgreSQL: use the database charm's backups "
            "(juju run postgresql/leader create-backup)"
        )
        return True

    def _maintenance(self) -> Maintenance | None:
        """The pause in force (peer application data, so a new leader keeps it), or None."""
        return self._peers.pause_in_force()

    def _on_collect_status(self, event: ops.CollectStatusEvent) -> None:
        """The unit and the app show the same status: the leader's is the app's."""
        if self._status is not None:
            event.add_status(self._status)

    # What the hook reads once -------------------------------------------------------------

    def _state(self) -> CharmState:
        """This hook's validated config and leadership, read and checked once.

        Raises:
            InvalidConfigError: an option has a value the charm cannot use (every time asked).
        """
        if self._snapshot is None:
            try:
                self._snapshot = CharmState.from_juju(
                    self.config, leader=self.unit.is_leader(), environ=os.environ
                )
            except InvalidConfigError as error:
                self._snapshot = error
        if isinstance(self._snapshot, InvalidConfigError):
            raise self._snapshot
        return self._snapshot

    def _address(self) -> str:
        """The unit's address (a hook tool call, made once)."""
        if self._unit_address is None:
            address = self.model.get_binding(CONFIGURATOR_RELATION).network.ingress_address
            self._unit_address = str(address) if address is not None else "127.0.0.1"
        return self._unit_address


def _doomed_results(check: RestoreCheck) -> dict[str, str | int]:
    """The runners the restored database does not know, which GARM deletes, busy ones first."""
    return {
        "unknown-runners": json.dumps([runner.as_result() for runner in check.doomed]),
        "unknown-runners-busy": len(check.busy),
    }


def _teardown_results(report: TeardownReport) -> dict[str, str | int]:
    """The teardown action's results: what went, what remains runner by runner, and how."""
    return {
        "deleted": ",".join(report.deleted),
        "remaining": json.dumps([leftover.as_result() for leftover in report.leftovers]),
        "remaining-scalesets": ",".join(report.remaining),
        "hand-made": ",".join(report.hand_made),
        "count": len(report.leftovers),
    }


def drain_deadlines(report: ReconcileReport | None) -> dict[str, str]:
    """Each retired scale set still draining -> when its drain ends (ISO 8601, UTC)."""
    if report is None:
        return {}
    retired = [p for spec in report.specs for p in spec.predecessors] + report.orphans
    return {
        p.name: p.deadline.astimezone(datetime.UTC).isoformat()
        for p in retired
        if p.deadline is not None
    }


def utc_now() -> datetime.datetime:
    """The time every decision of the charm is taken at: the one clock tests and the demo set.

    GARM stamps its objects with its own clock on this machine; the hand-over grace and the drain
    deadline compare against this one.
    """
    return datetime.datetime.now(datetime.UTC)


if __name__ == "__main__":  # pragma: nocover
    ops.main(GarmCharm)
