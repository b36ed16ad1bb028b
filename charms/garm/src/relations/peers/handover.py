"""Which unit may run GARM, decided from the peer relation (docs/adr/0005-service-handover.md).

Only the leader runs GARM (ADR 0003), but Juju tells a former leader nothing when it loses
leadership: it would keep GARM running until its next hook. The leader therefore claims the
service in the peer relation's application data; every other unit stops GARM when it sees the
claim and says so in its unit data, and the new leader starts GARM only once no other unit says
it runs it, or once the claim is older than a deadline (a unit on a dead machine never answers).

Pure decisions only: `relations.peers.PeerData` reads and writes the relation data.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Mapping
from typing import Final

from relations.peers.keys import HOST_KEY, HOST_SINCE_KEY, RUNNING_KEY, STOPPED_FOR_KEY
from relations.peers.lease import unit_and_time

# A former leader stops GARM within seconds of the claim; the deadline only matters for a unit
# that cannot run hooks (machine down), and is one default update-status interval.
TAKEOVER_DEADLINE: Final = datetime.timedelta(minutes=5)


@dataclasses.dataclass(frozen=True)
class HostClaim:
    """The unit that runs GARM, as the leader wrote it, and since when."""

    unit: str
    since: datetime.datetime

    @classmethod
    def from_app_data(cls, data: Mapping[str, str]) -> HostClaim | None:
        """The claim in the peer application data; None when absent or unreadable."""
        found = unit_and_time(data, HOST_KEY, HOST_SINCE_KEY)
        return None if found is None else cls(*found)

    def as_app_data(self) -> dict[str, str]:
        """The claim as peer application data."""
        return {HOST_KEY: self.unit, HOST_SINCE_KEY: self.since.isoformat()}


class Verdict(enum.Enum):
    """What the leader does with GARM in this reconcile."""

    RUN = "run"
    WAIT = "wait"
    BLOCKED = "blocked"


@dataclasses.dataclass(frozen=True)
class Decision:
    """The leader's decision, the claim to publish, and a status message when not running."""

    verdict: Verdict
    claim: HostClaim
    message: str = ""


def decide(
    me: str,
    claim: HostClaim | None,
    peers_running: Mapping[str, bool],
    *,
    sqlite: bool,
    now: datetime.datetime,
) -> Decision:
    """Whether the leader `me` may run GARM now.

    Args:
        me: the leader's unit name.
        claim: the claim currently in the peer application data, if any.
        peers_running: every other unit in the peer relation -> whether it says it runs GARM.
        sqlite: whether GARM keeps its state in SQLite (on the machine that ran it).
        now: the current time (timezone-aware).

    Returns:
        The decision, with the claim the leader must publish.
    """
    previous = claim.unit if claim is not None else ""
    if sqlite and previous not in ("", me) and previous in peers_running:
        return Decision(
            Verdict.BLOCKED,
            claim or HostClaim(me, now),
            f"GARM's SQLite data is on {previous}: remove {me} to hand leadership back, or "
            f"remove {previous} to start afresh",
        )
    own = claim if claim is not None and claim.unit == me else HostClaim(me, now)
    still_running = sorted(unit for unit, running in peers_running.items() if running)
    if not still_running or now - own.since >= TAKEOVER_DEADLINE:
        return Decision(Verdict.RUN, own)
    minutes = int(TAKEOVER_DEADLINE.total_seconds() // 60)
    return Decision(
        Verdict.WAIT,
        own,
        f"taking over GARM: waiting for {', '.join(still_running)} to stop it "
        f"(at most {minutes} min)",
    )


def running_flag(running: bool) -> dict[str, str]:
    """A unit's own peer data saying whether it runs GARM."""
    return {RUNNING_KEY: "true" if running else "false"}


def reports_running(data: Mapping[str, str]) -> bool:
    """Whether a peer unit's data says it runs GARM (absent means it never did)."""
    return data.get(RUNNING_KEY, "") == "true"


def stopped_for(claim: HostClaim | None) -> dict[str, str]:
    """A non-leader's own peer data after it stopped GARM, seeing `claim` (ADR 0019).

    The claim is the new leader's, made after leadership moved: echoing it says this unit
    stopped GARM as a non-leader, which never starts it again, so the new leader need not wait
    for this unit's lease to end. A flag alone would not say that: a leader that stopped GARM
    and started it again in a hook Juju never committed still shows `false`.
    """
    return {STOPPED_FOR_KEY: claim.since.isoformat()} if claim is not None else {}


def has_stopped_for(data: Mapping[str, str], claim: HostClaim) -> bool:
    """Whether a unit's peer data says it stopped GARM seeing this very claim."""
    return data.get(STOPPED_FOR_KEY, "") == claim.since.isoformat()
