"""Scale sets: make GARM's scale sets match the specs, changing immutable fields by replacement.

One pass observes GARM, plans in pure code (`plan`) and executes the plan:

    list_scalesets -> group into families -> list what the plan needs (providers and entities
    only to create, instances only to drain) -> ask GitHub about busy runners of retired scale
    sets (when given a way to) -> plan -> execute -> confirm deletes by listing

A retired scale set emptied by removing runners whose jobs GitHub says ended is deleted in the
same pass: the pass waits (bounded) for GARM to remove those runners, then plans once more.

Naming is in `naming`, the ownership marker and drain clock in `marker` (ADR 0002), the
report and the `juju status` text in `report`. The changeover itself
is explained in docs/explanation/scaleset-changeover.md.

Errors: one spec's refusal by GARM (`GarmApiError`) or a request the client refuses to send
(`InvalidRequest`) is recorded in that spec's report and the pass goes on; `GarmUnreachable`
ends the pass at once and propagates, and nothing is inferred from it.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from garm_api import (
    Entity,
    EntityKind,
    GarmApiError,
    Instance,
    InvalidRequest,
    Provider,
    ScaleSet,
    ScaleSetCreate,
    ScaleSetUpdate,
    Template,
)
from scaleset_reconciler.actions import (
    Action,
    CreateAction,
    DeleteAction,
    ForceRemoveAction,
    RefreshRemoveAction,
    StuckRemoveAction,
    UpdateAction,
)
from scaleset_reconciler.grouping import group
from scaleset_reconciler.needs import (
    BusyRunner,
    GithubScaleSetRef,
    Needs,
    Observed,
    busy_on_retired,
    entity_key,
    needs,
    to_look_up_at_github,
)
from scaleset_reconciler.plan import Plan, plan
from scaleset_reconciler.prepare import Prepared, prepare
from scaleset_reconciler.report import (
    REPEATED_DELETE_FAILURES,
    Failure,
    Phase,
    PredecessorReport,
    ReconcileReport,
)
from scaleset_reconciler.retirement import orphan_owner
from scaleset_reconciler.settings import ReconcileSettings
from scaleset_reconciler.spec import ScalesetSpec

logger = logging.getLogger(__name__)

# After a delete GARM kept, the next is sent a minute later, then 2, 4... at most an hour later.
FIRST_DELETE_RETRY = datetime.timedelta(minutes=1)
LAST_DELETE_RETRY = datetime.timedelta(hours=1)
# How long a pass waits for GARM to remove runners whose jobs ended, listing every few seconds
# (GARM v0.2.1 removed one within seconds: garm-behaviour, the end-to-end entries).
SETTLE_STEP = 2.0
SETTLE_LIMIT = 20.0

# Names of the runners (of those asked about) that GitHub positively no longer lists.
FinishedAtGithub = Callable[[Sequence[BusyRunner]], frozenset[str]]
# GARM ids of the scale sets (of those asked about) that GitHub positively no longer has.
MissingAtGithub = Callable[[Sequence[GithubScaleSetRef]], frozenset[int]]


class ScalesetApi(Protocol):
    """The `GarmClient` calls the scale-set reconciler makes."""

    def list_scalesets(self) -> list[ScaleSet]:
        """Return every scale set."""
        ...

    def list_providers(self) -> list[Provider]:
        """Return the configured providers."""
        ...

    def list_entities(self, kind: EntityKind) -> list[Entity]:
        """Return every entity of one kind."""
        ...

    def list_templates(self, os_type: str | None = None) -> list[Template]:
        """Return templates (without bodies)."""
        ...

    def list_instances(self) -> list[Instance]:
        """Return every instance."""
        ...

    def create_scaleset(
        self, kind: EntityKind, entity_id: str, params: ScaleSetCreate
    ) -> ScaleSet:
        """Create a scale set."""
        ...

    def update_scaleset(self, scaleset_id: int, params: ScaleSetUpdate) -> ScaleSet:
        """Update a scale set's mutable fields."""
        ...

    def delete_scaleset(self, scaleset_id: int) -> None:
        """Ask GARM to delete a scale set."""
        ...

    def delete_instance(self, name: str, *, force: bool) -> None:
        """Remove a runner; the reconciler always says whether to force it (no default)."""
        ...


