"""Scale sets: make GARM's scale sets match the specs, changing immutable fields by replacement.

The package, one job per module, from the bottom up: `spec` (what a configurator asks for),
`naming` (live names and families), `marker` (the ownership marker and drain clock in GARM's
`extended_state`), `runners` (GARM's runner states), `report` (what a pass did and the `juju
status` text), `ownership`, `refresh`, `refresh_request`, `stuck` and `surge` (who may claim a
scale set, rolling refresh, its request, stuck runners, the surge budget's queue), `plan` (the pure
changeover planner) and `executor` (one pass: observe GARM, plan, execute). Nothing here imports
ops. The changeover is explained in docs/explanation/scaleset-changeover.md.
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
