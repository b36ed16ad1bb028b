"""The surge budget: how many changeovers run at once, and the queue of the others (ADR 0038).

A changeover boots its replacement's idle runners before its predecessor is retired, so while
it is in flight the fleet holds that many more runners. The budget is a number of such extra
runners: each changeover in flight holds its replacement's min idle (at least one: a
replacement without idle runners still doubles a scale set and its round trips to GitHub), and
once handed over, the runners its retired predecessors still hold that are not running a job
(GARM removes them soon). Everything here is pure and re-derived from what GARM shows each pass.

The changeovers that do not fit wait in a queue, oldest change first: the change's time is the
`queued-at` the charm stamps on the serving scale set the first time it queues it (a change not
stamped yet is this pass's), then the logical name. The queue is served strictly in order, so a
large changeover is never overtaken forever by small ones; a changeover larger than the whole
budget starts alone, once nothing else holds any of it.

A rolling refresh (ADR 0022) and a label retry (a further attempt after GitHub dropped labels)
boot extra idle runners too, and wait in the same queue under their own keys (`refresh_key`,
`retry_key`): a refresh holds the min idle it raises GARM's counts by, while GARM runs with
them; a retry, once created, holds its attempt's min idle while the attempt before it serves.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence

# 0: no budget, every changeover starts at once (the behaviour before ADR 0038).
UNLIMITED = 0


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A changeover that has not started: its spec, what it will hold, when it was queued.

    `repairs`: the changeover in flight it finishes (a label retry's), by its key in `held`;
    a repair goes before every change not started, as finishing one frees the budget sooner.
    """

    logical: str
    cost: int
    queued_at: datetime.datetime | None = None
    repairs: str | None = None


@dataclasses.dataclass(frozen=True)
class Admission:
    """Which changeovers start this pass and which wait, in the queue's order.

    Attributes:
        started: logical names of the candidates that start now.
        queued: logical name -> place in the queue (1: next to start).
        held: extra runners the changeovers in flight hold once `started` have started.
        in_flight: changeovers holding part of the budget, `started` included.
    """

    started: frozenset[str] = frozenset()
    queued: Mapping[str, int] = dataclasses.field(default_factory=dict[str, int])
    held: int = 0
    in_flight: int = 0


def admit(
    held: Mapping[str, int],
    candidates: Sequence[Candidate],
    *,
    budget: int,
    now: datetime.datetime,
) -> Admission:
    """Start the oldest candidates that fit in what `held` (logical -> extra runners) leaves.

    Args:
        held: the changeovers in flight and the extra runners each holds.
        candidates: the changeovers waiting to start.
        budget: extra runners all changeovers together may hold; `UNLIMITED`: no bound.
        now: the time of a candidate not stamped yet.
    """
    used = sum(held.values())
    order = sorted(candidates, key=lambda c: (not c.repairs, c.queued_at or now, c.logical))
    started: list[str] = []
    queued: dict[str, int] = {}
    repaired = {c.repairs for c in candidates if c.repairs}
    for candidate in order:
        # Every holder waits for its own repair: nothing would ever free the budget otherwise.
        stuck = (
            bool(candidate.repairs) and not started and {k for k in held if held[k]} <= repaired
        )
        fits = budget == UNLIMITED or used + candidate.cost <= budget or used == 0 or stuck
        if queued or not fits:
            queued[candidate.logical] = len(queued) + 1
            continue
        started.append(candidate.logical)
        used += candidate.cost
    in_flight = len((set(held) - set(queued)) | set(started))
    return Admission(frozenset(started), queued, used, in_flight)


def refresh_key(logical: str) -> str:
    """The queue's key of a spec's rolling refresh (ADR 0022): no logical name has a space."""
    return f"{logical} refresh"


def retry_key(logical: str) -> str:
    """The queue's key of a spec's label retry, a further attempt under a new name."""
    return f"{logical} retry"
