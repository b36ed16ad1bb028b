"""Make GARM's objects match the configurators: GitHub credentials and entities, then scale sets.

No ops here: the charm hands in the desired state and a logged-in client and turns the outcome
into a status. An outage (`GarmUnreachable`) propagates; everything GARM refuses is reported.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections import Counter
from typing import Any, Protocol

from configurator_state import DesiredState
from github_cleanup import CleanupReport, GithubCleanupApi, remove_unused_github_objects
from github_reconciler import GithubReport, reconcile_github
from scaleset_reconciler import (
    PredecessorReport,
    ReconcileReport,
    ReconcileSettings,
    ScalesetApi,
    blocked_message,
    preview,
    reconcile,
    status_message,
)
from template_reconciler import (
    TemplateApi,
    TemplateReport,
    remove_unused_templates,
    sync_templates,
)

logger = logging.getLogger(__name__)


class GarmObjectsApi(GithubCleanupApi, ScalesetApi, TemplateApi, Protocol):
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
    """Run the GitHub pass, then the scale-set pass between the template steps; summarise."""
    github = reconcile_github(api, desired.bindings)
    for warning in github.warnings:
        logger.warning("%s", warning)
    templates = sync_templates(api, dict(desired.runner_templates))
    report = reconcile(
        api, desired.specs, now=now, settings=settings, sweep_orphans=desired.complete
    )
    cleanup = CleanupReport()
    if desired.complete:
        # Bottom-up, once nothing wants them: templates and GitHub objects after scale sets.
        wanted = frozenset(name for name, _ in desired.runner_templates)
        unused = remove_unused_templates(api, wanted)
        templates = dataclasses.replace(
            templates, problems={**templates.problems, **unused.problems}
        )
        cleanup = remove_unused_github_objects(api, desired.bindings)
    return ObjectsOutcome(
        blocked=_blocked(desired, github, report, templates, cleanup),
        waiting=_waiting(desired),
        active=status_message(report),
        report=report,
    )


def _blocked(
    desired: DesiredState,
    github: GithubReport,
    report: ReconcileReport,
    templates: TemplateReport,
    cleanup: CleanupReport,
) -> str:
    refused = [
        f"{name}: {problem}"
        for name, problem in github.problems.items()
        if not problem.startswith("waiting for credentials")
    ]
    refused += [f"template {name}: {problem}" for name, problem in templates.problems.items()]
    refused += [f"deleting {label}: {problem}" for label, problem in cleanup.problems.items()]
    parts = [*desired.problems, *refused, blocked_message(report)]
    return "; ".join(part for part in parts if part)


def _waiting(desired: DesiredState) -> str:
    if not desired.waiting:
        return ""
    return "waiting for " + ", ".join(desired.waiting) + " to publish a scale set"


@dataclasses.dataclass(frozen=True)
class ScalesetListing:
    """What the list-scalesets action shows: GARM's scale sets and each spec's changeover."""

    scalesets: list[dict[str, Any]]
    changeovers: list[dict[str, Any]]


def list_scalesets(
    api: GarmObjectsApi,
    desired: DesiredState,
    *,
    now: datetime.datetime,
    settings: ReconcileSettings,
) -> ScalesetListing:
    """List every scale set with its runners, and what the next pass would do (read-only)."""
    report = preview(
        api, desired.specs, now=now, settings=settings, sweep_orphans=desired.complete
    )
    runners = Counter(i.scale_set_id for i in api.list_instances() if i.scale_set_id)
    rows = [
        {
            "id": scaleset.id,
            "name": scaleset.name,
            "enabled": scaleset.enabled,
            "provider": scaleset.provider_name,
            "labels": list(scaleset.labels),
            "min-idle-runners": scaleset.min_idle_runners,
            "max-runners": scaleset.max_runners,
            "desired-runners": scaleset.desired_runner_count,
            "runners": runners[scaleset.id],
            "entity": scaleset.entity_name,
        }
        for scaleset in sorted(api.list_scalesets(), key=lambda scaleset: scaleset.name)
    ]
    changeovers = [
        {
            "scaleset": spec.logical,
            "phase": spec.phase.value,
            "live-name": spec.live_name,
            "seconds-left": spec.seconds_left,
            "message": spec.message,
            "predecessors": [_predecessor(p, runners) for p in spec.predecessors],
        }
        for spec in report.specs
    ]
    changeovers += [
        {"scaleset": None, "phase": "orphan", "predecessors": [_predecessor(orphan, runners)]}
        for orphan in report.orphans
    ]
    return ScalesetListing(rows, changeovers)


def _predecessor(predecessor: PredecessorReport, runners: Counter[int]) -> dict[str, Any]:
    return {
        "name": predecessor.name,
        "phase": predecessor.phase.value,
        "runners": runners[predecessor.scaleset_id],
        "seconds-left": predecessor.seconds_left,
        "delete-failures": predecessor.delete_failures,
    }
