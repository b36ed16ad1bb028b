"""Every key of the peer relation's databags, named once (the adapter writes only these).

The application databag is the leader's: what any later leader must find (the lease, the
claim, the pause and its holds, the teardown, the kept debug-ssh relay). A unit's databag says
what that unit does with GARM. A new key is added here, to `APP_KEYS` or `UNIT_KEYS`, and read
or written through `relations.peers.PeerData`; tests/unit/test_peers_adapter.py fails on a
databag reached any other way.
"""

from __future__ import annotations

from typing import Final

RELATION: Final = "garm-peers"

# GARM's lease (ADR 0019): who may run GARM, and until when.
LEASE_HOLDER_KEY: Final = "garm-lease-holder"
LEASE_UNTIL_KEY: Final = "garm-lease-until"
# The hand-over's claim (ADR 0005): the unit the leader wants to run GARM, and since when.
HOST_KEY: Final = "garm-host"
HOST_SINCE_KEY: Final = "garm-host-since"
# The pause (ADR 0024): since when, and who holds it.
PAUSED_SINCE_KEY: Final = "maintenance-since"
PAUSED_BY_KEY: Final = "maintenance-by"
# The pauses the drain clock stood still for, as JSON [[start, end], ...] (ISO 8601, ADR 0042).
HOLDS_KEY: Final = "drain-clock-holds"
# When the last teardown action began. While it is there, no hook re-creates the charm's scale
# sets and a new leader carries on (until `resume`, ADR 0036).
TEARDOWN_SINCE_KEY: Final = "teardown-since"
# The last valid debug-ssh relay, as JSON, where a new leader finds it (ADR 0014).
DEBUG_SSH_RELAY_KEY: Final = "debug-ssh-relay"

# A unit's own databag: whether it runs GARM, and the claim it saw when it stopped it.
RUNNING_KEY: Final = "garm-running"
# A non-leader that stopped GARM echoes the claim it saw: proof it stopped after losing the lead.
STOPPED_FOR_KEY: Final = "garm-stopped-for"

APP_KEYS: Final = frozenset(
    {
        LEASE_HOLDER_KEY,
        LEASE_UNTIL_KEY,
        HOST_KEY,
        HOST_SINCE_KEY,
        PAUSED_SINCE_KEY,
        PAUSED_BY_KEY,
        HOLDS_KEY,
        TEARDOWN_SINCE_KEY,
        DEBUG_SSH_RELAY_KEY,
    }
)
UNIT_KEYS: Final = frozenset({RUNNING_KEY, STOPPED_FOR_KEY})
