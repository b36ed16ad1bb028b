"""Pure planning of one scale-set pass: specs + what GARM shows -> actions + report.

Nothing here does I/O. The reconciler observes GARM, calls `prepare`, `group` and `needs`,
fetches what `needs` asks for, calls `plan`, and executes the actions it returns. Every decision
is re-derived from what GARM shows (names, markers, instances), so a pass after any restart
makes the same decision as the pass before it would have.
"""

from __future__ import annotations

import dataclasses
import datetime

from garm_api.models import Entity, EntityKind, ScaleSetUpdate, normalise_labels
from scaleset_reconciler.actions import (
    Action,
    CreateAction,
    DeleteAction,
    RefreshRemoveAction,
    StuckRemoveAction,
    UpdateAction,
    order_writes,
)
from scaleset_reconciler.context import PassContext as _Context
from scaleset_reconciler.grouping import Family, Grouping, Member
from scaleset_reconciler.grouping import member_serves as _serves
from scaleset_reconciler.live_update import live_update, refresh_after
from scaleset_reconciler.marker import Marker, config_hash
from scaleset_reconciler.naming import name_for
from scaleset_reconciler.needs import Observed, awaits_capacity, entity_key
from scaleset_reconciler.ownership import held_report
from scaleset_reconciler.prepare import Prepared, SpecEntry, desired_create
from scaleset_reconciler.refresh import RefreshStep, plan_step
from scaleset_reconciler.report import (
    Phase,
    PredecessorReport,
    ReconcileReport,
    SpecReport,
)
from scaleset_reconciler.retirement import orphan_owner, plan_retirement
from scaleset_reconciler.runners import idle_capacity, is_busy, is_online
from scaleset_reconciler.settings import ReconcileSettings
from scaleset_reconciler.spec import ScalesetSpec
from scaleset_reconciler.stuck import StuckStep, plan_stuck
from scaleset_reconciler.surge import Admission, Candidate, admit, refresh_key, retry_key
from status_text import clock_time, cut, short_name

MAX_LABEL_RETRY = datetime.timedelta(hours=4)
# How much of the dropped labels the Blocked text names (the log has them all).
DROPPED_LABELS_LIMIT = 20
# Names tried after the first when GitHub still holds a scale set of that name (409).
SPARE_NAMES = 3
_ENTITY_NOUNS = {
    EntityKind.REPOSITORY: "repository",
    EntityKind.ORGANIZATION: "organization",
    EntityKind.ENTERPRISE: "enterprise",
}


@dataclasses.dataclass
class Plan:
    """The actions of one pass, in order, and the report they will be executed against."""

    actions: list[Action]
    report: ReconcileReport


def plan(
    prepared: Prepared,
    grouping: Grouping,
    observed: Observed,
    *,
    now: datetime.datetime,
    settings: ReconcileSettings,
    sweep_orphans: bool,
) -> Plan:
    """Decide every action of the pass from the specs and what GARM shows.

    The actions come creates first, then updates (retirements among them), then deletes and
    runner removals: a pass bounded in writes (`max_writes`) leaves the rest to the next.
    """
    context = _Context(now, settings, observed, sweep_orphans, set(grouping.taken))
    admission = admit_changeovers(prepared, grouping, context)
    context = dataclasses.replace(context, queued=admission.queued)
    report = ReconcileReport(warnings=list(prepared.warnings))
    report.surge_held, report.in_flight = admission.held, admission.in_flight
    actions: list[Action] = []
    for entry in prepared.entries:
        spec_report, spec_actions = plan_spec(entry, grouping.families[entry.spec.name], context)
        report.specs.append(spec_report)
        actions.extend(spec_actions)
    report.specs.extend(prepared.rejected)
    if sweep_orphans:
        for orphan in grouping.orphans:
            orphan_report, orphan_actions = _plan_orphan(orphan, context)
            report.orphans.append(orphan_report)
            actions.extend(orphan_actions)
    else:
        report.orphans_kept = [orphan.scaleset.name for orphan in grouping.orphans]
    report.orphans_kept += [member.scaleset.name for member in grouping.kept]
    return Plan(order_writes(actions), report)


