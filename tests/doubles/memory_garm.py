"""An in-memory GARM with GARM's scale-set rules, for the scale-set reconciler's tests.

It implements the calls of `scaleset_reconciler.ScalesetApi` and answers with the domain types
parsed by `from_wire` from bodies shaped like GARM's real answers (tests/contract/wire/): absent
fields when false or zero, tags from a global case-insensitive table, `extra_specs` and
`template_name` missing from lists.

Rules kept: labels and provider are fixed at creation; update applies string fields only when
non-empty and refuses min > max or a zero bootstrap timeout; delete is refused while enabled or
while any instance exists, and answers success for unknown ids; a missing scale set or instance
is `GarmNotFound` (404), as `GarmClient` raises it; instances are removed only in
running/error/pending_delete/pending_force_delete. `tick()` is GARM's worker, in the simulator's
order (tests/garm_sim/scaling.py): deleted runners vanish, booted runners report `idle` (a new
runner is `pending` until then), jobs that ended on a disabled set are noticed after
`CONSOLIDATION_SECONDS`, booting runners come up, then runners up to
`min(min_idle + desired, max)` while enabled, surplus not-busy runners removed (newest first),
busy runners kept. A job starts only on an idle runner; on an enabled set its end removes the
runner at once, on a disabled one (no listener) only after the consolidation.

`tests/contract/test_garm_models.py` runs one table of behaviours against this and against the
simulator through `GarmClient`, so the two cannot drift.

Faults: `refuse` (the next calls of an operation answer 400 or 500), `outage` (every call raises
`GarmUnreachable`), `keep_deletes` (DELETE answers 200 and keeps the scale set: B15),
`drop_at_github` (GitHub forgot a scale set, its offline deletion: GARM still shows its old
`scale_set_id`, its deletes are kept until `restart`, whose worker start creates it again at
GitHub under a new `scale_set_id`: B33; `ask_github_about_scalesets` answers as GitHub),
`drop_labels` (labels GARM/GitHub silently drops at creation), `stuck_boots` (new runners never
come up: a broken flavor), `runners_report` (False: booted runners never report `idle`, a broken
image, as the simulator's switch), `github_leftovers` (names GitHub still holds a scale set
of, so creating one answers 409 "already exists in runner group"), `outage_after` (GARM
answers the next k calls, then stops: an outage in the middle of a pass) and `outage_after_call`
(GARM stops right after it answers the next call of one operation: the charm dies between a
create and its marker stamp).

Records, so tests judge the charm by what GARM saw rather than by the charm's own report: `log`
(every call that reached GARM, with GARM's time and the status GARM refused it with),
`enabled_history` (per scale set, when it was created or really enabled or disabled) and
`forced` (every forced remove, with the runner's status at that moment).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import itertools
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from garm_api import (
    Entity,
    EntityKind,
    GarmApiError,
    GarmBadRequest,
    GarmConflict,
    GarmNotFound,
    GarmServerError,
    GarmUnauthorized,
    GarmUnreachable,
    Instance,
    InvalidRequest,
    Provider,
    ScaleSet,
    ScaleSetCreate,
    ScaleSetUpdate,
    Template,
)
from scaleset_reconciler import BusyRunner, GithubScaleSetRef

START = datetime.datetime(2026, 11, 29, 22, 50, 7, 62603, tzinfo=datetime.UTC)
REPO_ID = "c35919a8-8f26-4fc5-ba84-a7386cbd45c8"
ORG_ID = "8da7b8a3-7f2a-4118-a61d-468b5d98d916"
WRITE_OPERATIONS = frozenset(
    {"create_scaleset", "update_scaleset", "delete_scaleset", "delete_instance"}
)
FORCEABLE = frozenset({"running", "error", "pending_delete", "pending_force_delete"})
DELETING = frozenset({"pending_delete", "pending_force_delete"})
# Runner statuses GARM scales down; `active` (a job) and `terminated` are never removed.
SCALABLE_DOWN = frozenset(
    {"idle", "pending", "installing", "online", "offline", "unknown", "failed"}
)
# How often GARM compares its runners with GitHub's agents list (tests/garm_sim/scaling.py).
CONSOLIDATION_SECONDS = 300


_Method = TypeVar("_Method", bound=Callable[..., Any])


@dataclasses.dataclass
class Call:
    """One call that reached GARM: when (GARM's clock), and the status if GARM refused it."""

    operation: str
    args: tuple[Any, ...]
    at: datetime.datetime
    refused: int | None = None


@dataclasses.dataclass(frozen=True)
class Forced:
    """One forced remove: which runner of which scale set, when, and what it was doing.

    `call` is its place in the call log, which orders it against changes at the same time.
    """

    name: str
    scaleset_id: int
    at: datetime.datetime
    runner_status: str
    call: int


def _logged(method: _Method) -> _Method:
    """Record in the call log the status GARM refused a call with (injected or by its rules)."""

    @functools.wraps(method)
    def wrapper(self: MemoryGarm, *args: Any, **kwargs: Any) -> Any:
        calls = len(self.log)
        try:
            return method(self, *args, **kwargs)
        except GarmApiError as error:
            if len(self.log) > calls:
                self.log[-1].refused = error.status
            raise

    return wrapper  # type: ignore[return-value]


# How `GarmClient` types GARM's refusals by status.
_ERRORS: dict[int, type[GarmApiError]] = {
    400: GarmBadRequest,
    401: GarmUnauthorized,
    404: GarmNotFound,
    409: GarmConflict,
}


def _check(operation: str, problems: list[str]) -> None:
    """Refuse what `GarmClient` refuses before calling GARM."""
    if problems:
        raise InvalidRequest(f"{operation}: " + "; ".join(problems))


def go_time(moment: datetime.datetime) -> str:
    """Format a time as Go's RFC 3339 with nanoseconds (as GARM sends it)."""
    text = moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text.rstrip("0").rstrip(".") + "Z"


@dataclasses.dataclass
class _Row:
    id: int
    name: str
    entity_kind: EntityKind
    entity_id: str
    entity_name: str
    provider_name: str
    tag_ids: list[str]
    image: str
    flavor: str
    os_type: str
    os_arch: str
    enabled: bool
    min_idle_runners: int
    max_runners: int
    runner_group: str
    runner_bootstrap_timeout: int
    extra_specs: dict[str, Any] | None
    template_id: int
    created_at: datetime.datetime
    updated_at: datetime.datetime
    extended_state: str = ""
    desired_runner_count: int = 0
    generation: int = 0
    # GitHub's id of the scale set (`scale_set_id`).
    github_id: int = 0
    # GitHub dropped the scale set; GARM shows nothing of it and keeps the old id (B33).
    dropped_at_github: bool = False


@dataclasses.dataclass
class _Runner:
    name: str
    scaleset_id: int
    status: str
    runner_status: str
    created_at: datetime.datetime
    id: str = dataclasses.field(default_factory=lambda: str(uuid.uuid4()))
    job_finished_at: datetime.datetime | None = None
    # GitHub's runner id (GARM's `agent_id`), issued with the runner's JIT config.
    agent_id: int = 0


class MemoryGarm:
    """GARM's scale-set API in memory. `now` is GARM's clock; tests move it."""

    def __init__(
        self,
        *,
        providers: Iterable[str] = ("lxd",),
        repositories: Iterable[str] = ("fake-org/fake-repo",),
        organizations: Iterable[str] = ("fake-org",),
    ) -> None:
        self.now = START
        self.providers = list(providers)
        self.entities: dict[EntityKind, dict[str, str]] = {
            EntityKind.REPOSITORY: {},
            EntityKind.ORGANIZATION: {},
            EntityKind.ENTERPRISE: {},
        }
        for index, name in enumerate(repositories):
            self.entities[EntityKind.REPOSITORY][name] = (
                REPO_ID if index == 0 else str(uuid.uuid4())
            )
        for index, name in enumerate(organizations):
            self.entities[EntityKind.ORGANIZATION][name] = (
                ORG_ID if index == 0 else str(uuid.uuid4())
            )
        self.templates = [
            {"id": 1, "name": "github_linux", "os_type": "linux", "owner_id": "system"},
            {"id": 2, "name": "github_windows", "os_type": "windows", "owner_id": "system"},
        ]
        self.rows: dict[int, _Row] = {}
        self.runners: dict[str, _Runner] = {}
        self.tags: dict[str, tuple[str, str]] = {}  # lower-cased name -> (id, stored spelling)
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.log: list[Call] = []
        # Per scale set: (GARM's time, enabled, place in the call log) at creation and changes.
        self.enabled_history: dict[int, list[tuple[datetime.datetime, bool, int]]] = {}
        self.refusals: dict[str, list[int]] = {}
        self.outage = False
        self.keep_deletes = False
        self.drop_labels: set[str] = set()
        self.stuck_boots = False
        self.runners_report = True
        # Names GitHub still holds a runner scale set of, unknown to GARM (GARM's retry race).
        self.github_leftovers: set[str] = set()
        self.deletes_refused_with_runners: list[str] = []
        self.deletes_refused_enabled: list[str] = []
        self.forced: list[Forced] = []
        # Unforced removes (the rolling refresh's), with what the runner was doing then.
        self.removed: list[Forced] = []
        self._answers_left: int | None = None
        self._stop_after: str | None = None
        self._stop_next = False
        self._ids = itertools.count(1)
        self._runner_ids = itertools.count(1)
        # GitHub never hands out a deleted scale set's id again.
        self._github_ids = itertools.count(101)

    # Test controls -------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Let time pass and GARM's worker run."""
        self.now += datetime.timedelta(seconds=seconds)
        self.tick()

    def refuse(self, operation: str, status: int = 400, times: int = 1) -> None:
        """Make the next `times` calls of `operation` answer `status`."""
        self.refusals.setdefault(operation, []).extend([status] * times)

    def outage_after(self, calls: int) -> None:
        """Answer the next `calls` calls, then stop answering (as `outage`)."""
        self._answers_left = calls

    def outage_after_call(self, operation: str) -> None:
        """Stop answering right after the next call of `operation` is answered."""
        self._stop_after = operation

    def end_outage(self) -> None:
        """Answer again, and drop any outage still to come."""
        self.outage = False
        self._answers_left = None
        self._stop_after = None
        self._stop_next = False

    def enabled_since(self, scaleset_id: int) -> datetime.datetime:
        """When the scale set was created or last really enabled."""
        return max(t for t, enabled, _ in self.enabled_history[scaleset_id] if enabled)

    def disabled_at(self, scaleset_id: int, call: int | None = None) -> datetime.datetime | None:
        """When the scale set was really disabled, if it was disabled at that place in the log.

        Without `call`: if it is disabled now.
        """
        history = [
            (at, enabled)
            for at, enabled, place in self.enabled_history[scaleset_id]
            if call is None or place <= call
        ]
        if not history or history[-1][1]:
            return None
        return history[-1][0]

    def writes(self) -> list[tuple[str, tuple[Any, ...]]]:
        """The write calls made so far."""
        return [call for call in self.calls if call[0] in WRITE_OPERATIONS]

    def by_name(self, name: str) -> ScaleSet:
        """Return the scale set named `name` as GARM's list shows it."""
        return next(s for s in self.list_scalesets_quietly() if s.name == name)

    def names(self) -> set[str]:
        """Names of all scale sets."""
        return {row.name for row in self.rows.values()}

    def list_scalesets_quietly(self) -> list[ScaleSet]:
        """List without counting a call."""
        return [ScaleSet.from_wire(self._wire(row)) for row in self.rows.values()]

    def runners_of(self, name: str) -> list[_Runner]:
        """Runners of the scale set named `name`."""
        ids = {row.id for row in self.rows.values() if row.name == name}
        return [r for r in self.runners.values() if r.scaleset_id in ids]

    def start_job(self, scaleset_id: int) -> str | None:
        """A job lands on a scale set: an idle running runner takes it (None when there is none).

        GARM refuses `pending` -> `active`, so a runner that has not reported takes no job.
        """
        for runner in self.runners.values():
            if (
                runner.scaleset_id == scaleset_id
                and runner.status == "running"
                and runner.runner_status == "idle"
            ):
                runner.runner_status = "active"
                return runner.name
        return None

    def start_job_when_ready(self, scaleset_id: int) -> str | None:
        """A job is queued for a scale set; GARM's worker runs (the clock stands) until it starts.

        Without an idle runner GitHub's queue raises the desired count for the job, as GARM
        hears it, so a runner is created, reports `idle` at the next pass and takes the job;
        the count goes back once the job runs (an active runner is never scaled down).
        """
        row = self.rows.get(scaleset_id)
        job = self.start_job(scaleset_id)
        if job is not None or row is None:
            return job
        row.desired_runner_count += 1
        for _ in range(2):
            self.tick()
            job = self.start_job(scaleset_id)
            if job is not None:
                break
        row.desired_runner_count -= 1
        return job

    def finish_job(self, name: str) -> None:
        """A job ends: the ephemeral runner terminates.

        On an enabled set GARM hears it at once and the runner goes at the next tick; a disabled
        set has no listener, so the runner stays `active` until the consolidation notices.
        """
        runner = self.runners.get(name)
        if runner is None or runner.runner_status != "active":
            return
        row = self.rows.get(runner.scaleset_id)
        if row is not None and not row.enabled:
            if runner.job_finished_at is None:
                runner.job_finished_at = self.now
            return
        self._terminate(runner)

    def github_lists(self, name: str) -> bool:
        """Whether GitHub lists the runner: an ephemeral runner leaves the list when its job ends.

        GitHub lists a runner from its JIT config on, so even one GARM has not seen report.
        """
        runner = self.runners.get(name)
        return runner is not None and runner.job_finished_at is None

    def ask_github(self) -> Callable[[Sequence[BusyRunner]], frozenset[str]]:
        """A `finished_at_github` that asks this GARM's GitHub (`github_lists`)."""

        def finished(busy: Sequence[BusyRunner]) -> frozenset[str]:
            self.calls.append(("github", tuple(runner.name for runner in busy)))
            return frozenset(r.name for r in busy if not self.github_lists(r.name))

        return finished

    def ask_github_about_scalesets(
        self,
    ) -> Callable[[Sequence[GithubScaleSetRef]], frozenset[int]]:
        """A `missing_at_github` that asks this GARM's GitHub (dropped sets are missing)."""

        def missing(refs: Sequence[GithubScaleSetRef]) -> frozenset[int]:
            self.calls.append(("github scale sets", tuple(ref.name for ref in refs)))
            return frozenset(
                ref.scaleset_id
                for ref in refs
                if ref.scaleset_id in self.rows and self.rows[ref.scaleset_id].dropped_at_github
            )

        return missing

    def tick(self) -> None:
        """GARM's worker, in the simulator's order (see the module docstring)."""
        for name, runner in list(self.runners.items()):
            if runner.status in DELETING:
                del self.runners[name]
        consolidated = self.now - datetime.timedelta(seconds=CONSOLIDATION_SECONDS)
        for runner in self.runners.values():
            reported = self.runners_report and runner.runner_status == "pending"
            if runner.status == "running" and reported:
                runner.runner_status = "idle"
            finished = runner.job_finished_at
            if finished is not None and finished <= consolidated:
                self._terminate(runner)
        for runner in self.runners.values():
            if runner.status == "pending_create" and not self.stuck_boots:
                runner.status = "running"
        for row in list(self.rows.values()):
            self._scale(row)

    # The API (ScalesetApi) ----------------------------------------------------------------

    @_logged
    def list_scalesets(self) -> list[ScaleSet]:
        """GET /scalesets."""
        self._enter("list_scalesets")
        return self.list_scalesets_quietly()

    @_logged
    def list_providers(self) -> list[Provider]:
        """GET /providers."""
        self._enter("list_providers")
        return [
            Provider.from_wire({"name": name, "type": "external", "description": name})
            for name in self.providers
        ]

    @_logged
    def list_entities(self, kind: EntityKind) -> list[Entity]:
        """GET /repositories, /organizations or /enterprises."""
        self._enter("list_entities", kind)
        return [
            self._entity(kind, name, entity_id) for name, entity_id in self.entities[kind].items()
        ]

    @_logged
    def list_templates(self, os_type: str | None = None) -> list[Template]:
        """GET /templates (bodies are null in lists)."""
        self._enter("list_templates", os_type)
        return [
            Template.from_wire(
                {
                    **t,
                    "description": "",
                    "forge_type": "github",
                    "data": None,
                    "created_at": go_time(START),
                    "updated_at": go_time(START),
                }
            )
            for t in self.templates
            if os_type in (None, t["os_type"])
        ]

    @_logged
    def list_instances(self) -> list[Instance]:
        """GET /instances."""
        self._enter("list_instances")
        return [Instance.from_wire(self._instance_wire(r)) for r in self.runners.values()]

    @_logged
    def create_scaleset(
        self, kind: EntityKind, entity_id: str, params: ScaleSetCreate
    ) -> ScaleSet:
        """POST /{entity}/{id}/scalesets (refused before any call when invalid, as the client)."""
        _check("create scale set", params.validate())
        self._enter("create_scaleset", kind, entity_id, params)
        names = {n for n, i in self.entities[kind].items() if i == entity_id}
        if not names:
            raise GarmNotFound("create scale set", 404, "Not Found", "entity not found")
        if any(r.name == params.name and r.entity_id == entity_id for r in self.rows.values()):
            raise GarmConflict("create scale set", 409, "Conflict", "scale set exists")
        if params.name in self.github_leftovers:
            raise GarmConflict(
                "create scale set",
                409,
                "Conflict",
                f"runner scale set {params.name} already exists in runner group Default",
            )
        labels = [label for label in params.labels if label.lower() not in self.drop_labels]
        row = _Row(
            id=next(self._ids),
            name=params.name,
            entity_kind=kind,
            entity_id=entity_id,
            entity_name=names.pop(),
            provider_name=params.provider_name,
            tag_ids=[self._tag(label) for label in labels],
            image=params.image,
            flavor=params.flavor,
            os_type=params.os_type,
            os_arch=params.os_arch,
            enabled=params.enabled,
            min_idle_runners=params.min_idle_runners,
            max_runners=params.max_runners,
            runner_group=params.runner_group or "Default",
            runner_bootstrap_timeout=params.runner_bootstrap_timeout or 20,
            extra_specs=dict(params.extra_specs) if params.extra_specs else None,
            template_id=params.template_id or (1 if params.os_type == "linux" else 2),
            created_at=self.now,
            updated_at=self.now,
            github_id=next(self._github_ids),
        )
        self.rows[row.id] = row
        self.enabled_history[row.id] = [(self.now, row.enabled, len(self.log))]
        return ScaleSet.from_wire(self._wire(row, with_details=True))

    @_logged
    def update_scaleset(self, scaleset_id: int, params: ScaleSetUpdate) -> ScaleSet:
        """PUT /scalesets/{id} (refused before any call when invalid, as the client)."""
        _check("update scale set", params.validate())
        self._enter("update_scaleset", scaleset_id, params)
        row = self.rows.get(scaleset_id)
        if row is None:
            raise GarmNotFound("update scale set", 404, "Not Found", "scale set not found")
        minimum = (
            row.min_idle_runners if params.min_idle_runners is None else params.min_idle_runners
        )
        maximum = row.max_runners if params.max_runners is None else params.max_runners
        if minimum > maximum:
            raise GarmBadRequest(
                "update scale set", 400, "Bad Request", "min_idle_runners cannot be larger"
            )
        self._apply(row, params)
        return ScaleSet.from_wire(self._wire(row, with_details=True))

    @_logged
    def delete_scaleset(self, scaleset_id: int) -> None:
        """DELETE /scalesets/{id}: 200 also for an unknown id, and (C9) when GitHub failed."""
        self._enter("delete_scaleset", scaleset_id)
        row = self.rows.get(scaleset_id)
        if row is None:
            return
        if any(r.scaleset_id == scaleset_id for r in self.runners.values()):
            self.deletes_refused_with_runners.append(row.name)
            raise GarmBadRequest("delete scale set", 400, "Bad Request", "scale set has runners")
        if row.enabled:
            self.deletes_refused_enabled.append(row.name)
            raise GarmBadRequest(
                "delete scale set", 400, "Bad Request", "scale set is enabled; disable it first"
            )
        if self.keep_deletes or row.dropped_at_github:
            return
        del self.rows[scaleset_id]

    def drop_at_github(self, scaleset_id: int) -> None:
        """GitHub forgets the scale set (its listener stayed offline for days): B33."""
        self.rows[scaleset_id].dropped_at_github = True

    def restart(self) -> None:
        """GARM restarts: each worker start creates a set GitHub lost again there (B33)."""
        for row in self.rows.values():
            if row.dropped_at_github:
                row.github_id = next(self._github_ids)
                row.dropped_at_github = False
                row.updated_at = self.now

    @_logged
    def delete_instance(self, name: str, *, force: bool = True) -> None:
        """DELETE /instances/{name}?forceRemove=true."""
        self._enter("delete_instance", name, force)
        runner = self.runners.get(name)
        if runner is None:
            raise GarmNotFound("delete instance", 404, "Not Found", "instance not found")
        if runner.status not in FORCEABLE:
            raise GarmBadRequest("delete instance", 400, "Bad Request", "runner must be ...")
        removal = Forced(name, runner.scaleset_id, self.now, runner.runner_status, len(self.log))
        if not force and runner.runner_status == "active":
            # GARM first removes the runner at GitHub, forced or not; GitHub refuses a busy one
            # with 400 and GARM answers it, unless bypassGHUnauthorized, which `GarmClient`
            # sends exactly when it forces (garm-behaviour B32).
            raise GarmBadRequest(
                "delete instance", 400, "Bad Request", "error removing runner from github"
            )
        (self.forced if force else self.removed).append(removal)
        runner.status = "pending_force_delete" if force else "pending_delete"

    # Plumbing -----------------------------------------------------------------------------

    def _enter(self, operation: str, *args: Any) -> None:
        if self._stop_next or self._answers_left == 0:
            self.end_outage()
            self.outage = True
        if self.outage:
            raise GarmUnreachable(operation, "ConnectionRefusedError: [Errno 111]")
        self.calls.append((operation, args))
        self.log.append(Call(operation, args, self.now))
        if self._answers_left is not None:
            self._answers_left -= 1
        if self._stop_after == operation:
            self._stop_next = True
        pending = self.refusals.get(operation)
        if pending:
            status = pending.pop(0)
            kind = _ERRORS.get(status, GarmServerError if status >= 500 else GarmApiError)
            raise kind(operation, status, "refused", "fault injected by the test")

    def _apply(self, row: _Row, params: ScaleSetUpdate) -> None:
        changed = False
        for field in ("image", "flavor", "os_type", "os_arch", "runner_group", "extended_state"):
            value = getattr(params, field)
            if value and value != getattr(row, field):
                setattr(row, field, value)
                changed = True
        for field in (
            "enabled",
            "min_idle_runners",
            "max_runners",
            "runner_bootstrap_timeout",
            "template_id",
        ):
            value = getattr(params, field)
            if value is not None and value != getattr(row, field):
                setattr(row, field, value)
                changed = True
                if field == "enabled":
                    self.enabled_history[row.id].append((self.now, value, len(self.log)))
        if params.extra_specs is not None and dict(params.extra_specs) != row.extra_specs:
            row.extra_specs = dict(params.extra_specs)
            row.generation += 1
            changed = True
        if changed:
            row.updated_at = self.now

    def _terminate(self, runner: _Runner) -> None:
        runner.runner_status = "terminated"
        runner.status = "pending_delete"
        runner.job_finished_at = None

    def _scale(self, row: _Row) -> None:
        mine = (r for r in self.runners.values() if r.scaleset_id == row.id)
        live = [r for r in mine if r.status not in DELETING]
        target = min(row.min_idle_runners + row.desired_runner_count, row.max_runners)
        surplus = len(live) - target
        if surplus > 0:
            spare = [r for r in reversed(live) if r.runner_status in SCALABLE_DOWN]
            for runner in spare[:surplus]:
                del self.runners[runner.name]
            return
        if row.enabled and row.provider_name in self.providers:
            for _ in range(-surplus):
                self._spawn(row)

    def _spawn(self, row: _Row) -> _Runner:
        number = next(self._runner_ids)
        name = f"garm-{number:012d}"
        # As the simulator with no boot time: up at once, `pending` until it reports.
        status = "pending_create" if self.stuck_boots else "running"
        runner = _Runner(name, row.id, status, "pending", self.now)
        runner.agent_id = 100 + number
        self.runners[name] = runner
        return runner

    def _tag(self, label: str) -> str:
        key = label.lower()
        if key not in self.tags:
            self.tags[key] = (str(uuid.uuid4()), label)
        return key

    def _entity(self, kind: EntityKind, name: str, entity_id: str) -> Entity:
        body: dict[str, Any] = {
            "id": entity_id,
            "name": name.rsplit("/", maxsplit=1)[-1],
            "credentials_name": "app",
            "endpoint": {"name": "github.com"},
            "pool_manager_status": {"running": True},
        }
        if kind is EntityKind.REPOSITORY:
            body["owner"] = name.split("/", maxsplit=1)[0]
        return Entity.from_wire(kind, body)

    def _wire(self, row: _Row, *, with_details: bool = False) -> dict[str, Any]:
        """The body GARM sends: absent when false/0/empty (garm-behaviour B1)."""
        prefix = {
            EntityKind.REPOSITORY: "repo",
            EntityKind.ORGANIZATION: "org",
            EntityKind.ENTERPRISE: "enterprise",
        }[row.entity_kind]
        body: dict[str, Any] = {
            "runner_prefix": "garm",
            "created_at": go_time(row.created_at),
            "updated_at": go_time(row.updated_at),
            "id": row.id,
            "scale_set_id": row.github_id,
            "name": row.name,
            "disable_update": False,
            "state": "pending_create",
            "provider_name": row.provider_name,
            "max_runners": row.max_runners,
            "min_idle_runners": row.min_idle_runners,
            "image": row.image,
            "flavor": row.flavor,
            "os_type": row.os_type,
            "os_arch": row.os_arch,
            "enabled": row.enabled,
            "enable_shell": False,
            "generation": row.generation,
            "endpoint": {
                "created_at": "0001-01-01T00:00:00Z",
                "updated_at": "0001-01-01T00:00:00Z",
            },
            "runner_bootstrap_timeout": row.runner_bootstrap_timeout,
            "github-runner-group": row.runner_group,
            "tags": [{"id": self.tags[t][0], "name": self.tags[t][1]} for t in row.tag_ids],
            "status_messages": None,
            f"{prefix}_id": row.entity_id,
            f"{prefix}_name": row.entity_name,
            "template_id": row.template_id,
            "extended_state": row.extended_state,
            "desired_runner_count": row.desired_runner_count,
        }
        if with_details:
            body["extra_specs"] = row.extra_specs
            body["template_name"] = next(
                (t["name"] for t in self.templates if t["id"] == row.template_id), None
            )
        omitempty = (
            "max_runners",
            "min_idle_runners",
            "enabled",
            "tags",
            "extended_state",
            "desired_runner_count",
            "extra_specs",
            "template_name",
        )
        return {k: v for k, v in body.items() if k not in omitempty or v}

    def _instance_wire(self, runner: _Runner) -> dict[str, Any]:
        # GARM omits `agent_id` while it is 0 (`omitempty`): no GitHub agent yet.
        agent = {"agent_id": runner.agent_id} if runner.agent_id else {}
        return {
            "id": runner.id,
            "provider_id": f"fake-{runner.name}",
            "provider_name": "lxd",
            **agent,
            "name": runner.name,
            "os_type": "linux",
            "os_name": "fakeos",
            "os_version": "1.0",
            "os_arch": "amd64",
            "status": runner.status,
            "runner_status": runner.runner_status,
            "scale_set_id": runner.scaleset_id,
            "created_at": go_time(runner.created_at),
            "updated_at": go_time(runner.created_at),
            "github-runner-group": "Default",
            "heartbeat": "0001-01-01T00:00:00Z",
            "capabilities": {"has_shell": False},
            "generation": 0,
        }
