"""Scale sets: make GARM's scale sets match the specs, changing immutable fields by replacement.

The package, one job per module, from the bottom up (the order `.importlinter` checks, ADR
0048): `spec` (what a configurator asks for); `report`, `marker`, `naming`, `runners` and
`drain_clock` (what a pass did and the `juju status` text, the ownership marker in GARM's
`extended_state`, live names, GARM's runner states, the drain clock); `ownership`, `refresh`,
`refresh_request`, `stuck` and `surge` (who may claim a scale set, rolling refresh, its request,
stuck runners, the surge budget's queue); the pure changeover planner: `settings` and `actions`,
`prepare`, `grouping`, `needs`, `context`, `live_update` and `retirement`, and `plan` itself; and
`executor` (one pass: observe GARM, plan, execute). Nothing here imports ops. The changeover is
explained in docs/explanation/scaleset-changeover.md.
"""

from scaleset_reconciler.executor import (
    SETTLE_LIMIT,
    FinishedAtGithub,
    MissingAtGithub,
    ScalesetApi,
    preview,
    reconcile,
)
from scaleset_reconciler.needs import BusyRunner, GithubScaleSetRef
from scaleset_reconciler.report import (
    Phase,
    PredecessorReport,
    ReconcileReport,
    SpecReport,
    blocked_message,
    dropped_and_kept,
    retry_message,
    status_message,
)
from scaleset_reconciler.settings import ReconcileSettings

__all__ = [
    "SETTLE_LIMIT",
    "BusyRunner",
    "FinishedAtGithub",
    "GithubScaleSetRef",
    "MissingAtGithub",
    "Phase",
    "PredecessorReport",
    "ReconcileReport",
    "ReconcileSettings",
    "ScalesetApi",
    "SpecReport",
    "blocked_message",
    "dropped_and_kept",
    "preview",
    "reconcile",
    "retry_message",
    "status_message",
]