def admit_changeovers(prepared: Prepared, grouping: Grouping, context: _Context) -> Admission:
    """Which changeovers start this pass within the surge budget, and the queue of the rest.

    A changeover waits to start while a predecessor serves and the live scale set does not (it
    is not created yet, or is retired and would be re-enabled); it is in flight while both
    serve; once handed over it holds what its retired predecessors still keep idle.
    """
    held: dict[str, int] = {}
    candidates: list[Candidate] = []
    for entry in prepared.entries:
        family = grouping.families[entry.spec.name]
        if family.held and not context.sweep_orphans:
            continue
        serving = [m for m in family.predecessors if _serves(m)]
        members = [*family.predecessors, *([family.live] if family.live else [])]
        # Runners of retired scale sets without a job: GARM removes them soon.
        left = sum(
            1
            for member in members
            if not _serves(member)
            for runner in context.observed.runners(member.scaleset.id)
            if not is_busy(runner)
        )
        cost = max(1, entry.spec.min_idle_runners)
        starting = family.live is None or not _serves(family.live)
        if serving and starting:
            stamps = [m.marker.queued_at for m in serving if m.marker and m.marker.queued_at]
            candidates.append(Candidate(entry.spec.name, cost, min(stamps, default=None)))
        # Each serving set beside the live one holds its min idle (a retry's earlier attempt too).
        holding = (cost * len(serving) if not starting else 0) + left
        if holding:
            held[entry.spec.name] = holding
        _charge_refresh_and_retry(entry, family, context, held, candidates)
    budget = context.settings.changeover_surge
    return admit(held, candidates, budget=budget, now=context.now)


def _charge_refresh_and_retry(
    entry: SpecEntry,
    family: Family,
    context: _Context,
    held: dict[str, int],
    candidates: list[Candidate],
) -> None:
    """A serving live set's rolling refresh and label retry take the budget too (ADR 0038).

    The refresh holds what GARM's min idle is raised by while it is; before, it waits its
    turn from its `refresh-from` stamp (or this pass). A retry due waits from when it fell due.
    """
    spec, live = entry.spec, family.live
    if live is None or live.marker is None or not _serves(live):
        return
    step = RefreshStep(live.marker.refresh_from)
    if refresh_after(spec, live, context.now, step) is not None:
        raised = live.scaleset.min_idle_runners - spec.min_idle_runners
        if raised > 0:
            held[refresh_key(spec.name)] = raised
        else:
            surge = context.settings.refresh_surge
            candidates.append(Candidate(refresh_key(spec.name), surge, step.refresh_from))
    retry_at = _label_retry_at(spec, live, context)
    if retry_at is not None and context.now >= retry_at:
        cost = max(1, spec.min_idle_runners)
        candidates.append(Candidate(retry_key(spec.name), cost, retry_at, repairs=spec.name))


def _refresh_surge(spec: ScalesetSpec, context: _Context) -> int:
    """The refresh's surge this pass: none while it waits for the budget (nothing moves)."""
    return 0 if refresh_key(spec.name) in context.queued else context.settings.refresh_surge


def _waits_for_budget(report: SpecReport, key: str, context: _Context) -> bool:
    """Whether a refresh or retry waits in the surge budget's queue; its place reported."""
    place = context.queued.get(key)
    if place is None:
        return False
    report.queue_position = place
    return True


