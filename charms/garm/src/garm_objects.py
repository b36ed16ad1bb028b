"""Make GARM's objects match the configurators: GitHub credentials and entities, then scale sets.

No ops here: the charm hands in the desired state and a logged-in client and turns the outcome
into a status. An outage (`GarmUnreachable`) propagates; everything GARM refuses is reported.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from typing import Protocol

from configurator_state import DesiredState
from github_reconciler import GithubApi, GithubReport, reconcile_github
from scaleset_reconciler import (
    ReconcileReport,
    ReconcileSettings,
    ScalesetApi,
    blocked_message,
    reconcile,
    status_message,
)

logger = logging.getLogger(__name__)


class GarmObjectsApi(GithubApi, ScalesetApi, Protocol):
    """Every call the object reconcilers make (`garm_api.GarmClient` has them all)."""


@dataclasses.dataclass(frozen=True)
class ObjectsOutcome:
    """What the operator should see: a Blocked reason, a Waiting reason, or an Active note."""

    blocked: str
    waiting: str
    active: str
    report: ReconcileReport


def reconcile_objects(
    api: GarmObjectsApi,
    desired: DesiredState,
    *,
    now: datetime.datetime,
    settings: ReconcileSettings,
) -> ObjectsOutcome:
    """Run the GitHub pass, then the scale-set pass, and summarise both."""
    github = reconcile_github(api, desired.bindings)
    for warning in github.warnings:
        logger.warning("%s", warning)
    report = reconcile(
        api, desired.specs, now=now, settings=settings, sweep_orphans=desired.complete
    )
    return ObjectsOutcome(
        blocked=_blocked(desired, github, report),
        waiting=_waiting(desired),
        active=status_message(report),
        report=report,
    )


def _blocked(desired: DesiredState, github: GithubReport, report: ReconcileReport) -> str:
    refused = [
        f"{name}: {problem}"
        for name, problem in github.problems.items()
        if not problem.startswith("waiting for credentials")
    ]
    parts = [*desired.problems, *refused, blocked_message(report)]
    return "; ".join(part for part in parts if part)


def _waiting(desired: DesiredState) -> str:
    if not desired.waiting:
        return ""
    return "waiting for " + ", ".join(desired.waiting) + " to publish a scale set"
