"""Pure planning of one scale-set pass: specs + what GARM shows -> actions + report.

Nothing here does I/O. The reconciler observes GARM, calls `prepare`, `group` and `needs`,
fetches what `needs` asks for, calls `plan`, and executes the actions it returns. Every decision
is re-derived from what GARM shows (names, markers, instances), so a pass after any restart
makes the same decision as the pass before it would have.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from garm_api.models import (
    Entity,
    EntityKind,
    Instance,
    ScaleSet,
    ScaleSetCreate,
    ScaleSetUpdate,
    normalise_labels,
)
from scaleset_reconciler.drain_clock import Hold, drain_deadline
from scaleset_reconciler.marker import Marker, config_hash, parse_marker, serves
from scaleset_reconciler.naming import (
    NAME_BUDGET,
    generation_key,
    is_valid_logical_name,
    name_for,
    spec_generation,
    stem_of,
)
from scaleset_reconciler.naming import live_name as spec_live_name
from scaleset_reconciler.naming import stem as spec_stem
from scaleset_reconciler.ownership import claims, held_report, holder, one_spec_per_name
from scaleset_reconciler.refresh import (
    DEFAULT_SURGE,
    RefreshStep,
    changes_runners,
    plan_step,
    raised_counts,
)
from scaleset_reconciler.report import (
    Phase,
    PredecessorReport,
    ReconcileReport,
    SpecReport,
)
from scaleset_reconciler.runners import REMOVABLE, idle_capacity, is_busy, is_online
from scaleset_reconciler.spec import ScalesetSpec
from scaleset_reconciler.stuck import StuckStep, plan_stuck
from scaleset_reconciler.surge import (
    UNLIMITED,
    Admission,
    Candidate,
    admit,
    refresh_key,
    retry_key,
)
from status_text import clock_time, cut, short_name

DEFAULT_RUNNER_GROUP = "Default"
MAX_LABEL_RETRY = datetime.timedelta(hours=4)
# How much of the dropped labels the Blocked text names (the log has them all).
DROPPED_LABELS_LIMIT = 20
# Names tried after the first when GitHub still holds a scale set of that name (409).
SPARE_NAMES = 3
# An unmarked scale set named as a further attempt up to this one is adopted (a crash between
# its create and its marker); a day of label retries at the longest wait is six attempts.
MAX_ADOPTED_ATTEMPT = 64
_ENTITY_NOUNS = {
    EntityKind.REPOSITORY: "repository",
    EntityKind.ORGANIZATION: "organization",
    EntityKind.ENTERPRISE: "enterprise",
}


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
            up to `MAX_LABEL_RETRY`.
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


# Actions --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CreateAction:
    """Create the live scale set, then stamp it with `marker` (create cannot set it)."""

    owner: str
    entity_kind: EntityKind
    entity_id: str
    params: ScaleSetCreate
    template_name: str | None
    marker: Marker
    # Further (name, attempt) pairs, tried in turn if GitHub still holds a set of the name.
    spares: tuple[tuple[str, int], ...] = ()


@dataclasses.dataclass(frozen=True)
class UpdateAction:
    """Update one scale set; `set_template` asks the executor to resolve the template id."""

    owner: str
    scaleset_id: int
    name: str
    update: ScaleSetUpdate
    set_template: bool = False
    template_name: str | None = None
    os_type: str = "linux"


@dataclasses.dataclass(frozen=True)
class ForceRemoveAction:
    """Force-remove one runner of a retired scale set.

    Past the drain deadline this kills its job; with `finished` its job has ended at GitHub
    and GARM has not noticed yet (garm-behaviour, "A finished job on a retired scale set is
    noticed late").
    """

    owner: str
    scaleset_name: str
    instance_name: str
    finished: bool = False


@dataclasses.dataclass(frozen=True)
class DeleteAction:
    """Delete a retired, empty scale set; the executor confirms by listing again."""

    owner: str
    scaleset_id: int
    name: str
    marker: Marker


@dataclasses.dataclass(frozen=True)
class RefreshRemoveAction:
    """Remove one idle outdated runner of a live scale set, unforced (ADR 0022).

    Unforced, GARM first removes the runner at GitHub, which refuses while it runs a job: a
    runner that took a job since the pass listed it is kept.
    """

    owner: str
    scaleset_name: str
    instance_name: str


@dataclasses.dataclass(frozen=True)
class StuckRemoveAction:
    """Force-remove one stuck runner of a live scale set (it has no job, ADR 0023)."""

    owner: str
    scaleset_name: str
    instance_name: str


Action = (
    CreateAction
    | UpdateAction
    | ForceRemoveAction
    | DeleteAction
    | RefreshRemoveAction
    | StuckRemoveAction
)


# Preparing specs ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SpecEntry:
    """A spec that passed validation, its generation (`naming.generation_key`) and first name."""

    spec: ScalesetSpec
    live_name: str
    generation: str


@dataclasses.dataclass
class Prepared:
    """The specs of one pass: valid entries, and reports for those that cannot be handled."""

    entries: list[SpecEntry]
    rejected: list[SpecReport]
    warnings: list[str]
    configured_names: frozenset[str]
    budget: int
    # Applications with a spec refused this pass: their scale sets are never orphans (ADR 0014).
    refused_applications: frozenset[str] = frozenset()


def prepare(specs: Sequence[ScalesetSpec], settings: ReconcileSettings) -> Prepared:
    """Validate specs, drop duplicates (the first wins) and compute their first live names.

    A name several applications publish is refused for all of them (`ownership`).
    """
    unique, warnings, contested = one_spec_per_name(specs)
    entries: list[SpecEntry] = []
    rejected: list[SpecReport] = list(contested)
    refused = {spec.application for spec in specs if spec.name in _names(contested)}
    for spec in unique:
        problems = validate_spec(spec, settings)
        if problems:
            refused.add(spec.application)
            rejected.append(
                SpecReport(
                    spec.name,
                    Phase.BLOCKED,
                    message="; ".join(problems),
                    status=f"invalid settings, fix them in its configurator: {problems[0]}",
                    errors=problems,
                )
            )
            continue
        live = spec_live_name(spec, settings.name_budget)
        entries.append(SpecEntry(spec, live, spec_generation(spec)))
    names = frozenset(spec.name for spec in specs)
    return Prepared(entries, rejected, warnings, names, settings.name_budget, frozenset(refused))


def _names(reports: Iterable[SpecReport]) -> set[str]:
    return {report.logical for report in reports}


def validate_spec(spec: ScalesetSpec, settings: ReconcileSettings) -> list[str]:
    """Return why GARM would refuse (or mishandle) `spec`, one message each; empty if valid."""
    problems: list[str] = []
    if not is_valid_logical_name(spec.name):
        problems.append("the name must be made of a-z, 0-9 and '-' (not at either end)")
    problems.extend(desired_create(spec, spec.name).validate())
    if not spec.entity.name.strip():
        problems.append("no repository or organization is set")
    try:
        if not problems:
            spec_live_name(spec, settings.name_budget)
    except ValueError as error:
        problems.append(str(error))
    return problems


def desired_create(spec: ScalesetSpec, name: str) -> ScaleSetCreate:
    """Return the create request for `spec` under `name` (the template id is resolved later)."""
    return ScaleSetCreate(
        name=name,
        provider_name=spec.provider_name,
        image=spec.image,
        flavor=spec.flavor,
        labels=tuple(sorted(normalise_labels(spec.labels))),
        max_runners=spec.max_runners,
        min_idle_runners=spec.min_idle_runners,
        os_type=spec.os_type,
        os_arch=spec.os_arch,
        enabled=True,
        runner_group=spec.runner_group or DEFAULT_RUNNER_GROUP,
        runner_bootstrap_timeout=spec.runner_bootstrap_timeout,
        extra_specs=dict(spec.extra_specs) or None,
    )


# Grouping observed scale sets -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Member:
    """An observed scale set the charm owns (or may adopt), with its marker if it has one.

    `attempt` and `generation` say which attempt at which generation it is: from the marker,
    or for an adopted unmarked one from its name (`naming`); "" for a marker of a charm
    version before short names.
    """

    scaleset: ScaleSet
    marker: Marker | None
    attempt: int = 0
    generation: str = ""


@dataclasses.dataclass
class Family:
    """One spec's observed scale sets."""

    live: Member | None = None
    predecessors: list[Member] = dataclasses.field(default_factory=list[Member])
    foreign: list[str] = dataclasses.field(default_factory=list[str])
    # Scale sets of this name the spec does not claim: (name, holder) (`ownership`).
    held: list[tuple[str, str]] = dataclasses.field(default_factory=list[tuple[str, str]])


@dataclasses.dataclass
class Grouping:
    """Every observed scale set sorted into families, orphans and hand-made ones.

    `taken` is every name GARM shows: a create never takes one (`naming`).
    """

    families: dict[str, Family]
    orphans: list[Member]
    taken: frozenset[str] = frozenset()
    # Orphans of an application with a spec refused this pass: never swept (ADR 0014).
    kept: list[Member] = dataclasses.field(default_factory=list[Member])


def group(
    prepared: Prepared, scalesets: Iterable[ScaleSet], *, all_readable: bool = False
) -> Grouping:
    """Sort observed scale sets into the specs' families and the charm's orphans.

    A scale set carrying this charm's marker is in the family of the spec its marker names if
    that spec claims it (`ownership.claims`; one an earlier version stamped only when
    `all_readable`, every configurator's data was read); else it is held by its owner and an
    orphan (swept only when every configurator is readable); an orphan too if no spec has that
    name. An
    unmarked scale set is adopted only if its name is one the charm would have given it (it
    was created just before a marker could be written); anything else is hand-made and left
    alone. Each family's live scale set is its latest attempt at the spec's generation, named
    as that attempt is named; every other member is a predecessor.
    """
    families = {entry.spec.name: Family() for entry in prepared.entries}
    specs = {entry.spec.name: entry.spec for entry in prepared.entries}
    by_stem: dict[str, list[ScalesetSpec]] = {}
    for entry in prepared.entries:
        by_stem.setdefault(spec_stem(entry.spec.name, prepared.budget), []).append(entry.spec)
    grouping = Grouping(families, [])
    listed = sorted(scalesets, key=lambda s: s.id)
    for scaleset in listed:
        marker = parse_marker(scaleset.extended_state)
        if marker is not None:
            member = Member(scaleset, marker, marker.attempt, marker.generation)
            _place_marked(member, marker, (prepared, specs), grouping, all_readable)
        else:
            candidates = by_stem.get(stem_of(scaleset.name) or "", [])
            _place_unmarked(scaleset, candidates, families, prepared.budget)
    for entry in prepared.entries:
        _choose_live(families[entry.spec.name], entry, prepared.budget)
    grouping.taken = frozenset(scaleset.name for scaleset in listed)
    return grouping


def _place_marked(
    member: Member,
    marker: Marker,
    specs: tuple[Prepared, Mapping[str, ScalesetSpec]],
    grouping: Grouping,
    all_readable: bool,
) -> None:
    prepared, by_name = specs
    family = grouping.families.get(marker.logical)
    claimed = family is not None and claims(by_name[marker.logical], member.scaleset, marker)
    waiting = claimed and not marker.application and not all_readable
    if family is not None and claimed and not waiting:
        family.predecessors.append(member)
    elif family is not None:
        # Another configurator's: an orphan only once every configurator is readable.
        family.held.append((member.scaleset.name, holder(marker, waiting=waiting)))
        grouping.orphans.append(member)
    elif marker.application and marker.application in prepared.refused_applications:
        # Its application's spec was refused (a bad rename): nothing running goes for that.
        grouping.kept.append(member)
    elif marker.logical not in prepared.configured_names:
        grouping.orphans.append(member)
    # Otherwise its spec exists but was rejected this pass: leave the family as it is.


def _place_unmarked(
    scaleset: ScaleSet,
    candidates: Sequence[ScalesetSpec],
    families: Mapping[str, Family],
    budget: int,
) -> None:
    """Adopt a scale set created just before its marker could be written; else leave it alone.

    Its name is one the charm gives an attempt at the spec's generation, or at the generation
    of the scale set's own labels (the spec changed since), on the spec's entity and provider.
    """
    for spec in candidates:
        found = _adoptable(spec, scaleset, budget)
        if found is not None and claims(spec, scaleset, None):
            attempt, generation = found
            families[spec.name].predecessors.append(
                Member(scaleset, None, attempt=attempt, generation=generation)
            )
            return
    for spec in candidates:
        families[spec.name].foreign.append(scaleset.name)


def _adoptable(spec: ScalesetSpec, scaleset: ScaleSet, budget: int) -> tuple[int, str] | None:
    own = generation_key(
        scaleset.labels, scaleset.provider_name, scaleset.entity_kind, scaleset.entity_name
    )
    for generation in dict.fromkeys((spec_generation(spec), own)):
        for attempt in range(MAX_ADOPTED_ATTEMPT + 1):
            if scaleset.name == name_for(spec.name, generation, budget=budget, attempt=attempt):
                return attempt, generation
    return None


def _choose_live(family: Family, entry: SpecEntry, budget: int) -> None:
    """The live scale set is the latest attempt at the spec's generation; earlier ones go."""
    current = [m for m in family.predecessors if _is_attempt_at(m, entry, budget)]
    if not current:
        return
    live = max(current, key=lambda member: (member.attempt, member.scaleset.id))
    family.predecessors.remove(live)
    family.live = live


def _is_attempt_at(member: Member, entry: SpecEntry, budget: int) -> bool:
    """Whether `member` is an attempt at the entry's generation, named as that attempt is."""
    name = name_for(entry.spec.name, entry.generation, budget=budget, attempt=member.attempt)
    return member.generation == entry.generation and member.scaleset.name == name


# What else to observe -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Needs:
    """What the pass must list besides scale sets, so a converged pass lists nothing more."""

    entity_kinds: frozenset[EntityKind]
    providers: bool
    instances: bool


def needs(
    prepared: Prepared, grouping: Grouping, *, sweep_orphans: bool, stuck_check: bool = False
) -> Needs:
    """Return what to fetch: entities and providers only to create, instances only to drain."""
    creating = [
        entry
        for entry in prepared.entries
        if grouping.families[entry.spec.name].live is None
        and (sweep_orphans or not grouping.families[entry.spec.name].held)
    ]
    retired = [
        member
        for family in grouping.families.values()
        for member in family.predecessors
        if member.marker is not None and member.marker.retired
    ]
    retired_orphans = sweep_orphans and any(
        m.marker is not None and m.marker.retired for m in grouping.orphans
    )
    capacity = any(
        awaits_capacity(entry.spec, grouping.families[entry.spec.name])
        for entry in prepared.entries
    )
    refreshing = any(
        family.live is not None
        and family.live.marker is not None
        and family.live.marker.refresh_from is not None
        for family in grouping.families.values()
    )
    stuck = stuck_check and any(f.live is not None for f in grouping.families.values())
    return Needs(
        entity_kinds=frozenset(entry.spec.entity.kind for entry in creating),
        providers=bool(creating),
        instances=bool(retired) or retired_orphans or capacity or refreshing or stuck,
    )


def awaits_capacity(spec: ScalesetSpec, family: Family) -> bool:
    """Whether a hand-over must first see a runner of the live scale set online.

    Only with `min_idle_runners` > 0 (with 0 no runner is expected before a job comes) and only
    while a predecessor still serves: a converged pass never lists instances for it.
    """
    return (
        spec.min_idle_runners > 0
        and family.live is not None
        and any(m.marker is None or m.marker.retired_at is None for m in family.predecessors)
    )


# Planning -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Observed:
    """What the pass fetched because `needs` asked for it (None: not fetched)."""

    providers: frozenset[str] | None = None
    entities: Mapping[tuple[EntityKind, str], Entity] | None = None
    instances: Mapping[int, Sequence[Instance]] | None = None

    # Busy runners of retired scale sets that GitHub no longer lists: their jobs ended.
    finished: frozenset[str] = frozenset()
    # GARM ids of scale sets GitHub answered it no longer has (ADR 0029).
    missing_at_github: frozenset[int] = frozenset()

    def runners(self, scaleset_id: int) -> Sequence[Instance]:
        """Return the instances of one scale set."""
        return (self.instances or {}).get(scaleset_id, ())


@dataclasses.dataclass(frozen=True)
class BusyRunner:
    """A runner GARM shows busy on a retired scale set: whose job GitHub may have ended."""

    name: str
    agent_id: int
    entity_kind: EntityKind
    entity_name: str


def busy_on_retired(grouping: Grouping, observed: Observed) -> list[BusyRunner]:
    """Return the runners worth asking GitHub about: busy ones of retired scale sets.

    Only a runner GARM shows `active` (it took a job, so GitHub registered it) with an agent id
    qualifies; an idle one GARM removes by itself (B14) and one without an agent id cannot be
    looked up at GitHub.
    """
    members = [m for family in grouping.families.values() for m in family.predecessors]
    members += grouping.orphans
    return [
        BusyRunner(runner.name, runner.agent_id, m.scaleset.entity_kind, m.scaleset.entity_name)
        for m in members
        if m.marker is not None and m.marker.retired_at is not None
        for runner in observed.runners(m.scaleset.id)
        if _known_busy(runner)
    ]


def _known_busy(runner: Instance) -> bool:
    """A busy runner GitHub can be asked about: up, with a job and GitHub's agent id."""
    return runner.status == "running" and is_busy(runner) and runner.agent_id > 0


@dataclasses.dataclass(frozen=True)
class GithubScaleSetRef:
    """A scale set to look up at GitHub, as GARM's worker looks it up: by name and runner group.

    Attributes:
        scaleset_id: GARM's id, what the answer names.
        name: the scale set's name at GitHub (GARM's name).
        github_id: GitHub's id of it, as GARM recorded it.
        runner_group: the runner group's name ("" or "Default": the default group).
        entity_kind: the entity's kind.
        entity_name: the entity's name (`owner/repo` for a repository).
    """

    scaleset_id: int
    name: str
    github_id: int
    runner_group: str
    entity_kind: EntityKind
    entity_name: str


def to_look_up_at_github(grouping: Grouping) -> list[GithubScaleSetRef]:
    """Return the scale sets worth asking GitHub whether it still has them (ADR 0029).

    Each live scale set that serves, and each retired one whose delete GARM kept: GitHub
    deletes a scale set whose listener stayed offline for days, and GARM's API shows nothing
    of it (garm-behaviour B33). One GARM has not created at GitHub yet (no GitHub id) is not
    asked about.
    """
    members: list[Member] = []
    for family in grouping.families.values():
        if family.live is not None and _serves(family.live):
            members.append(family.live)
        members += [m for m in family.predecessors if _delete_kept(m)]
    members += [m for m in grouping.orphans if _delete_kept(m)]
    return [
        GithubScaleSetRef(
            m.scaleset.id,
            m.scaleset.name,
            m.scaleset.github_scale_set_id,
            m.scaleset.runner_group,
            m.scaleset.entity_kind,
            m.scaleset.entity_name,
        )
        for m in members
        if m.scaleset.github_scale_set_id > 0
    ]


def _serves(member: Member) -> bool:
    return serves(member.scaleset, member.marker)


def _delete_kept(member: Member) -> bool:
    marker = member.marker
    return marker is not None and marker.retired and marker.delete_failures > 0


@dataclasses.dataclass
class Plan:
    """The actions of one pass, in order, and the report they will be executed against."""

    actions: list[Action]
    report: ReconcileReport


def entity_key(kind: EntityKind, name: str) -> tuple[EntityKind, str]:
    """Return how entities are looked up: GitHub names are case-insensitive."""
    return kind, name.strip().lower()


@dataclasses.dataclass(frozen=True)
class _Context:
    now: datetime.datetime
    settings: ReconcileSettings
    observed: Observed
    # Every configurator is readable: a scale set another one holds is an orphan, not a claim.
    sweep_orphans: bool = False
    # Every name GARM shows, and those this pass's creates take: a create never reuses one.
    taken: set[str] = dataclasses.field(default_factory=set[str])
    # Changeovers the surge budget keeps waiting: logical name -> place in the queue.
    queued: Mapping[str, int] = dataclasses.field(default_factory=dict[str, int])


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


def order_writes(actions: Iterable[Action]) -> list[Action]:
    """Creates first, then updates, then deletes and runner removals; else in plan order.

    A create is what waits on GitHub longest and what a queued changeover starts with; the
    retirements that free the surge budget come next.
    """
    return sorted(actions, key=lambda action: _WRITE_RANKS[type(action)])


_WRITE_RANKS: dict[type, int] = {
    CreateAction: 0,
    UpdateAction: 1,
    DeleteAction: 2,
    ForceRemoveAction: 2,
    RefreshRemoveAction: 2,
    StuckRemoveAction: 2,
}


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


def refresh_after(
    spec: ScalesetSpec, live: Member, now: datetime.datetime, step: RefreshStep
) -> datetime.datetime | None:
    """The `refresh-from` the live scale set's marker carries after this pass (ADR 0022).

    A change this pass makes that leaves the runners outdated starts a refresh now (not while
    the set is being re-enabled: it has served nothing since); otherwise the one under way, if
    `step` goes on with it.
    """
    if live.marker is not None and _serves(live) and changes_runners(_live_fields(spec, live)):
        return now
    return step.refresh_from


def live_update(
    spec: ScalesetSpec,
    live: Member,
    now: datetime.datetime,
    refresh_from: datetime.datetime | None = None,
    surge: int = DEFAULT_SURGE,
) -> UpdateAction | None:
    """Return the one update that makes the live scale set match `spec`, or None if it does.

    Visible fields are compared with what GARM lists; `extra_specs` and the template (lists
    name it only by id) through the marker's config hash. A retired or disabled live scale set (a
    label change back to an earlier set) is re-enabled with its counts restored. While a rolling
    refresh runs (`refresh_from`, from `refresh_after`) the counts are raised by `surge` (ADR
    0022).
    """
    scaleset, marker = live.scaleset, live.marker
    reenabling = not _serves(live)
    fields = _live_fields(spec, live)
    hidden = config_hash(spec)
    hidden_differs = marker is None or marker.config != hidden
    if refresh_from is not None:
        raised = raised_counts(spec.min_idle_runners, spec.max_runners, surge)
        _set_counts(fields, scaleset, raised)
    wanted_marker = Marker(
        logical=spec.name,
        config=hidden,
        enabled_at=now if reenabling else (marker.enabled_at if marker else None),
        attempt=live.attempt,
        application=spec.application,
        refresh_from=refresh_from,
        generation=live.generation,
    )
    if wanted_marker != marker:
        fields["extended_state"] = wanted_marker.render()
    if not fields and not hidden_differs:
        return None
    return UpdateAction(
        owner=spec.name,
        scaleset_id=scaleset.id,
        name=scaleset.name,
        update=ScaleSetUpdate(**fields),
        set_template=hidden_differs,
        template_name=spec.template_name,
        os_type=spec.os_type,
    )


def _live_fields(spec: ScalesetSpec, live: Member) -> dict[str, Any]:
    """The update fields in which the live scale set differs from `spec` (without the marker).

    `extra_specs` is sent whenever the marker's config hash differs, so that the template,
    which GARM's lists name only by id, is set again with it.
    """
    fields = _visible_differences(spec, live.scaleset)
    if live.marker is None or live.marker.config != config_hash(spec):
        fields["extra_specs"] = dict(spec.extra_specs)
    return fields


def _set_counts(fields: dict[str, Any], scaleset: ScaleSet, counts: tuple[int, int]) -> None:
    """Ask for `counts` (min idle, max) instead of the spec's, sent only when GARM differs."""
    fields.pop("min_idle_runners", None)
    fields.pop("max_runners", None)
    if (scaleset.min_idle_runners, scaleset.max_runners) != counts:
        fields["min_idle_runners"], fields["max_runners"] = counts


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


def _visible_differences(spec: ScalesetSpec, scaleset: ScaleSet) -> dict[str, Any]:
    """Return the mutable fields a list response shows that differ from `spec`.

    GARM applies a string field only when it is not empty, so an empty spec value means
    "leave it"; min and max are sent together so GARM never sees min > max in between.
    """
    fields: dict[str, Any] = {}
    if not scaleset.enabled:
        fields["enabled"] = True
    if (scaleset.min_idle_runners, scaleset.max_runners) != (
        spec.min_idle_runners,
        spec.max_runners,
    ):
        fields["min_idle_runners"] = spec.min_idle_runners
        fields["max_runners"] = spec.max_runners
    wanted_strings = {
        "image": spec.image,
        "flavor": spec.flavor,
        "os_type": spec.os_type,
        "os_arch": spec.os_arch,
        "runner_group": spec.runner_group or DEFAULT_RUNNER_GROUP,
    }
    for field, wanted in wanted_strings.items():
        if wanted.strip() and getattr(scaleset, field) != wanted:
            fields[field] = wanted
    if scaleset.runner_bootstrap_timeout != spec.runner_bootstrap_timeout:
        fields["runner_bootstrap_timeout"] = spec.runner_bootstrap_timeout
    return fields


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


def plan_retirement(
    logical: str,
    member: Member,
    ready: bool,
    context: _Context,
    *,
    owner: str | None = None,
    application: str | None = None,
) -> tuple[PredecessorReport, list[Action]]:
    """Plan one predecessor (or orphan): retire it, drain it, force it, delete it.

    With `application` (a predecessor's spec), the retiring marker records it: a scale set an
    earlier charm version stamped is adopted once, by that spec.
    """
    scaleset, marker = member.scaleset, member.marker
    owner = owner or logical
    if marker is None or marker.retired_at is None:
        if not ready:
            return PredecessorReport(scaleset.name, scaleset.id, Phase.ACTIVE), []
        base = marker or Marker(
            logical=logical, attempt=member.attempt, generation=member.generation
        )
        if application is not None:
            base = dataclasses.replace(base, application=application)
        retired = dataclasses.replace(base, retired_at=context.now)
        return (
            PredecessorReport(scaleset.name, scaleset.id, Phase.HANDING_OVER),
            [_retire_action(owner, scaleset, retired)],
        )
    actions: list[Action] = []
    if scaleset.enabled or scaleset.min_idle_runners or scaleset.max_runners:
        actions.append(_retire_action(owner, scaleset, marker))
    report = _drain(owner, member, marker, context, actions)
    return report, actions


def _retire_action(owner: str, scaleset: ScaleSet, marker: Marker) -> UpdateAction:
    """One update that stops the listener and lets GARM remove idle runners (B14)."""
    return UpdateAction(
        owner=owner,
        scaleset_id=scaleset.id,
        name=scaleset.name,
        update=ScaleSetUpdate(
            enabled=False, min_idle_runners=0, max_runners=0, extended_state=marker.render()
        ),
    )


def _drain(
    owner: str,
    member: Member,
    marker: Marker,
    context: _Context,
    actions: list[Action],
) -> PredecessorReport:
    scaleset = member.scaleset
    retired_at = marker.retired_at or context.now
    runners = context.observed.runners(scaleset.id)
    settings = context.settings
    deadline = drain_deadline(retired_at, settings.drain_timeout, settings.drain_holds)
    left = max(0.0, (deadline - context.now).total_seconds())
    report = PredecessorReport(
        scaleset.name,
        scaleset.id,
        Phase.DRAINING,
        runners=len(runners),
        seconds_left=left,
        delete_failures=marker.delete_failures,
        deadline=deadline,
        missing_at_github=scaleset.id in context.observed.missing_at_github,
    )
    if not runners:
        report.phase = Phase.DELETING
        report.delete_retry_at = marker.delete_retry_at
        if marker.delete_retry_at is None or context.now >= marker.delete_retry_at:
            actions.append(DeleteAction(owner, scaleset.id, scaleset.name, marker))
    elif context.now >= deadline:
        report.phase = Phase.FORCING
        forceable = [r for r in runners if r.status in REMOVABLE]
        report.forced = len(forceable)
        actions.extend(ForceRemoveAction(owner, scaleset.name, r.name) for r in forceable)
    else:
        # Positive evidence only: GitHub answered that it no longer lists this busy runner.
        finished = [r for r in runners if _known_busy(r) and r.name in context.observed.finished]
        actions.extend(
            ForceRemoveAction(owner, scaleset.name, r.name, finished=True) for r in finished
        )
    return report


def _plan_orphan(orphan: Member, context: _Context) -> tuple[PredecessorReport, list[Action]]:
    marker = orphan.marker
    logical = marker.logical if marker is not None else orphan.scaleset.name
    return plan_retirement(
        logical, orphan, ready=True, context=context, owner=orphan_owner(orphan.scaleset.name)
    )


def orphan_owner(name: str) -> str:
    """Return the key under which an orphan's actions and errors are reported."""
    return f"orphan:{name}"


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