def plan_spec(
    entry: SpecEntry, family: Family, context: _Context
) -> tuple[SpecReport, list[Action]]:
    """Plan one spec: its live scale set first, then each predecessor."""
    spec = entry.spec
    if family.held and not context.sweep_orphans:
        return held_report(spec, entry.live_name, family.held), []
    report = SpecReport(spec.name, Phase.ACTIVE, live_name=entry.live_name)
    report.warnings.extend(
        f"scale set {name!r} looks like a generation of {spec.name!r} but carries no marker "
        "of this charm; it is left alone"
        for name in family.foreign
    )
    wanted = normalise_labels(spec.labels)
    report.labels_changing = any(
        m.scaleset.normalised_labels != wanted for m in family.predecessors
    )
    if spec.name in context.queued:
        return _plan_queued(entry, family, context, report)
    if family.live is None:
        return _plan_create(entry, family, context, report)
    actions: list[Action] = []
    step = _refresh_step(spec, family, context)
    refresh_from = refresh_after(spec, family.live, context.now, step)
    update = live_update(
        spec, family.live, context.now, refresh_from, _refresh_surge(spec, context)
    )
    if update is not None:
        actions.append(update)
    actions.extend(_refresh_removals(spec, family.live, step, refresh_from))
    stuck = _stuck_step(spec, family.live, context)
    actions.extend(
        StuckRemoveAction(spec.name, family.live.scaleset.name, name) for name in stuck.removals
    )
    report.outdated_runners = step.outdated
    report.busy_outdated_runners = step.busy_outdated
    report.refreshing = refresh_from is not None
    report.live_name = family.live.scaleset.name
    ready = _plan_live_readiness(spec, family.live, context, report) and _has_capacity(
        spec, family, context, report
    )
    retry = None
    if not _waits_for_budget(report, retry_key(spec.name), context):
        retry = _plan_label_retry(entry, family.live, context, report)
    else:
        report.status += "; retry queued"
    if retry is None:
        retry = _plan_github_recreate(entry, family.live, context, report)
    if retry is not None:
        actions.append(retry)
    for member in family.predecessors:
        member_ready = ready or _redundant_attempt(spec, member, family.live, context)
        predecessor, retire_actions = plan_retirement(
            spec.name, member, member_ready, context, application=spec.application
        )
        report.predecessors.append(predecessor)
        actions.extend(retire_actions)
    _summarise(report, ready and not report.missing_at_github)
    if report.phase is Phase.REFRESHING and _waits_for_budget(
        report, refresh_key(spec.name), context
    ):
        report.phase = Phase.QUEUED
    _report_stuck(report, stuck)
    return report, actions


def _plan_queued(
    entry: SpecEntry, family: Family, context: _Context, report: SpecReport
) -> tuple[SpecReport, list[Action]]:
    """A changeover the surge budget keeps waiting: its predecessors serve (or drain) on.

    The first time, the serving predecessor is stamped with when the change was queued, so the
    queue keeps its order over passes and restarts (`surge`). A retired live scale set (a
    change back, which re-enables it once started) is kept meanwhile: not deleted once empty
    (jobs past the drain deadline are still stopped), so its turn re-enables it rather than
    creating it again at GitHub.
    """
    spec = entry.spec
    actions: list[Action] = []
    retired_live = [family.live] if family.live is not None else []
    for member in [*family.predecessors, *retired_live]:
        predecessor, retire_actions = plan_retirement(
            spec.name, member, False, context, application=spec.application
        )
        report.predecessors.append(predecessor)
        if member is family.live:
            # Kept for its turn; a job past the drain deadline is still stopped.
            predecessor.phase = Phase.QUEUED
            retire_actions = [a for a in retire_actions if not isinstance(a, DeleteAction)]
        actions.extend(retire_actions)
    serving = [m for m in family.predecessors if _serves(m)]
    if not any(m.marker is not None and m.marker.queued_at for m in serving):
        first = serving[0]
        base = first.marker or Marker(
            logical=spec.name,
            attempt=first.attempt,
            application=spec.application,
            generation=first.generation,
        )
        stamped = dataclasses.replace(base, queued_at=context.now)
        update = ScaleSetUpdate(extended_state=stamped.render())
        actions.append(UpdateAction(spec.name, first.scaleset.id, first.scaleset.name, update))
    _summarise(report, ready=False)
    report.phase = Phase.QUEUED
    report.queue_position = context.queued[spec.name]
    return report, actions


def _stuck_step(spec: ScalesetSpec, live: Member, context: _Context) -> StuckStep:
    timeout = context.settings.runner_stuck_timeout
    if timeout is None or live.marker is None:
        return StuckStep()
    return plan_stuck(
        context.observed.runners(live.scaleset.id),
        now=context.now,
        timeout=timeout,
        bootstrap_timeout=datetime.timedelta(minutes=spec.runner_bootstrap_timeout),
    )