def reconcile(
    api: ScalesetApi,
    specs: Sequence[ScalesetSpec],
    *,
    now: datetime.datetime,
    settings: ReconcileSettings | None = None,
    sweep_orphans: bool,
    finished_at_github: FinishedAtGithub | None = None,
    missing_at_github: MissingAtGithub | None = None,
    sleep: Callable[[float], None] | None = None,
) -> ReconcileReport:
    """Run one pass: observe GARM, plan, execute, confirm deletes, report.

    Args:
        api: a `GarmClient` (or anything with the same calls).
        specs: the desired scale sets; the first of several with one name wins.
        now: the current time (aware), the clock of retirements and of the hand-over grace.
        settings: hand-over grace, drain timeout and name length; defaults when None.
        sweep_orphans: whether `specs` is the complete desired state, so that this charm's
            scale sets whose spec is gone may be retired and deleted. Pass False while a
            relation exists that has not published its spec yet.
        finished_at_github: asked, only when a retired scale set has busy runners, which of
            them GitHub no longer lists; those are removed at once. None: never asked, so GARM
            (or the drain deadline) removes them.
        missing_at_github: asked, once per call, which serving scale sets (and retired ones
            whose delete GARM kept) GitHub no longer has; a live one is created again under
            a new name (ADR 0029). None: not asked.
        sleep: how the pass waits for GARM to remove such runners before deleting the scale
            set they emptied; None: no waiting, the next pass deletes it.

    Returns:
        What the pass found and did; refused writes are in it, never raised.

    Raises:
        GarmUnreachable: GARM did not answer; the pass stopped at that call.
        GarmError: a read the plan needs (the scale sets, their runners) was refused or
            unreadable; nothing can be planned without it, so the pass stops before any write.
    """
    settings = settings or ReconcileSettings()
    counted = _CountingApi(api)
    prepared = prepare(specs, settings)
    missing = None if missing_at_github is None else _AskedOnce(missing_at_github)
    passes = _Passes(counted, prepared, now, settings, sweep_orphans)
    report, emptied = passes.run(finished_at_github, missing)
    if emptied and sleep is not None and not report.all_errors():
        _await_removal(counted, emptied, sleep)
        report, _ = passes.run(None, missing)
    report.requests, report.writes = counted.requests, counted.writes
    for error in report.all_errors():
        logger.warning("scale sets: %s", error)
    for spec in report.specs:
        for warning in spec.warnings:
            logger.warning("scale sets: %r: %s", spec.logical, warning)
    return report


@dataclasses.dataclass(frozen=True)
class _Passes:
    """Observe, plan and execute; `reconcile` may run a second pass after the first."""

    api: _CountingApi
    prepared: Prepared
    now: datetime.datetime
    settings: ReconcileSettings
    sweep_orphans: bool

    def run(
        self,
        finished_at_github: FinishedAtGithub | None,
        missing_at_github: MissingAtGithub | None = None,
    ) -> tuple[ReconcileReport, set[int]]:
        """Run one pass; return its report and the scale sets it emptied of finished runners."""
        listed = self.api.list_scalesets()
        grouping = group(self.prepared, listed, all_readable=self.sweep_orphans)
        wanted = needs(
            self.prepared,
            grouping,
            sweep_orphans=self.sweep_orphans,
            stuck_check=self.settings.runner_stuck_timeout is not None,
        )
        observed = _observe(self.api, wanted)
        busy = busy_on_retired(grouping, observed)
        if busy and finished_at_github is not None:
            observed = dataclasses.replace(observed, finished=finished_at_github(busy))
        if missing_at_github is not None and (refs := to_look_up_at_github(grouping)):
            observed = dataclasses.replace(observed, missing_at_github=missing_at_github(refs))
        the_plan = plan(
            self.prepared,
            grouping,
            observed,
            now=self.now,
            settings=self.settings,
            sweep_orphans=self.sweep_orphans,
        )
        limit = self.settings.max_writes or None
        executor = _Executor(self.api, the_plan, self.now, limit)
        executor.run()
        report = the_plan.report
        report.held = executor.held_after(listed)
        report.provider_scalesets = _per_provider(report.held)
        return report, _emptied(report, executor.removed_finished, listed)


class _AskedOnce:
    """Asks GitHub at the first pass only; a second pass of the same call reuses the answer.

    The second pass comes seconds later: GitHub's answer still holds, and the time budget for
    GitHub is one per call.
    """

    def __init__(self, ask: MissingAtGithub) -> None:
        self._ask = ask
        self._answer: frozenset[int] | None = None

    def __call__(self, refs: Sequence[GithubScaleSetRef]) -> frozenset[int]:
        if self._answer is None:
            self._answer = self._ask(refs)
        return self._answer


