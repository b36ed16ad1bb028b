"""Fencing: one GARM per database, through a lease the unit running GARM renews (ADR 0019).

The leader keeps a lease in the peer relation's application data: who holds it and until when.
Juju commits that data only when the hook ends well, so a unit trusts only the lease as it was
committed (read before this hook writes anything): GARM runs here only while that committed
lease names this unit and has not ended, and the end handed to the local watchdog
(`workload.lease`) is that committed end, never the one this hook is about to publish. A unit
that cannot renew (cut off from the controller, no longer the leader, hooks stuck) therefore
stops GARM by itself at most `LEASE_LENGTH` after its last committed renewal.

A new leader takes the lease when the holder says it stopped GARM, or `TAKEOVER_MARGIN` after
the holder's lease ended: the margin covers the watchdog's period, GARM's stop and clock skew
between machines. Taking the lease is committed by one hook and used by the next.

Pure decisions only: `relations.peers.PeerData` reads and writes the relation data.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Final

from relations.peers.keys import LEASE_HOLDER_KEY, LEASE_UNTIL_KEY
from workload.lease import WATCH_PERIOD

# Renewed by leader hooks: the reconcile tick (default every minute) and update-status (every
# 5 minutes by default) each come well within it.
LEASE_LENGTH: Final = datetime.timedelta(minutes=10)
# A lease is renewed only once less than this is left of it. Every change of the peer
# application data gives every standby unit a hook, so renewing at each leader hook (each tick)
# would run a hook on every standby every minute; this way at most one in 3 minutes, while any
# leader hook at most 7 minutes apart (update-status's default is 5) still renews in time.
RENEW_WHEN_LEFT: Final = datetime.timedelta(minutes=7)
# systemd waits up to 90 s for GARM to stop (TimeoutStopSec's default).
GARM_STOP_ALLOWANCE: Final = datetime.timedelta(seconds=90)
CLOCK_SKEW_ALLOWANCE: Final = datetime.timedelta(seconds=75)
TAKEOVER_MARGIN: Final = WATCH_PERIOD + GARM_STOP_ALLOWANCE + CLOCK_SKEW_ALLOWANCE
TAKING_LEASE: Final = (
    "took GARM's lease: GARM starts at the next hook (the reconcile tick or update-status)"
)


@dataclasses.dataclass(frozen=True)
class Lease:
    """Who may run GARM, and until when."""

    holder: str
    until: datetime.datetime

    @classmethod
    def from_app_data(cls, data: Mapping[str, str]) -> Lease | None:
        """The lease in the peer application data; None when absent or unreadable."""
        found = unit_and_time(data, LEASE_HOLDER_KEY, LEASE_UNTIL_KEY)
        return None if found is None else cls(*found)

    def as_app_data(self) -> dict[str, str]:
        """The lease as peer application data."""
        return {LEASE_HOLDER_KEY: self.holder, LEASE_UNTIL_KEY: self.until.isoformat()}


def unit_and_time(
    data: Mapping[str, str], unit_key: str, time_key: str
) -> tuple[str, datetime.datetime] | None:
    """A unit name and a timezone-aware time from peer application data; None when unreadable."""
    unit = data.get(unit_key, "")
    try:
        moment = datetime.datetime.fromisoformat(data.get(time_key, ""))
    except ValueError:
        return None
    if not unit or moment.tzinfo is None:
        return None
    return unit, moment


@dataclasses.dataclass(frozen=True)
class LeaseDecision:
    """What the leader does with the lease in this hook.

    Attributes:
        run_until: the committed end of this unit's lease when it may run GARM now, else None.
        publish: the lease to write to the application data, or None to leave it.
        message: why GARM does not run yet (empty when it runs).
    """

    run_until: datetime.datetime | None
    publish: Lease | None
    message: str = ""


def renew(me: str, committed: Lease | None, now: datetime.datetime) -> LeaseDecision:
    """Every leader hook, whatever else fails: extend this unit's own lease, never take one.

    A leader whose config is invalid keeps GARM running (nothing running is removed), so its
    lease must not lapse for that.
    """
    if committed is None or committed.holder != me:
        return LeaseDecision(None, None)
    return _held(me, committed, now)


def decide(
    me: str,
    committed: Lease | None,
    holder_stopped: bool,
    *,
    now: datetime.datetime,
) -> LeaseDecision:
    """Whether the leader `me` may run GARM now, and the lease to publish.

    Args:
        me: the leader's unit name.
        committed: the lease as Juju committed it before this hook, if any.
        holder_stopped: whether the lease's holder says, in its own unit data, that it stopped
            GARM (a unit that left the relation, or cannot run hooks, says nothing).
        now: the current time (timezone-aware).

    Returns:
        The decision.
    """
    mine = Lease(me, now + LEASE_LENGTH)
    if committed is not None and committed.holder == me:
        return _held(me, committed, now)
    # No lease at all (a new deployment, or the revision before leases) is taken like any
    # other: used only once committed, so a hook that dies here leaves no GARM unfenced.
    if committed is None or holder_stopped or now >= committed.until + TAKEOVER_MARGIN:
        return LeaseDecision(None, mine, TAKING_LEASE)
    free = committed.until + TAKEOVER_MARGIN
    return LeaseDecision(
        None,
        None,
        f"taking over GARM: {committed.holder} may run it until its lease ends "
        f"({free:%H:%M:%S} UTC)",
    )


def _held(me: str, committed: Lease, now: datetime.datetime) -> LeaseDecision:
    renewed = Lease(me, now + LEASE_LENGTH)
    if committed.until - now > RENEW_WHEN_LEFT:
        return LeaseDecision(committed.until, None)
    if committed.until > now:
        return LeaseDecision(committed.until, renewed)
    return LeaseDecision(None, renewed, TAKING_LEASE)