def _report_stuck(report: SpecReport, stuck: StuckStep) -> None:
    """Count the stuck runners; a set whose runners keep failing is Blocked naming the fault."""
    report.stuck_removed = len(stuck.removals)
    report.stuck_unremovable = stuck.unremovable
    if not stuck.failing_fault or report.phase is Phase.BLOCKED:
        return
    report.phase = Phase.BLOCKED
    report.message = (
        f"the runners of {report.live_name!r} keep failing and none is online; the provider's "
        f"last fault: {stuck.failing_fault}"
    )
    report.status = f"runners keep failing: {stuck.failing_fault}; check image, flavor, provider"
    report.errors.append(report.message)


def _plan_create(
    entry: SpecEntry, family: Family, context: _Context, report: SpecReport
) -> tuple[SpecReport, list[Action]]:
    spec = entry.spec
    entity, missing = _create_prerequisites(spec, context.observed)
    if entity is None:
        report.phase = Phase.SKIPPED
        report.message = missing
        report.warnings.append(missing)
        return report, []
    create = create_action(entry, entity.kind, entity.id, 0, context)
    report.live_name = create.params.name
    actions: list[Action] = [create]
    # Serving predecessors wait for the new one; retired ones go on draining meanwhile.
    for member in family.predecessors:
        predecessor, retire_actions = plan_retirement(
            spec.name, member, False, context, application=spec.application
        )
        report.predecessors.append(predecessor)
        actions.extend(retire_actions)
    _summarise(report, ready=False)
    return report, actions


def create_action(
    entry: SpecEntry, kind: EntityKind, entity_id: str, first: int, context: _Context
) -> CreateAction:
    """Create the spec's generation under its first free name from attempt `first` on.

    A name GARM shows (another spec's or application's scale set, a hand-made one, an earlier
    generation's whose hash collides) is never taken: the next attempt's name is tried. The
    next free names are the spares, for a name GitHub still holds that GARM does not show.
    """
    spec = entry.spec
    names = _free_names(entry, first, context)
    (name, attempt), spares = names[0], names[1:]
    return CreateAction(
        owner=spec.name,
        entity_kind=kind,
        entity_id=entity_id,
        params=desired_create(spec, name),
        template_name=spec.template_name,
        marker=Marker(
            logical=spec.name,
            config=config_hash(spec),
            attempt=attempt,
            application=spec.application,
            generation=entry.generation,
        ),
        spares=tuple(spares),
    )


def _free_names(entry: SpecEntry, first: int, context: _Context) -> list[tuple[str, int]]:
    """The first name and the spares, each a (name, attempt) no scale set has; now taken."""
    names: list[tuple[str, int]] = []
    budget = context.settings.name_budget
    attempt = first
    while len(names) < 1 + SPARE_NAMES:
        name = name_for(entry.spec.name, entry.generation, budget=budget, attempt=attempt)
        if name not in context.taken:
            names.append((name, attempt))
            context.taken.add(name)
        attempt += 1
    return names


def _create_prerequisites(spec: ScalesetSpec, observed: Observed) -> tuple[Entity | None, str]:
    """Return the spec's entity, or None and what GARM is missing to create its scale set."""
    if spec.provider_name not in (observed.providers or frozenset()):
        return None, f"provider {spec.provider_name!r} is not configured in GARM yet"
    entity = (observed.entities or {}).get(entity_key(spec.entity.kind, spec.entity.name))
    if entity is None:
        kind = _ENTITY_NOUNS[spec.entity.kind]
        return None, f"{kind} {spec.entity.name!r} is not registered in GARM yet"
    return entity, ""


def _refresh_step(spec: ScalesetSpec, family: Family, context: _Context) -> RefreshStep:
    """The refresh of the live scale set this pass: it removes only while the set serves."""
    live = family.live
    if live is None or live.marker is None:
        return RefreshStep()
    serving = _serves(live) and all(
        m.marker is not None and m.marker.retired for m in family.predecessors
    )
    return plan_step(
        context.observed.runners(live.scaleset.id),
        live.marker.refresh_from,
        min_idle=spec.min_idle_runners,
        surge=_refresh_surge(spec, context),
        serving=serving,
    )


