#!/usr/bin/env python3
"""Charm entry point for garm: every event leads to one holistic reconcile.

Only the leader runs GARM (docs/adr/0003-leader-runs-garm.md); other units install the binaries
and stand by. The reconcile derives everything from config, relations, Juju secrets and what
GARM answers, so any event can run it and a repeated run changes nothing.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

import ops

import charm_status
from charm_config import (
    POSTGRESQL,
    SQLITE,
    CharmConfig,
    CharmState,
    InvalidConfigError,
    backend_switch_problem,
)
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
    BootstrapSecrets,
    ControllerUrls,
    bootstrap,
    ensure_secrets,
    read_secrets,
    wait_until_serving,
)
from reconcile.credential_rotation import RotationError, rotate_admin_password, rotate_jwt_secret
from reconcile.desired_state import DesiredState
from reconcile.garm_objects import list_scalesets, reconcile_objects
from reconcile.metrics_token import token_is_current
from reconcile.provider_retention import retained_providers, retention_message
from relations import certificates as garm_tls
from relations import cos_agent, debug_ssh
from relations.configurators import read_configurators
from relations.database import Database, DatabaseState
from relations.debug_ssh import DebugSsh, read_debug_ssh
from relations.service_handover import HostClaim, decide, reports_running, running_flag
from scaleset_reconciler import ReconcileSettings
from workload.config import GarmConfig, ProxyConfig, TlsFiles
from workload.host import WorkloadError
from workload.machine import Workload
from workload.releases import GARM_RESOURCE, PROVIDER_RESOURCE
from workload.tick import ReconcileTick, TickError, TickSchedule
from workload.version import garm_built_after_v0_2_1

logger = logging.getLogger(__name__)

CONFIGURATOR_RELATION = "garm-configurator"
PEER_RELATION = "garm-peers"


class ReconcileTickEvent(ops.EventBase):
    """The leader's timer fired (`reconcile_tick.py`): reconcile between hooks."""


class GarmCharmEvents(ops.CharmEvents):
    """Juju's events, plus the tick the timer dispatches as `hooks/reconcile-tick`."""

    reconcile_tick = ops.EventSource(ReconcileTickEvent)


