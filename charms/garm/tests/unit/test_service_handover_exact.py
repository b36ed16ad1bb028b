"""The hand-over's decisions and peer data, pinned where the first mutation run let changes by.

Written from the survivors of a mutation run of `relations.service_handover`, now
`relations.peers.handover` (docs/reference/testing.md).
"""

from __future__ import annotations

import datetime

from relations.peers.handover import (
    HostClaim,
    Verdict,
    decide,
    has_stopped_for,
    stopped_for,
)
from relations.peers.keys import STOPPED_FOR_KEY

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def test_a_leader_blocked_by_sqlite_on_another_unit_keeps_that_units_claim():
    """Arrange: SQLite; `garm/0` holds the claim and is still in the relation, stopped.

    Act: `garm/1`, the new leader, decides.
    Assert: Blocked, and the claim it publishes is still `garm/0`'s, unchanged: the data stays
    on `garm/0`, so a later decision still knows where it is.
    """
    claim = HostClaim("garm/0", NOW - datetime.timedelta(hours=1))

    decision = decide("garm/1", claim, {"garm/0": False}, sqlite=True, now=NOW)

    assert (decision.verdict, decision.claim) == (Verdict.BLOCKED, claim)


def test_waiting_for_several_units_names_each_once():
    """Arrange: `garm/2` and `garm/0` still run GARM; the new claim is a minute old.

    Act: `garm/1` decides. Assert: Wait, naming both units (sorted, comma-separated) and the
    five-minute bound, word for word.
    """
    claim = HostClaim("garm/1", NOW - datetime.timedelta(minutes=1))

    decision = decide("garm/1", claim, {"garm/2": True, "garm/0": True}, sqlite=False, now=NOW)

    assert (decision.verdict, decision.message) == (
        Verdict.WAIT,
        "taking over GARM: waiting for garm/0, garm/2 to stop it (at most 5 min)",
    )


def test_a_unit_that_stopped_for_a_claim_says_so_for_that_claim_only():
    """Arrange: the leader's claim, and an older one.

    Act: the peer data a unit writes after stopping GARM, with the claim and with none.
    Assert: with the claim, the data names its time and `has_stopped_for` reads it back for that
    claim only; without a claim, the unit writes nothing and has stopped for no claim.
    """
    claim = HostClaim("garm/1", NOW)
    older = HostClaim("garm/0", NOW - datetime.timedelta(hours=1))

    data = stopped_for(claim)

    assert data == {STOPPED_FOR_KEY: "2026-11-30T12:00:00+00:00"}
    assert (has_stopped_for(data, claim), has_stopped_for(data, older)) == (True, False)
    assert stopped_for(None) == {}
    assert has_stopped_for({}, claim) is False
