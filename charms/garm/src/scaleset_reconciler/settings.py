"""The operator's policy for changeovers, one setting a field (pure).

The charm builds it from its config; every step of the planner reads it (`plan`).
"""

from __future__ import annotations

import dataclasses
import datetime

from scaleset_reconciler.drain_clock import Hold
from scaleset_reconciler.naming import NAME_BUDGET
from scaleset_reconciler.refresh import DEFAULT_SURGE
from scaleset_reconciler.surge import UNLIMITED


@dataclasses.dataclass(frozen=True)
class ReconcileSettings:
    """Operator policy for changeovers.

    Attributes:
        handover_grace: how long a new scale set must have existed (or been re-enabled) before
            its predecessors are retired, so its listener is up at GitHub.
        drain_timeout: how long a retired scale set may keep runners (jobs) before they are
            force-removed; GitHub's default job timeout is 6 hours.
        handover_timeout: how long a new scale set with `min_idle_runners` > 0 may go without a
            runner online before the charm blocks (its predecessors keep serving meanwhile).
        label_retry: how long after creating a scale set GitHub dropped labels of the charm
            tries again with a new one (a further attempt); the wait doubles with each attempt,
            up to `plan.MAX_LABEL_RETRY`.
        name_budget: the longest live name the charm creates (`naming.NAME_BUDGET`, what the
            OpenStack provider's server tags leave: garm-behaviour B46).
        refresh_surge: how many replacement runners a rolling refresh boots at a time per
            scale set (ADR 0022).
        runner_stuck_timeout: how long a live scale set's runner may stay in a state that is
            not final before it is removed (ADR 0023); None: runners are not checked (and a
            converged pass lists no instances).
        changeover_surge: the surge budget, extra idle runners all changeovers in flight may
            hold together; the others wait in a queue (`surge`, ADR 0038). 0: no bound.
        max_writes: GARM writes one reconcile makes at most, creates first, then retirements
            and updates, then deletes and runner removals; the rest waits for the next
            (ADR 0038). 0: no bound.
        drain_holds: the pauses (start, end) the drain clock stood still for (ADR 0042).
    """

    handover_grace: datetime.timedelta = datetime.timedelta(seconds=60)
    drain_timeout: datetime.timedelta = datetime.timedelta(hours=7)
    handover_timeout: datetime.timedelta = datetime.timedelta(minutes=30)
    label_retry: datetime.timedelta = datetime.timedelta(minutes=15)
    name_budget: int = NAME_BUDGET
    refresh_surge: int = DEFAULT_SURGE
    runner_stuck_timeout: datetime.timedelta | None = None
    changeover_surge: int = UNLIMITED
    max_writes: int = 0
    drain_holds: tuple[Hold, ...] = ()