class GarmCharm(ops.CharmBase):
    """Machine charm that installs, bootstraps and drives GARM."""

    on = GarmCharmEvents()
    # The last valid debug-ssh relay, kept while its units publish only invalid ones: the one
    # thing not derived afresh each hook (docs/adr/0014-bad-input-changes-nothing.md).
    _stored = ops.StoredState()

    def __init__(self, framework: ops.Framework) -> None:
        super().__init__(framework)
        self._stored.set_default(debug_ssh={})
        # What this hook read from Juju, once: the state, or why the config is invalid.
        self._snapshot: CharmState | InvalidConfigError | None = None
        self._unit_address: str | None = None
        self._workload = Workload()
        self._tick = ReconcileTick()
        self._secrets = JujuSecretStore(self.model)
        self._database = Database(self)
        self._certificates = garm_tls.Certificates(self, self._certificate_names)
        self._status: ops.StatusBase | None = None
        for event in (
            self.on.install,
            self.on.start,
            self.on.config_changed,
            self.on.upgrade_charm,
            self.on.update_status,
            self.on.leader_elected,
            self.on.secret_changed,
            self.on[self._database_relation].relation_changed,
            self.on[self._database_relation].relation_broken,
            self.on[CONFIGURATOR_RELATION].relation_changed,
            self.on[CONFIGURATOR_RELATION].relation_broken,
            self.on[debug_ssh.RELATION].relation_changed,
            self.on[debug_ssh.RELATION].relation_broken,
            self.on[garm_tls.RELATION_NAME].relation_changed,
            self.on[garm_tls.RELATION_NAME].relation_broken,
            self.on[PEER_RELATION].relation_changed,
            self.on[PEER_RELATION].relation_departed,
            self.on[cos_agent.RELATION_NAME].relation_joined,
            self.on[cos_agent.RELATION_NAME].relation_changed,
            self.on.reconcile_tick,
        ):
            framework.observe(event, self._reconcile)
        self._database.observe(self._reconcile)
        self._certificates.observe(self._reconcile)
        framework.observe(self.on.remove, self._on_remove)
        framework.observe(self.on.get_credentials_action, self._on_get_credentials)
        framework.observe(self.on.list_scalesets_action, self._on_list_scalesets)
        framework.observe(self.on.rotate_credentials_action, self._on_rotate_credentials)
        framework.observe(self.on.collect_unit_status, self._on_collect_unit_status)
        framework.observe(self.on.collect_app_status, self._on_collect_app_status)

    @property
    def _database_relation(self) -> str:
        return "database"

    def _certificate_names(self) -> garm_tls.CertificateNames | None:
        """What GARM's certificate must cover; None while the config is invalid (it blocks)."""
        try:
            state = self._state()
        except InvalidConfigError:
            return None
        return garm_tls.certificate_names(state.config.external_url, self._address())

    # The reconcile ------------------------------------------------------------------------

    def _reconcile(self, _: ops.EventBase) -> None:
        if not self.unit.is_leader():
            # First, whatever else fails: a former leader must not keep GARM running.
            self._workload.stop()
            self._publish_running(False)
        try:
            state = self._state()
        except InvalidConfigError as error:
            state, status = None, charm_status.invalid_config(error)
        else:
            status = self._reconcile_unit(state)
        self._status = charm_status.bounded(status)
        logger.info("reconcile: %s %s", self._status.name, self._status.message)
        if state is not None:
            # A bad config leaves what was published and scheduled as it is until it is fixed.
            self._publish_cos_agent(state)
            self._schedule_tick(state)

    def _reconcile_unit(self, state: CharmState) -> ops.StatusBase:
        self._open_api_port(state.config.port if state.leader else None)
        problem = self._install(state.proxy)
        if problem is not None:
            return problem
        version = self._workload.version()
        self.unit.set_workload_version(version)
        if not state.leader:
            return charm_status.standing_by(self._database.state())
        return self._run_garm(state.config, state.proxy, version)

    def _open_api_port(self, port: int | None) -> None:
        """Open GARM's API port where GARM runs (the leader), so `juju expose` reaches it.

        A standby unit runs no GARM and opens nothing; a changed port closes the old one.
        """
        try:
            self.unit.set_ports(*([port] if port is not None else []))
        except ops.ModelError as error:
            logger.warning("could not open GARM's port (retried at the next hook): %s", error)

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

    def _schedule_tick(self, state: CharmState) -> None:
        """Keep the reconcile tick on the leader at `reconcile-interval`; nowhere else.

        A systemd failure is logged and retried at the next hook, which reconciles anyway.
        """
        interval = state.config.reconcile_interval
        if not state.leader or not interval:
            self._tick.remove()
            return
        try:
            self._tick.install(TickSchedule(self.unit.name, self.charm_dir, interval))
        except TickError as error:
            logger.warning("reconcile tick not installed (hooks still reconcile): %s", error)

    def _install(self, proxy: ProxyConfig) -> ops.StatusBase | None:
        if not self._workload.is_installed():
            self.unit.status = ops.MaintenanceStatus("installing GARM")
        try:
            self._workload.install(
                self._resource(GARM_RESOURCE), self._resource(PROVIDER_RESOURCE), proxy
            )
        except WorkloadError as error:
            return charm_status.install_failed(error)
        return None

    def _run_garm(self, config: CharmConfig, proxy: ProxyConfig, version: str) -> ops.StatusBase:
        creds = ensure_secrets(self._secrets)
        if creds is None:
            return charm_status.secrets_created()
        database = self._database.state()
        unusable = charm_status.database_unusable(database, version)
        if unusable is not None:
            return unusable
        tls = self._certificates.tls_files()
        client = _local_client(config, tls)
        backend = POSTGRESQL if database.postgres is not None else SQLITE
        problem = self._backend_problem(backend, client, creds)
        if problem is not None:
            return charm_status.backend_switch_refused(problem)
        handover = self._take_over(sqlite=backend == SQLITE)
        if handover is not None:
            return handover
        desired = self._desired()
        garm_config = self._garm_config(
            config, creds, database, proxy, desired, version=version, tls=tls
        )
        status = (
            self._start(client, garm_config, backend)
            or self._bootstrap(client, config, creds, tls)
            or self._keep_metrics_token(client, creds)
        )
        if status is not None:
            return status
        return charm_status.certificate_awaited(
            self._reconcile_objects(client, config, desired, garm_config),
            serving_tls=tls is not None,
            requested=self._certificates.requested(),
            refusal=self._certificates.refusal,
        )

    def _start(
        self, client: GarmClient, garm_config: GarmConfig, backend: str
    ) -> ops.StatusBase | None:
        """Render and (re)start GARM as needed; a restarted GARM is waited for, boundedly."""
        try:
            started = self._workload.apply(garm_config)
        except WorkloadError as error:
            return charm_status.not_started(error)
        self._workload.record_backend(backend)
        self._publish_running(True)
        if started and not wait_until_serving(client):
            return charm_status.starting()
        return None

    def _reconcile_objects(
        self,
        client: GarmClient,
        config: CharmConfig,
        desired: DesiredState,
        garm_config: GarmConfig,
    ) -> ops.StatusBase:
        settings = _reconcile_settings(config)
        try:
            outcome = reconcile_objects(
                client, desired, now=utc_now(), settings=settings, proxy=garm_config.proxy
            )
            kept = self._release_unused_providers(garm_config, outcome.report.provider_scalesets)
        except (GarmError, WorkloadError) as error:
            return charm_status.interrupted(error)
        return charm_status.objects_reconciled(outcome, kept, has_specs=bool(desired.specs))

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

    def _desired(self) -> DesiredState:
        """What the configurators ask for, with the debug-ssh relay for every scale set."""
        relay = read_debug_ssh(self.model.relations[debug_ssh.RELATION], self._last_relay())
        self._stored.debug_ssh = dataclasses.asdict(relay) if relay is not None else {}
        debug_env = tuple(relay.env_entries().items()) if relay is not None else ()
        relations = self.model.relations[CONFIGURATOR_RELATION]
        return read_configurators(self.model, relations, debug_env)

    def _last_relay(self) -> DebugSsh | None:
        last = dict(self._stored.debug_ssh)
        return DebugSsh(**last) if last else None

    def _garm_config(
        self,
        config: CharmConfig,
        creds: BootstrapSecrets,
        database: DatabaseState,
        proxy: ProxyConfig,
        desired: DesiredState,
        *,
        version: str,
        tls: TlsFiles | None,
    ) -> GarmConfig:
        return GarmConfig(
            jwt_secret=creds.jwt_secret,
            db_passphrase=creds.db_passphrase,
            port=config.port,
            log_level=config.log_level,
            postgres=database.postgres,
            providers=desired.providers,
            proxy=proxy,
            # Until this hook's pass shows which of them GARM still uses, keep every provider
            # whose configurator is gone: its scale sets may still have runners to delete.
            kept_providers=retained_providers(
                [provider.name for provider in desired.providers],
                self._workload.rendered_provider_names(),
                in_use=None,
            ),
            garm_version=version,
            tls=tls,
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

    def _take_over(self, *, sqlite: bool) -> ops.StatusBase | None:
        """Claim GARM for this leader; None when it may run it now (ADR 0005)."""
        peers = self.model.get_relation(PEER_RELATION)
        if peers is None:
            return None
        claim = HostClaim.from_app_data(peers.data[self.app])
        running = {unit.name: reports_running(peers.data[unit]) for unit in peers.units}
        decision = decide(
            self.unit.name,
            claim,
            running,
            sqlite=sqlite,
            now=utc_now(),
        )
        if decision.claim != claim:
            peers.data[self.app].update(decision.claim.as_app_data())
        status = charm_status.handed_over(decision)
        if status is not None:
            self._workload.stop()
            self._publish_running(False)
        return status

    def _publish_running(self, running: bool) -> None:
        """Tell the other units whether this one runs GARM."""
        peers = self.model.get_relation(PEER_RELATION)
        if peers is not None:
            peers.data[self.unit].update(running_flag(running))

    def _bootstrap(
        self,
        client: GarmClient,
        config: CharmConfig,
        creds: BootstrapSecrets,
        tls: TlsFiles | None,
    ) -> ops.StatusBase | None:
        urls = ControllerUrls.from_base(
            _public_url(config, self._address(), tls), tls.ca.encode() if tls else b""
        )
        try:
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
        if not self.model.relations[cos_agent.RELATION_NAME]:
            return None
        if token_is_current(self._workload.metrics_token(), creds.jwt_secret, utc_now()):
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

    # Other events -------------------------------------------------------------------------

    def _on_remove(self, _: ops.RemoveEvent) -> None:
        self._tick.remove()
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
        url = _public_url(state.config, self._address(), self._certificates.tls_files())
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
            client = _local_client(config, self._certificates.tls_files())
            client.login(creds.admin_username, creds.admin_password)
            listing = list_scalesets(
                client,
                self._desired(),
                now=utc_now(),
                settings=_reconcile_settings(config),
            )
        except (InvalidConfigError, GarmError) as error:
            event.fail(str(error))
            return
        event.set_results(
            {
                "count": len(listing.scalesets),
                "scalesets": json.dumps(listing.scalesets),
                "changeovers": json.dumps(listing.changeovers),
            }
        )

    def _on_rotate_credentials(self, event: ops.ActionEvent) -> None:
        """New JWT key (and admin password), then one reconcile: one restart, a new login."""
        if not self.unit.is_leader():
            event.fail("GARM runs on the leader only: juju run garm/leader rotate-credentials")
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
                rotate_admin_password(self._secrets, self._reset_admin_password)
            rotate_jwt_secret(self._secrets)
        except RotationError as error:
            event.fail(f"{error}; nothing else changed, run the action again")
            return
        self._reconcile(event)
        status = self._status or ops.UnknownStatus()
        rotated = "jwt-secret,admin-password" if password else "jwt-secret"
        event.set_results({"rotated": rotated, "status": f"{status.name}: {status.message}"})
        if not isinstance(status, ops.ActiveStatus):
            event.fail(f"rotated {rotated}, but GARM is not active yet: {status.message}")

    def _reset_admin_password(self, username: str, password: str) -> None:
        try:
            self._workload.reset_admin_password(username, password)
        except WorkloadError as error:
            raise RotationError(str(error)) from None

    def _on_collect_unit_status(self, event: ops.CollectStatusEvent) -> None:
        if self._status is not None:
            event.add_status(self._status)

    def _on_collect_app_status(self, event: ops.CollectStatusEvent) -> None:
        if self._status is not None:
            event.add_status(self._status)

    # Helpers ------------------------------------------------------------------------------

    def _resource(self, name: str) -> Path | None:
        try:
            return self.model.resources.fetch(name)
        except (ops.ModelError, NameError):
            return None

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


def _local_client(config: CharmConfig, tls: TlsFiles | None) -> GarmClient:
    """A client for GARM on this machine; with TLS it verifies GARM against the relation's CA.

    `127.0.0.1` is among the certificate's names (`garm_tls.certificate_names`).
    """
    if tls is None:
        return GarmClient(f"http://127.0.0.1:{config.port}")
    return GarmClient(f"https://{garm_tls.LOCAL_URL_HOST}:{config.port}", ca_cert=tls.ca)


def _public_url(config: CharmConfig, address: str, tls: TlsFiles | None) -> str:
    """Where runners and GitHub reach GARM: `external-url` as given, else the unit's address.

    The default follows what GARM serves (https with a certificate); an `external-url` is the
    operator's (a proxy in front of GARM may speak either), so it is never rewritten.
    """
    url = config.base_url(address)
    if tls is not None and not config.external_url:
        return "https://" + url.removeprefix("http://")
    return url


def _reconcile_settings(config: CharmConfig) -> ReconcileSettings:
    return ReconcileSettings(
        handover_grace=config.handover_grace,
        drain_timeout=config.drain_timeout,
        handover_timeout=config.handover_timeout,
    )


def utc_now() -> datetime.datetime:
    """The time every decision of the charm is taken at: the one clock tests and the demo set.

    GARM stamps its objects with its own clock on this machine; the hand-over grace and the drain
    deadline compare against this one.
    """
    return datetime.datetime.now(datetime.UTC)


def _garm_has_objects(client: GarmClient, creds: BootstrapSecrets) -> bool | None:
    """Whether GARM holds credentials or scale sets; None when it cannot tell."""
    try:
        client.login(creds.admin_username, creds.admin_password)
        return bool(client.list_github_credentials() or client.list_scalesets())
    except GarmNotInitialised:
        return False
    except GarmError:
        return None


if __name__ == "__main__":  # pragma: nocover
    ops.main(GarmCharm)