def _refresh_removals(
    spec: ScalesetSpec, live: Member, step: RefreshStep, refresh_from: datetime.datetime | None
) -> list[Action]:
    """Remove the step's runners, unless this pass starts a new refresh (`refresh_from`)."""
    if refresh_from != step.refresh_from:
        return []
    return [RefreshRemoveAction(spec.name, live.scaleset.name, name) for name in step.removals]


def _plan_live_readiness(
    spec: ScalesetSpec, live: Member, context: _Context, report: SpecReport
) -> bool:
    """Whether the live scale set may take over: enabled, all labels, past the grace."""
    missing = live.scaleset.missing_labels(spec.labels)
    if missing:
        report.phase = Phase.BLOCKED
        report.message = (
            f"GARM created {live.scaleset.name!r} without the labels "
            f"{', '.join(sorted(missing))} (GitHub may not allow several labels here); "
            "the old scale set keeps serving: change the labels or enable multiple labels"
        )
        dropped = cut(", ".join(sorted(missing)), DROPPED_LABELS_LIMIT)
        report.status = f"GitHub dropped labels {dropped} (old set serves): change labels"
        report.errors.append(report.message)
        return False
    if not _serves(live):
        return False
    serves_at = _serves_at(live, context)
    if context.now < serves_at:
        report.serves_in = (serves_at - context.now).total_seconds()
        return False
    return True