def _emptied(
    report: ReconcileReport, removed: Sequence[ForceRemoveAction], listed: Sequence[ScaleSet]
) -> set[int]:
    """The scale sets whose every runner this pass removed because its job had ended."""
    counts = Counter(action.scaleset_name for action in removed)
    ids = {scaleset.name: scaleset.id for scaleset in listed}
    predecessors = [p for spec in report.specs for p in spec.predecessors] + report.orphans
    return {
        ids[p.name]
        for p in predecessors
        if p.name in counts and p.runners is not None and counts[p.name] == p.runners
    }


def _await_removal(api: ScalesetApi, emptied: set[int], sleep: Callable[[float], None]) -> None:
    """Wait until GARM has removed every runner of `emptied`, at most `SETTLE_LIMIT` seconds.

    GARM refuses to delete a scale set that still has runners, even ones being removed.
    """
    waited = 0.0
    while waited < SETTLE_LIMIT:
        sleep(SETTLE_STEP)
        waited += SETTLE_STEP
        if not any(instance.scale_set_id in emptied for instance in api.list_instances()):
            logger.info("scale sets: GARM removed the runners within %.0f s", waited)
            return
    logger.info("scale sets: GARM is still removing runners; the next pass deletes their sets")


def preview(
    api: ScalesetApi,
    specs: Sequence[ScalesetSpec],
    *,
    now: datetime.datetime,
    settings: ReconcileSettings | None = None,
    sweep_orphans: bool,
) -> ReconcileReport:
    """Plan a pass without executing it: what `reconcile` would do now.

    It reads what the plan needs, as `reconcile` does, and writes nothing; the list-scalesets
    action shows it to the operator (and lists every scale set's runners itself).
    """
    settings = settings or ReconcileSettings()
    prepared = prepare(specs, settings)
    listed = api.list_scalesets()
    grouping = group(prepared, listed, all_readable=sweep_orphans)
    stuck_check = settings.runner_stuck_timeout is not None
    wanted = needs(prepared, grouping, sweep_orphans=sweep_orphans, stuck_check=stuck_check)
    observed = _observe(api, wanted)
    report = plan(
        prepared, grouping, observed, now=now, settings=settings, sweep_orphans=sweep_orphans
    ).report
    report.provider_scalesets = _per_provider(listed)
    return report


def _per_provider(scalesets: Iterable[ScaleSet]) -> dict[str, int]:
    return dict(Counter(scaleset.provider_name for scaleset in scalesets))


def _observe(api: ScalesetApi, wanted: Needs) -> Observed:
    """Fetch what the plan needs and nothing else (a converged pass lists only scale sets)."""
    providers = frozenset(p.name for p in api.list_providers()) if wanted.providers else None
    entities: dict[tuple[EntityKind, str], Entity] | None = None
    if wanted.entity_kinds:
        entities = {
            entity_key(entity.kind, entity.name): entity
            for kind in sorted(wanted.entity_kinds)
            for entity in api.list_entities(kind)
        }
    instances: dict[int, list[Instance]] | None = None
    if wanted.instances:
        instances = defaultdict(list)
        for instance in api.list_instances():
            if instance.scale_set_id:
                instances[instance.scale_set_id].append(instance)
        instances = dict(instances)
    return Observed(providers, entities, instances)


