"""Make GARM's objects match the configurators: GitHub credentials and entities, then scale sets.

No ops here: the charm hands in the desired state and a logged-in client and turns the outcome
into a status. An outage (`GarmUnreachable`) propagates; everything GARM refuses is reported.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from garm_api import GithubEndpoint, Instance, ScaleSet
from reconcile.desired_state import DesiredState
from reconcile.github.check import GITHUB_ENDPOINT
from reconcile.github.dropped_verdict import ConfirmedCheck, Sightings
from reconcile.github.http import Quotas
from reconcile.github.offline_runners import (
    OfflineCheck,
    OfflineReport,
    bound_share,
    reap_offline,
    removals_left,
)
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github.scalesets import CHECK_EVERY, ScaleSetCheck
from reconcile.github.view import GithubView, combine
from reconcile.github_agreement import apps_by_entity
from reconcile.github_cleanup import CleanupReport, GithubCleanupApi, remove_unused_github_objects
from reconcile.github_objects import GithubReport, reconcile_github
from reconcile.schedule_status import with_schedule
from reconcile.templates import (
    TemplateApi,
    TemplateReport,
    remove_unused_templates,
    sync_templates,
)
from scaleset_reconciler import (
    PredecessorReport,
    ReconcileReport,
    ReconcileSettings,
    ScalesetApi,
    blocked_message,
    preview,
    reconcile,
    retry_message,
    status_message,
)
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.report import SpecReport
from scaleset_reconciler.runners import is_busy, is_idle
from status_text import fit
from workload.config import ProxyConfig

logger = logging.getLogger(__name__)


class GarmObjectsApi(GithubCleanupApi, ScalesetApi, TemplateApi, Protocol):
    """Every call the object reconcilers make (`garm_api.GarmClient` has them all)."""

    def list_github_endpoints(self) -> list[GithubEndpoint]:
        """Return the GitHub endpoints."""
        ...


@dataclasses.dataclass(frozen=True)
class ObjectsOutcome:
    """What the operator should see, each at most 120 characters.

    Attributes:
        blocked: what the operator must fix (a refusal, an invalid spec, dropped labels).
        retrying: GARM failed calls the next pass retries by itself (Waiting).
        waiting: configurators that have not published yet.
        active: the changeovers in progress.
        report: the scale-set pass in full, for the log and the provider retention.
        offline: what the check of runners GitHub shows offline did (ADR 0040); None when
            the pass did not check.
        github_view: GitHub's view of each live scale set beside GARM's, by
            `<application>/<scale set>` (ADR 0041); None when the pass did not ask GitHub.
        missing_sightings: GitHub's first "missing" answers still to be confirmed, as
            `github.dropped_verdict.confirm` keeps them; None when GitHub was not asked.
    """

    blocked: str
    retrying: str
    waiting: str
    active: str
    report: ReconcileReport
    offline: OfflineReport | None = None
    github_view: Mapping[str, GithubView] | None = None
    missing_sightings: Sightings | None = None


def reconcile_objects(
    api: GarmObjectsApi,
    desired: DesiredState,
    *,
    now: datetime.datetime,
    settings: ReconcileSettings,
    proxy: ProxyConfig | None = None,
    ask_github_scalesets: bool = False,
    quotas: Quotas | None = None,
    offline_since: Mapping[str, str] | None = None,
    github_view: Mapping[str, GithubView] | None = None,
    missing_sightings: Mapping[int, datetime.datetime] | None = None,
) -> ObjectsOutcome:
    """Run the GitHub pass, then the scale-set pass between the template steps; summarise.

    With `proxy` (the model's), the scale-set pass asks GitHub, through it, whether busy
    runners of retired scale sets still exist, and removes those whose jobs ended (ADR 0015);
    with `ask_github_scalesets` too, it asks whether GitHub still has the scale sets, and
    creates a live one GitHub dropped again under a new name (ADR 0029) once GitHub said so
    at two checks `CHECK_EVERY` apart: `missing_sightings` are the first answers so far.
    Every such call keeps the reserve of `quotas` for GARM (ADR 0039), and records what
    GitHub said of them. With `offline_since` too (the sightings kept from the last check),
    idle runners GitHub has shown offline past a bound are removed (ADR 0040). When GitHub is
    asked about scale sets, its statistics of each live one are put beside GARM's runners,
    from `github_view` (the last views kept, ADR 0041).
    """
    quotas = quotas if quotas is not None else Quotas()
    github = reconcile_github(api, desired.bindings, complete=desired.complete)
    for warning in github.warnings:
        logger.warning("%s", warning)
    templates = sync_templates(api, dict(desired.runner_templates))
    ask_scalesets = proxy is not None and ask_github_scalesets
    scaleset_check = _scaleset_check(api, desired, proxy, quotas) if proxy is not None else None
    confirmed = (
        ConfirmedCheck(scaleset_check, dict(missing_sightings or {}), now, CHECK_EVERY)
        if ask_scalesets and scaleset_check is not None
        else None
    )
    check_offline = proxy is not None and offline_since is not None
    # The offline check's removals come after the pass and count against its bound (ADR 0038).
    kept = bound_share(settings.max_writes) if check_offline else 0
    report = reconcile(
        api,
        desired.specs,
        now=now,
        settings=dataclasses.replace(settings, max_writes=settings.max_writes - kept),
        sweep_orphans=desired.complete,
        finished_at_github=None if proxy is None else _runner_check(api, desired, proxy, quotas),
        missing_at_github=confirmed,
        sleep=None if proxy is None else time.sleep,
    )
    views = None
    if ask_scalesets and scaleset_check is not None:
        views = combine(
            github_view or {},
            scaleset_check.statistics,
            report.held,
            api.list_instances(),
            now=now,
        )
    offline = None
    if proxy is not None and offline_since is not None:
        check = OfflineCheck(
            _endpoint(api), apps_by_entity(desired.bindings), proxy, quotas=quotas
        )
        limit = removals_left(settings.max_writes, report.writes)
        offline = reap_offline(api, report.held, check, offline_since, now=now, limit=limit)
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
        retrying=retry_message(report),
        waiting=_waiting(desired),
        active=with_schedule(status_message(report), desired.specs),
        report=report,
        offline=offline,
        github_view=views,
        missing_sightings=None if confirmed is None else confirmed.sightings,
    )


def _runner_check(
    api: GarmObjectsApi, desired: DesiredState, proxy: ProxyConfig, quotas: Quotas
) -> RunnerCheck:
    """Ask GitHub where GARM does, as the App the configurators agree on for each entity."""
    return RunnerCheck(_endpoint(api), apps_by_entity(desired.bindings), proxy, quotas=quotas)


def _scaleset_check(
    api: GarmObjectsApi, desired: DesiredState, proxy: ProxyConfig, quotas: Quotas
) -> ScaleSetCheck:
    """Ask GitHub about scale sets where GARM does, as the entity's App."""
    return ScaleSetCheck(_endpoint(api), apps_by_entity(desired.bindings), proxy, quotas=quotas)


def _endpoint(api: GarmObjectsApi) -> Callable[[], GithubEndpoint | None]:
    def endpoint() -> GithubEndpoint | None:
        endpoints = api.list_github_endpoints()
        return next((e for e in endpoints if e.name == GITHUB_ENDPOINT), None)

    return endpoint


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
    return fit([*desired.problems, *refused, blocked_message(report)], "; ")


def _waiting(desired: DesiredState) -> str:
    if not desired.waiting:
        return ""
    return "waiting for " + ", ".join(desired.waiting) + " to publish a scale set"


@dataclasses.dataclass(frozen=True)
class ScalesetListing:
    """What the list-scalesets action shows: GARM's scale sets and each spec's changeover."""

    scalesets: list[dict[str, Any]]
    changeovers: list[dict[str, Any]]
    # The surge budget (ADR 0038): its size, what is held, how many are in flight and queued.
    surge: dict[str, int] = dataclasses.field(default_factory=dict[str, int])


def list_scalesets(
    api: GarmObjectsApi,
    desired: DesiredState,
    *,
    now: datetime.datetime,
    settings: ReconcileSettings,
) -> ScalesetListing:
    """List every scale set with its runners, and what the next pass would do (read-only).

    A changeover the surge budget keeps waiting has phase `queued` and its `queue-position`
    (1: next to start); `surge` sums the budget up (ADR 0038).

    Each changeover shows its drain deadline as an absolute UTC time and every generation of
    the spec (the live one first): labels, phase, enabled, runners idle and busy. Each row
    names the scale set's logical name and configurator from the charm's marker (its live
    name is too short to tell them: ADR 0031); both are null for a hand-made one.
    """
    report = preview(
        api, desired.specs, now=now, settings=settings, sweep_orphans=desired.complete
    )
    runners = _Runners(api.list_instances())
    listed = sorted(api.list_scalesets(), key=lambda scaleset: scaleset.name)
    rows = [
        {
            "id": scaleset.id,
            "name": scaleset.name,
            **_owner(scaleset),
            "enabled": scaleset.enabled,
            "provider": scaleset.provider_name,
            "labels": list(scaleset.labels),
            "min-idle-runners": scaleset.min_idle_runners,
            "max-runners": scaleset.max_runners,
            "desired-runners": scaleset.desired_runner_count,
            "runners": runners.total[scaleset.id],
            "entity": scaleset.entity_name,
        }
        for scaleset in listed
    ]
    by_name = {scaleset.name: scaleset for scaleset in listed}
    changeovers = [_changeover(spec, by_name, runners) for spec in report.specs]
    windows = {spec.name: spec.min_idle_window for spec in desired.specs}
    for changeover in changeovers:
        changeover["min-idle-window"] = windows.get(changeover["scaleset"], "")
    changeovers += [
        {
            "scaleset": None,
            "phase": "orphan",
            "predecessors": [_predecessor(orphan, runners)],
            "generations": [_generation(orphan.name, orphan.phase.value, by_name, runners)],
        }
        for orphan in report.orphans
    ]
    surge = {
        "budget": settings.changeover_surge,
        "held": report.surge_held,
        "in-flight": report.in_flight,
        "queued": report.queued,
    }
    return ScalesetListing(rows, changeovers, surge)


def _owner(scaleset: ScaleSet) -> dict[str, str | None]:
    """The logical name and configurator the charm's marker records; None for a hand-made set."""
    marker = parse_marker(scaleset.extended_state)
    if marker is None:
        return {"scaleset": None, "application": None}
    return {"scaleset": marker.logical, "application": marker.application or None}


class _Runners:
    """Runner counts per scale-set id: all, idle and busy (running a job)."""

    def __init__(self, instances: list[Instance]) -> None:
        mine = [i for i in instances if i.scale_set_id]
        self.total = Counter(i.scale_set_id for i in mine)
        self.idle = Counter(i.scale_set_id for i in mine if is_idle(i))
        self.busy = Counter(i.scale_set_id for i in mine if is_busy(i))


def _changeover(
    spec: SpecReport, by_name: Mapping[str, ScaleSet], runners: _Runners
) -> dict[str, Any]:
    generations = [
        _generation(p.name, p.phase.value, by_name, runners, p.deadline) for p in spec.predecessors
    ]
    if spec.live_name in by_name:
        generations.insert(0, _generation(spec.live_name, spec.phase.value, by_name, runners))
    return {
        "scaleset": spec.logical,
        "phase": spec.phase.value,
        "live-name": spec.live_name,
        "queue-position": spec.queue_position,
        "seconds-left": spec.seconds_left,
        "deadline": _utc(spec.deadline),
        "serves-in": spec.serves_in,
        "awaiting-runner-until": _utc(spec.awaiting_runner_until),
        "relabel-at": _utc(spec.relabel_at),
        "leftovers": spec.leftovers,
        "refreshing": spec.refreshing,
        "outdated-runners": spec.outdated_runners,
        "busy-outdated-runners": spec.busy_outdated_runners,
        "stuck-runners-removed": spec.stuck_removed,
        "stuck-runners-kept": spec.stuck_unremovable,
        "message": spec.message,
        "predecessors": [_predecessor(p, runners) for p in spec.predecessors],
        "generations": generations,
    }


def _generation(
    name: str,
    phase: str,
    by_name: Mapping[str, ScaleSet],
    runners: _Runners,
    deadline: datetime.datetime | None = None,
) -> dict[str, Any]:
    scaleset = by_name.get(name)
    if scaleset is None:  # deleted by GARM between the two lists
        return {"name": name, "phase": phase}
    return {
        "name": name,
        "phase": phase,
        "labels": sorted(scaleset.normalised_labels),
        "enabled": scaleset.enabled,
        "runners": {"idle": runners.idle[scaleset.id], "busy": runners.busy[scaleset.id]},
        "deadline": _utc(deadline),
    }


def _predecessor(predecessor: PredecessorReport, runners: _Runners) -> dict[str, Any]:
    return {
        "name": predecessor.name,
        "phase": predecessor.phase.value,
        "runners": runners.total[predecessor.scaleset_id],
        "seconds-left": predecessor.seconds_left,
        "deadline": _utc(predecessor.deadline),
        "delete-failures": predecessor.delete_failures,
        "delete-retry-at": _utc(predecessor.delete_retry_at),
    }


def _utc(moment: datetime.datetime | None) -> str | None:
    """`2026-11-30T14:05:00Z`, or None."""
    if moment is None:
        return None
    return moment.astimezone(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
