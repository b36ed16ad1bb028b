"""The peer relation's databags, read once per hook and written once (ADR 0045).

Juju commits relation data only when a hook ends well, so this hook's writes are kept here and
go out together as the hook ends (the framework's pre-commit): one write per databag, of the
keys whose value changed. Each databag is read once, at its first use; every read after that
sees this hook's writes on top of it, except `committed_lease`, which is the lease as Juju
committed it before this hook: what fencing trusts (ADR 0019). Without the relation (the first
hooks) nothing is read and nothing is written. The keys are in `keys`; what they decide is pure
and lives beside this module (`lease`, `handover`, `pause`).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping

import ops

from relations.peers import keys
from relations.peers.handover import (
    HostClaim,
    has_stopped_for,
    reports_running,
    running_flag,
    stopped_for,
)
from relations.peers.lease import Lease
from relations.peers.pause import Maintenance, cleared, holds, resumed
from scaleset_reconciler.drain_clock import Hold

logger = logging.getLogger(__name__)

# The kept debug-ssh relay that says "no relay" (`relations.debug_ssh.kept_value(None)`).
_NO_RELAY = "{}"


class PeerData(ops.Object):
    """The charm's one way into the peer relation's databags (`keys` names every key)."""

    def __init__(self, charm: ops.CharmBase) -> None:
        """Read nothing yet; write this hook's changes when the framework commits."""
        super().__init__(charm, keys.RELATION)
        self._relation: tuple[ops.Relation | None] | None = None
        # Each databag as this hook read it (by unit or application name), never written to.
        self._read: dict[str, dict[str, str]] = {}
        self._app_writes: dict[str, str] = {}
        self._unit_writes: dict[str, str] = {}
        charm.framework.observe(charm.framework.on.pre_commit, self._write)

    # What the databags say ------------------------------------------------------------

    @property
    def up(self) -> bool:
        """Whether the peer relation is there (it is not in the first hooks)."""
        return self._peers() is not None

    def committed_lease(self) -> Lease | None:
        """GARM's lease as Juju committed it, before this hook wrote (ADR 0019)."""
        return Lease.from_app_data(self._app_read())

    def claim(self) -> HostClaim | None:
        """The unit the leader claimed GARM for (ADR 0005), this hook's claim included."""
        return HostClaim.from_app_data(self._app())

    def others_running(self) -> dict[str, bool]:
        """Every other unit -> whether it says it runs GARM."""
        peers = self._peers()
        units = peers.units if peers is not None else set[ops.Unit]()
        return {unit.name: reports_running(self._databag(unit)) for unit in units}

    def holder_stopped(self, lease: Lease | None, claim: HostClaim) -> bool:
        """Whether the lease's holder, as a non-leader, stopped GARM seeing this leader's claim."""
        peers = self._peers()
        if lease is None or peers is None:
            return False
        return any(
            unit.name == lease.holder and has_stopped_for(self._databag(unit), claim)
            for unit in peers.units
        )

    def pause_in_force(self) -> Maintenance | None:
        """The pause in force (ADR 0024), or None."""
        return Maintenance.from_app_data(self._app())

    def drain_holds(self, now: datetime.datetime) -> tuple[Hold, ...]:
        """The pauses the drain clock stood still for, a pause in force until `now` (ADR 0042)."""
        data = self._app()
        return holds(data, Maintenance.from_app_data(data), now)

    def teardown_since(self) -> datetime.datetime | None:
        """When the last teardown action began (ADR 0036); None if none did since `resume`."""
        return teardown_since(self._app())

    def kept_relay(self) -> str | None:
        """The debug-ssh relay a leader kept (JSON, `relations.debug_ssh.kept_relay`), or None.

        None when no leader kept one: the unit's own copy then counts.
        """
        return self._app().get(keys.DEBUG_SSH_RELAY_KEY)

    # What this hook changes (written as the hook ends) --------------------------------------

    def publish_lease(self, lease: Lease) -> None:
        """Publish GARM's lease; it is used once committed (ADR 0019)."""
        self._app_writes |= lease.as_app_data()

    def publish_claim(self, claim: HostClaim) -> None:
        """Claim GARM for the leader's unit (ADR 0005)."""
        self._app_writes |= claim.as_app_data()

    def say_running(self, running: bool, *, acknowledge_claim: bool = False) -> None:
        """Tell the other units whether this one runs GARM (and, stopped, for which claim)."""
        data = running_flag(running)
        try:
            if acknowledge_claim and self.up:
                data |= stopped_for(self.claim())
        except ops.ModelError as error:
            # Cut off from the controller: GARM is stopped all the same; said at the next hook.
            logger.warning("could not say whether this unit runs GARM: %s", error)
            return
        self._unit_writes |= data

    def set_pause(self, pause: Maintenance) -> None:
        """Pause the charm's hands on GARM until `resume` (ADR 0024)."""
        self._app_writes |= pause.as_app_data()

    def clear_pause(self) -> None:
        """Remove the pause (a restore that took its own pause ends it)."""
        self._app_writes |= cleared()

    def resume(self, now: datetime.datetime) -> datetime.timedelta:
        """End any pause (kept as a hold) and teardown; how long the pause held the drain clock."""
        ended, held = resumed(self.pause_in_force(), self._app(), now)
        self._app_writes |= {**ended, keys.TEARDOWN_SINCE_KEY: ""}
        return held

    def begin_teardown(self, since: datetime.datetime) -> None:
        """Keep the scale sets down from `since` until `resume`, for any leader (ADR 0036)."""
        self._app_writes[keys.TEARDOWN_SINCE_KEY] = since.isoformat()

    def keep_relay(self, value: str) -> None:
        """Keep the last valid debug-ssh relay (`relations.debug_ssh.kept_value`) for any leader.

        "No relay" replaces only a relay kept before: where none ever was, the data stays.
        """
        if value == _NO_RELAY and keys.DEBUG_SSH_RELAY_KEY not in self._app():
            return
        self._app_writes[keys.DEBUG_SSH_RELAY_KEY] = value

    # Reading once, writing once -------------------------------------------------------------

    def _write(self, _: ops.EventBase) -> None:
        """Write each databag once, with this hook's writes (ops sends only what changed)."""
        if self._relation is None or self._relation[0] is None:
            return  # never read, or no relation: nothing to write
        peers = self._relation[0]
        if self._app_writes:
            peers.data[self.model.app].update(self._app_writes)
        try:
            if self._unit_writes:
                peers.data[self.model.unit].update(self._unit_writes)
        except ops.ModelError as error:
            # Cut off from the controller: GARM is stopped all the same; said at the next hook.
            logger.warning("could not say whether this unit runs GARM: %s", error)

    def _peers(self) -> ops.Relation | None:
        if self._relation is None:
            self._relation = (self.model.get_relation(keys.RELATION),)
        return self._relation[0]

    def _app_read(self) -> Mapping[str, str]:
        return self._databag(self.model.app)

    def _app(self) -> dict[str, str]:
        """The application databag as read, with this hook's writes ("" deletes a key)."""
        merged = {**self._app_read(), **self._app_writes}
        return {key: value for key, value in merged.items() if value}

    def _databag(self, entity: ops.Unit | ops.Application) -> Mapping[str, str]:
        peers = self._peers()
        if peers is None:
            return {}
        if entity.name not in self._read:
            self._read[entity.name] = dict(peers.data[entity])
        return self._read[entity.name]


def teardown_since(data: Mapping[str, str]) -> datetime.datetime | None:
    """When the last teardown action began, from the peer application data; None if none did.

    An unreadable time still holds the teardown (the epoch: its deadline has passed), so a typo
    in the data never brings the scale sets back.
    """
    text = data.get(keys.TEARDOWN_SINCE_KEY, "")
    if not text:
        return None
    try:
        since = datetime.datetime.fromisoformat(text)
    except ValueError:
        return datetime.datetime.fromtimestamp(0, datetime.UTC)
    return since if since.tzinfo else since.replace(tzinfo=datetime.UTC)