class _Executor:
    """Runs a plan's actions in order; one owner's refusal skips only that owner's rest.

    With `limit`, the writes of the whole reconcile stay within it: an action runs only if what
    it may write fits (a create and its marker: 2; a delete and the record of a kept one: 2;
    else 1), creates and updates leaving room for the deletes and runner removals that follow
    them (at most half the bound); once one does not fit, the rest of its group waits.
    """

    def __init__(
        self, api: _CountingApi, the_plan: Plan, now: datetime.datetime, limit: int | None = None
    ) -> None:
        self._api = api
        self._limit = limit
        self._now = now
        self._actions = the_plan.actions
        self._report = the_plan.report
        self._specs = {spec.logical: spec for spec in the_plan.report.specs}
        self._orphans = {orphan_owner(o.name): o for o in the_plan.report.orphans}
        self._failed: set[str] = set()
        self._deleted: list[DeleteAction] = []
        self.removed_finished: list[ForceRemoveAction] = []
        self._created: list[ScaleSet] = []
        self._relisted: list[ScaleSet] | None = None
        self._templates: list[Template] | None = None

    def run(self) -> None:
        """Execute every action, then confirm the deletes by listing again.

        Part of the bound is kept for the deletes and runner removals (`_clearing_reserve`):
        creates and updates stop where only that part is left, and once one of either group
        does not fit, it and the rest of its group wait for the next pass.
        """
        reserve = self._clearing_reserve()
        stopped: set[bool] = set()
        for action in self._actions:
            if action.owner in self._failed:
                continue
            clearing = isinstance(action, _CLEARING)
            writes = _WRITES_AT_MOST.get(type(action), 1) + (0 if clearing else reserve)
            if clearing in stopped or not self._room(writes):
                stopped.add(clearing)
                self._report.deferred_writes += 1
                continue
            try:
                self._execute(action)
            except (GarmApiError, InvalidRequest) as error:
                if not isinstance(action, ForceRemoveAction | StuckRemoveAction):
                    self._failed.add(action.owner)
                self._fail(action.owner, f"{_describe(action)}: {error}", _failure(action, error))
        if self._report.deferred_writes:
            logger.info(
                "scale sets: %d actions wait for the next pass (max %d writes per pass)",
                self._report.deferred_writes,
                self._limit or 0,
            )
        if self._deleted:
            self._confirm_deletes()

    def _clearing_reserve(self) -> int:
        """Writes kept for the deletes and runner removals: what they need, at most half.

        Deletes come last in the plan's order; under a bound that creates fill every pass of a
        fleet-wide change, empty retired scale sets would wait until the last create (300 sets
        became 598 before ADR 0038's amendment). Half at most, so neither group starves.
        """
        if self._limit is None:
            return 0
        needed = sum(
            _WRITES_AT_MOST.get(type(action), 1)
            for action in self._actions
            if isinstance(action, _CLEARING)
        )
        room = self._limit - self._api.writes - len(self._deleted)
        return max(0, min(needed, room // 2))

    def _room(self, writes: int) -> bool:
        """Whether `writes` more fit, with a record of each delete sent so far GARM may keep."""
        planned = self._api.writes + len(self._deleted) + writes
        return self._limit is None or planned <= self._limit

    def held_after(self, listed: list[ScaleSet]) -> list[ScaleSet]:
        """The scale sets GARM holds after `run`, given what the pass listed before it."""
        if self._relisted is not None:
            return self._relisted
        return [*listed, *self._created]

    def _execute(self, action: Action) -> None:
        if isinstance(action, CreateAction):
            self._create(action)
        elif isinstance(action, UpdateAction):
            self._update(action)
        elif isinstance(action, RefreshRemoveAction):
            self._remove_outdated(action)
        elif isinstance(action, StuckRemoveAction):
            self._api.delete_instance(action.instance_name, force=True)
            logger.info(
                "scale sets: removed stuck runner %r of %r",
                action.instance_name,
                action.scaleset_name,
            )
        elif isinstance(action, ForceRemoveAction):
            self._api.delete_instance(action.instance_name, force=True)
            if action.finished:
                self.removed_finished.append(action)
                logger.info(
                    "scale sets: removed runner %r of %r: GitHub no longer lists it (job ended)",
                    action.instance_name,
                    action.scaleset_name,
                )
        else:
            self._api.delete_scaleset(action.scaleset_id)
            self._deleted.append(action)

    def _remove_outdated(self, action: RefreshRemoveAction) -> None:
        """Remove an idle outdated runner; a refusal (it took a job since) is only noted.

        The next pass lists the runners again and decides anew, so nothing is retried here.
        """
        try:
            self._api.delete_instance(action.instance_name, force=False)
        except (GarmApiError, InvalidRequest) as error:
            # A refresh removal is always a configured spec's (the plan makes it from the spec).
            spec = self._specs[action.owner]
            text = f"kept outdated runner {action.instance_name!r} of {action.scaleset_name!r}"
            spec.warnings.append(f"{text}: {error}")
            return
        logger.info(
            "scale sets: removed outdated runner %r of %r (rolling refresh)",
            action.instance_name,
            action.scaleset_name,
        )

    def _create(self, action: CreateAction) -> None:
        params = action.params
        if action.template_name is not None:
            template_id = self._template_id(action.template_name, params.os_type, required=True)
            params = dataclasses.replace(params, template_id=template_id)
        names = [(params.name, action.marker.attempt), *action.spares]
        # The last name either creates or raises, so the loop never runs out: no exit branch.
        for index, (name, attempt) in enumerate(names):  # pragma: no branch
            try:
                created = self._api.create_scaleset(
                    action.entity_kind, action.entity_id, dataclasses.replace(params, name=name)
                )
            except GarmApiError as error:
                last = index + 1 == len(names) or not self._room(2)
                if last or not _still_at_github(error):
                    raise
                self._leftover(action.owner, name, names[index + 1][0])
                continue
            self._created.append(created)
            # Create cannot carry extended_state: stamp it now (a crash in between is adopted).
            marker = dataclasses.replace(action.marker, attempt=attempt)
            self._api.update_scaleset(created.id, ScaleSetUpdate(extended_state=marker.render()))
            return

    def _leftover(self, owner: str, name: str, instead: str) -> None:
        """GitHub holds a scale set of that name that GARM does not: report it, use the next.

        GARM re-creates a scale set at GitHub when it is deleted within seconds of its creation
        (a retry race); every later create of that name then fails.
        """
        spec = self._specs[owner]  # a create is always a configured spec's
        spec.leftovers.append(name)
        spec.live_name = instead
        spec.warnings.append(
            f"GitHub still holds a runner scale set named {name!r} that GARM does not know; "
            f"creating {instead!r} instead: delete the leftover at GitHub (repository or "
            "organization settings, Actions, Runner groups) when no job uses it"
        )

    def _update(self, action: UpdateAction) -> None:
        update = action.update
        if action.set_template:
            name = action.template_name
            template_id = self._template_id(
                name or f"github_{action.os_type}", action.os_type, required=name is not None
            )
            if template_id is not None:
                update = dataclasses.replace(update, template_id=template_id)
        self._api.update_scaleset(action.scaleset_id, update)

    def _template_id(self, name: str, os_type: str, *, required: bool) -> int | None:
        if self._templates is None:
            self._templates = self._api.list_templates()
        for template in self._templates:
            if template.name == name and template.forge_type in ("github", ""):
                return template.id
        if required:
            raise InvalidRequest(f"template {name!r} ({os_type}) does not exist in GARM")
        return None

    def _confirm_deletes(self) -> None:
        """GARM may answer 200 and keep the scale set (garm-behaviour B15): list again to know."""
        self._relisted = self._api.list_scalesets()
        remaining = {scaleset.id for scaleset in self._relisted}
        for action in self._deleted:
            if action.scaleset_id in remaining:
                self._kept(action)
            else:
                self._gone(action)

    def _kept(self, action: DeleteAction) -> None:
        """Count the kept delete in the marker and put the next one off, doubling each time."""
        failures = action.marker.delete_failures + 1
        retry_at = self._now + min(FIRST_DELETE_RETRY * 2 ** (failures - 1), LAST_DELETE_RETRY)
        text = f"GARM answered the delete of {action.name!r} but kept it"
        if failures >= REPEATED_DELETE_FAILURES:
            text += (
                f" {failures} times in a row: check GARM's log (GitHub refused the delete,"
                " or dropped the set: restart garm)"
            )
        text += f"; the next delete at {retry_at:%H:%M:%S} UTC"
        self._fail(action.owner, text, None)
        counted = dataclasses.replace(
            action.marker, delete_failures=failures, delete_retry_at=retry_at
        )
        try:
            self._api.update_scaleset(
                action.scaleset_id, ScaleSetUpdate(extended_state=counted.render())
            )
        except (GarmApiError, InvalidRequest) as error:
            text = f"recording the failed delete of {action.name!r}: {error}"
            self._fail(action.owner, text, _failure(action, error, call="update"))
        for predecessor in self._predecessors(action.owner):
            if predecessor.scaleset_id == action.scaleset_id:
                predecessor.delete_failures = failures
                predecessor.delete_retry_at = retry_at

    def _gone(self, action: DeleteAction) -> None:
        spec = self._specs.get(action.owner)
        if spec is None:
            self._report.orphans = [
                o for o in self._report.orphans if o.scaleset_id != action.scaleset_id
            ]
            self._report.warnings.append(f"deleted unconfigured scale set {action.name!r}")
            return
        spec.predecessors = [p for p in spec.predecessors if p.scaleset_id != action.scaleset_id]
        if spec.phase is Phase.DELETING and not spec.predecessors:
            spec.phase = Phase.ACTIVE

    def _predecessors(self, owner: str) -> list[PredecessorReport]:
        spec = self._specs.get(owner)
        if spec is not None:
            return spec.predecessors
        orphan = self._orphans.get(owner)
        return [orphan] if orphan is not None else []

    def _fail(self, owner: str, text: str, failure: Failure | None) -> None:
        if failure is not None:
            self._report.failures.append(failure)
        spec = self._specs.get(owner)
        if spec is not None:
            spec.errors.append(text)
            if spec.phase is not Phase.BLOCKED:
                spec.phase = Phase.ERROR
                spec.message = text
            return
        orphan = self._orphans.get(owner)
        if orphan is not None:
            orphan.phase = Phase.ERROR
        self._report.errors.append(text)


def _still_at_github(error: GarmApiError) -> bool:
    """Whether a create failed as GitHub holds that name already (garm-behaviour B25)."""
    text = f"{error.error} {error.details}".lower()
    return error.status in (400, 409) and "already exists" in text


def _failure(
    action: Action, error: GarmApiError | InvalidRequest, call: str | None = None
) -> Failure:
    """The status's view of a refused call: which, whose, and whether retrying may help."""
    status = error.status if isinstance(error, GarmApiError) else None
    verb = call or _VERBS[type(action)]
    return Failure(_owner_name(action), verb, status, retry=status is not None and status >= 500)


# What one action may write: a create and its marker, a delete and the record of a kept one.
_WRITES_AT_MOST: dict[type, int] = {CreateAction: 2, DeleteAction: 2}
# What clears retired scale sets and runners: part of the bound is kept for them.
_CLEARING = (DeleteAction, ForceRemoveAction, RefreshRemoveAction, StuckRemoveAction)

_VERBS: dict[type, str] = {
    CreateAction: "create",
    UpdateAction: "update",
    ForceRemoveAction: "remove a runner of",
    RefreshRemoveAction: "remove a runner of",
    StuckRemoveAction: "remove a stuck runner of",
    DeleteAction: "delete",
}


def _owner_name(action: Action) -> str:
    """The spec's logical name, or for an unconfigured scale set its own name."""
    return action.owner.removeprefix(orphan_owner(""))


def _describe(action: Action) -> str:
    if isinstance(action, CreateAction):
        return f"creating {action.params.name!r}"
    if isinstance(action, UpdateAction):
        return f"updating {action.name!r}"
    if isinstance(action, ForceRemoveAction | RefreshRemoveAction | StuckRemoveAction):
        return f"removing runner {action.instance_name!r} of {action.scaleset_name!r}"
    return f"deleting {action.name!r}"


class _CountingApi:
    """Counts requests and writes, so the report can show the pass's cost."""

    def __init__(self, api: ScalesetApi) -> None:
        self._api = api
        self.requests = 0
        self.writes = 0

    def list_scalesets(self) -> list[ScaleSet]:
        self.requests += 1
        return self._api.list_scalesets()

    def list_providers(self) -> list[Provider]:
        self.requests += 1
        return self._api.list_providers()

    def list_entities(self, kind: EntityKind) -> list[Entity]:
        self.requests += 1
        return self._api.list_entities(kind)

    def list_templates(self, os_type: str | None = None) -> list[Template]:
        self.requests += 1
        return self._api.list_templates(os_type)

    def list_instances(self) -> list[Instance]:
        self.requests += 1
        return self._api.list_instances()

    def create_scaleset(
        self, kind: EntityKind, entity_id: str, params: ScaleSetCreate
    ) -> ScaleSet:
        self.requests += 1
        self.writes += 1
        return self._api.create_scaleset(kind, entity_id, params)

    def update_scaleset(self, scaleset_id: int, params: ScaleSetUpdate) -> ScaleSet:
        self.requests += 1
        self.writes += 1
        return self._api.update_scaleset(scaleset_id, params)

    def delete_scaleset(self, scaleset_id: int) -> None:
        self.requests += 1
        self.writes += 1
        self._api.delete_scaleset(scaleset_id)

    def delete_instance(self, name: str, *, force: bool) -> None:
        self.requests += 1
        self.writes += 1
        self._api.delete_instance(name, force=force)