def _has_capacity(
    spec: ScalesetSpec, family: Family, context: _Context, report: SpecReport
) -> bool:
    """Whether the live scale set serves with a runner online, if the hand-over needs one.

    A new generation whose runners never come online (a broken image or flavor) must not
    replace one that works: the predecessors keep serving, and after `handover_timeout` the
    spec is blocked naming the new scale set. It proceeds by itself once a runner comes up.
    """
    live = family.live
    if live is None or not awaits_capacity(spec, family):
        return True
    if _takes_next_job(spec, live, context):
        return True
    since = _serving_since(live)
    give_up = since + context.settings.handover_timeout
    if context.now < give_up:
        report.awaiting_runner_until = give_up
        report.message = f"waiting for an idle runner of {live.scaleset.name!r} to come online"
        return False
    minutes = int(context.settings.handover_timeout.total_seconds() // 60)
    report.phase = Phase.BLOCKED
    report.message = (
        f"no idle runner of the new scale set {live.scaleset.name!r} came online within "
        f"{minutes} min; the old scale set keeps serving: check the new set's image, flavor "
        "and provider (GARM's log); the hand-over goes on by itself once a runner is idle"
    )
    report.status = (
        f"no idle runner of new set {short_name(live.scaleset.name)} after {minutes} min; "
        "check image/flavor"
    )
    report.errors.append(report.message)
    return False


def _plan_label_retry(
    entry: SpecEntry, live: Member, context: _Context, report: SpecReport
) -> CreateAction | None:
    """Try again under a new name when GitHub dropped labels: it may accept them by now.

    GHES needs a feature flag for several labels per scale set; once an administrator turns
    it on, the next attempt gets every label and the changeover completes by itself. The wait
    doubles with each attempt, so a spec nobody fixes costs a few scale sets a day at most.
    """
    spec = entry.spec
    retry_at = _label_retry_at(spec, live, context)
    if retry_at is None:
        return None
    attempt = live.attempt
    report.relabel_at = retry_at
    if context.now < retry_at:
        report.status += f"; retry {clock_time(retry_at)}"
        return None
    report.message += "; trying again under a new name"
    return create_action(
        entry, live.scaleset.entity_kind, live.scaleset.entity_id, attempt + 1, context
    )


def _label_retry_at(
    spec: ScalesetSpec, live: Member, context: _Context
) -> datetime.datetime | None:
    """When the next attempt is due, if GitHub dropped labels of the live set; else None."""
    if not live.scaleset.missing_labels(spec.labels):
        return None
    wait = min(context.settings.label_retry * 2**live.attempt, MAX_LABEL_RETRY)
    return _serving_since(live) + wait


def _plan_github_recreate(
    entry: SpecEntry, live: Member, context: _Context, report: SpecReport
) -> CreateAction | None:
    """Create the next attempt when GitHub answered that it no longer has the live scale set.

    GARM keeps listening for a scale set GitHub deleted, and its API shows nothing of it
    (garm-behaviour B33): a new attempt, under a new name, is created at GitHub at once and
    takes over as any further attempt does; the old one is retired and deleted (ADR 0029).
    """
    if live.scaleset.id not in context.observed.missing_at_github or not _serves(live):
        return None
    report.missing_at_github = True
    report.message = (
        f"GitHub no longer has the scale set {live.scaleset.name!r} (its listener was offline "
        "too long?); creating it again under a new name"
    )
    report.warnings.append(report.message)
    return create_action(
        entry, live.scaleset.entity_kind, live.scaleset.entity_id, live.attempt + 1, context
    )


def _redundant_attempt(
    spec: ScalesetSpec, member: Member, live: Member, context: _Context
) -> bool:
    """Whether `member`, an earlier attempt at the live generation, serves nothing it lacks.

    An attempt GitHub dropped labels of is replaced by the next attempt once that one serves
    at least its labels, so failed attempts never pile up while the spec waits for GitHub.
    """
    same = bool(member.generation) and member.generation == live.generation
    if not same or not member.scaleset.normalised_labels <= live.scaleset.normalised_labels:
        return False
    if not _serves(live) or context.now < _serves_at(live, context):
        return False
    return spec.min_idle_runners == 0 or _takes_next_job(spec, live, context)


def _serves_at(live: Member, context: _Context) -> datetime.datetime:
    """When the live scale set's listener is taken to be up at GitHub: past the grace."""
    return _serving_since(live) + context.settings.handover_grace


def _takes_next_job(spec: ScalesetSpec, live: Member, context: _Context) -> bool:
    """Whether the live scale set can take the next job: a runner online and idle (ADR 0038).

    Or every runner it may have is online with a job: it demonstrably serves, and waiting for
    one of them to be idle could wait as long as the jobs run.
    """
    runners = context.observed.runners(live.scaleset.id)
    if idle_capacity(runners):
        return True
    return sum(1 for runner in runners if is_online(runner)) >= max(1, spec.max_runners)


def _serving_since(live: Member) -> datetime.datetime:
    """When the live scale set was created, or re-enabled after a label change back."""
    marker = live.marker
    if marker is not None and marker.enabled_at is not None:
        return max(live.scaleset.created_at, marker.enabled_at)
    return live.scaleset.created_at


def _plan_orphan(orphan: Member, context: _Context) -> tuple[PredecessorReport, list[Action]]:
    marker = orphan.marker
    logical = marker.logical if marker is not None else orphan.scaleset.name
    return plan_retirement(
        logical, orphan, ready=True, context=context, owner=orphan_owner(orphan.scaleset.name)
    )


def _summarise(report: SpecReport, ready: bool) -> None:
    """Set the spec's phase from its live scale set and predecessors (see the changeover doc)."""
    phases = {p.phase for p in report.predecessors}
    stopped = sum(p.forced for p in report.predecessors)
    report.jobs_stopped = stopped
    draining = [p for p in report.predecessors if p.phase is Phase.DRAINING]
    report.seconds_left = min(
        (p.seconds_left for p in draining if p.seconds_left is not None), default=None
    )
    report.deadline = min((p.deadline for p in draining if p.deadline is not None), default=None)
    if report.phase is Phase.BLOCKED:
        return
    order = (Phase.HANDING_OVER, Phase.FORCING, Phase.DRAINING, Phase.DELETING)
    report.phase = next((p for p in order if p in phases), Phase.ACTIVE)
    if report.phase is Phase.ACTIVE and report.refreshing:
        report.phase = Phase.REFRESHING
    if not ready:
        report.phase = Phase.CREATING
