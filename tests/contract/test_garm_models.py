"""One GARM model: the in-memory GARM and the simulator answer one table of behaviours alike.

`tests/doubles/memory_garm.py` stands in for `garm_api.GarmClient` in the reconciler's
unit and property tests; the simulator (`tests/garm_sim`) is checked against the real binaries
by the cross-target tests. Each behaviour below is a script of scale-set API calls and test
controls (time, jobs, GitHub switches, refusals, outages) that returns what it observed as plain
values. Every behaviour runs against the in-memory GARM and against the simulator through the
real `GarmClient`, and each answer must equal the table's expected value, so a change to either
model that the other does not share fails here in both directions.

Not shared (no counterpart on the other side): the in-memory `stuck_boots` (runners stay
`pending_create`) and `github_leftovers`; the simulator's HTTP-level faults (reset, latency).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest

from contract.conftest import PROVIDER, bootstrap_over_http
from doubles.memory_garm import CONSOLIDATION_SECONDS as MEMORY_CONSOLIDATION
from doubles.memory_garm import REPO_ID, MemoryGarm
from garm_api import (
    EntityKind,
    GarmClient,
    GarmError,
    InvalidRequest,
    ScaleSet,
    ScaleSetCreate,
    ScaleSetUpdate,
)
from garm_sim import GarmSim
from garm_sim.scaling import CONSOLIDATION_SECONDS

# What a write or a job operation answered: a value, or the type of the error it raised.
Observed = Any
# How the simulator's fault table names each API operation the in-memory GARM can refuse.
ROUTES = {
    "list_scalesets": ("GET", "/api/v1/scalesets"),
    "create_scaleset": ("POST", "/api/v1/repositories/*/scalesets"),
    "update_scaleset": ("PUT", "/api/v1/scalesets/{id}"),
    "delete_scaleset": ("DELETE", "/api/v1/scalesets/{id}"),
    "list_instances": ("GET", "/api/v1/instances"),
    "delete_instance": ("DELETE", "/api/v1/instances/{name}"),
}


class Model(Protocol):
    """A GARM to run a behaviour against: the scale-set API and the test's controls."""

    api: Any
    entity_id: str

    def advance(self, seconds: float) -> None:
        """Let time pass; GARM's worker runs once."""

    def start_job(self, scaleset_id: int) -> str | None:
        """A job starts on an idle runner of the set (None when none can take it)."""

    def finish_job(self, runner: str) -> None:
        """The runner's job ends."""

    def refuse(self, operation: str, status: int) -> None:
        """The next call of `operation` answers `status`."""

    def keep_deletes(self, on: bool) -> None:
        """GitHub fails deletes: GARM answers 200 and keeps the scale set (B15)."""

    def drop_labels(self, labels: set[str]) -> None:
        """GitHub silently drops these labels at creation."""

    def drop_at_github(self, scaleset: ScaleSet) -> None:
        """GitHub forgets the scale set (its offline deletion, B33)."""

    def restart(self) -> None:
        """GARM restarts with its state: every scale-set worker starts again."""

    def runners_report(self, on: bool) -> None:
        """Booted runners report `idle` (False: a broken image, they stay `pending`)."""

    def outage(self) -> contextlib.AbstractContextManager[None]:
        """GARM does not answer inside the block."""
        ...


@dataclasses.dataclass
class MemoryModel:
    """The in-memory GARM, called directly (it implements the API itself)."""

    api: MemoryGarm
    entity_id: str = REPO_ID

    def advance(self, seconds: float) -> None:
        """Move GARM's clock and run its worker."""
        self.api.advance(seconds)

    def start_job(self, scaleset_id: int) -> str | None:
        """Start a job on an idle runner."""
        return self.api.start_job(scaleset_id)

    def finish_job(self, runner: str) -> None:
        """End the runner's job."""
        self.api.finish_job(runner)

    def refuse(self, operation: str, status: int) -> None:
        """Refuse the next call."""
        self.api.refuse(operation, status)

    def keep_deletes(self, on: bool) -> None:
        """Answer deletes with 200 and keep the scale set."""
        self.api.keep_deletes = on

    def drop_labels(self, labels: set[str]) -> None:
        """Drop labels at creation."""
        self.api.drop_labels = {label.lower() for label in labels}

    def drop_at_github(self, scaleset: ScaleSet) -> None:
        """GitHub forgets the scale set."""
        self.api.drop_at_github(scaleset.id)

    def restart(self) -> None:
        """GARM restarts."""
        self.api.restart()

    def runners_report(self, on: bool) -> None:
        """Let booted runners report, or not."""
        self.api.runners_report = on

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """Every call raises `GarmUnreachable` inside the block."""
        self.api.outage = True
        try:
            yield
        finally:
            self.api.outage = False


@dataclasses.dataclass
class SimModel:
    """The simulator over HTTP through `GarmClient`; its worker runs only when told."""

    sim: GarmSim
    api: GarmClient
    entity_id: str

    def advance(self, seconds: float) -> None:
        """Move the simulator's clock and run its worker."""
        self.sim.advance(seconds)

    def start_job(self, scaleset_id: int) -> str | None:
        """Start a job on an idle runner."""
        try:
            return self.sim.start_job(scaleset_id)
        except LookupError:
            return None

    def finish_job(self, runner: str) -> None:
        """End the runner's job."""
        self.sim.finish_job(runner)

    def refuse(self, operation: str, status: int) -> None:
        """Refuse the next matching request."""
        method, path = ROUTES[operation]
        self.sim.fault("status", method=method, path=path, status=status, times=1)

    def keep_deletes(self, on: bool) -> None:
        """GitHub answers deletes with 500 (GARM then answers 200 and keeps the set)."""
        self.sim.github.delete_status = 500 if on else 204

    def drop_labels(self, labels: set[str]) -> None:
        """GitHub drops labels at creation."""
        self.sim.github.dropped_labels = set(labels)

    def drop_at_github(self, scaleset: ScaleSet) -> None:
        """GitHub forgets the scale set."""
        self.sim.state.github.drop(scaleset.github_scale_set_id)

    def restart(self) -> None:
        """The simulator restarts with its state."""
        self.sim.restart()

    def runners_report(self, on: bool) -> None:
        """Let booted runners report, or not."""
        self.sim.github.runners_report = on

    def outage(self) -> contextlib.AbstractContextManager[None]:
        """The simulator's port refuses connections inside the block."""
        return self.sim.refusing_connections()


@pytest.fixture(params=["memory", "sim"])
def model(request: pytest.FixtureRequest) -> Iterator[Model]:
    """Each model in turn: the in-memory GARM, then the simulator through `GarmClient`."""
    if request.param == "memory":
        yield MemoryModel(MemoryGarm(providers=(PROVIDER,)))
        return
    with GarmSim([PROVIDER], auto_tick=False, frozen_clock=True) as sim:
        garm = bootstrap_over_http(sim)
        client = GarmClient(garm.url, garm.token, connect_timeout=2, read_timeout=5)
        yield SimModel(sim, client, garm.repo_id)


# -- Observations ------------------------------------------------------------------------------


def attempt(call: Callable[[], Any]) -> Observed:
    """Run a call; return its answer, or the name of the error type it raised."""
    try:
        return call()
    except (GarmError, InvalidRequest) as error:
        return type(error).__name__


def shape(scaleset: ScaleSet) -> dict[str, Any]:
    """The fields a behaviour compares (ids, times and GARM-generated names differ)."""
    return {
        "name": scaleset.name,
        "enabled": scaleset.enabled,
        "labels": sorted(label.lower() for label in scaleset.labels),
        "provider": scaleset.provider_name,
        "image": scaleset.image,
        "flavor": scaleset.flavor,
        "min": scaleset.min_idle_runners,
        "max": scaleset.max_runners,
        "extended_state": scaleset.extended_state,
    }


def listed(model: Model) -> list[dict[str, Any]]:
    """Every scale set as GARM lists it, by name."""
    return sorted((shape(s) for s in model.api.list_scalesets()), key=lambda s: s["name"])


def runners(model: Model) -> list[tuple[str, str]]:
    """Every runner as (status, runner_status), sorted."""
    return sorted((i.status, i.runner_status) for i in model.api.list_instances())


def create(model: Model, name: str = "small", **fields: Any) -> ScaleSet:
    """Create a scale set under the repository (disabled, min 0, max 2 unless told)."""
    values: dict[str, Any] = {
        "name": name,
        "provider_name": PROVIDER,
        "image": "ubuntu:22.04",
        "flavor": "small",
        "labels": ("x64", "GPU"),
        "max_runners": 2,
        "min_idle_runners": 0,
        "enabled": False,
    }
    return model.api.create_scaleset(
        EntityKind.REPOSITORY, model.entity_id, ScaleSetCreate(**(values | fields))
    )


def update(model: Model, scaleset_id: int, **fields: Any) -> Observed:
    """Update; return the answer's shape or the error type."""
    return attempt(lambda: shape(model.api.update_scaleset(scaleset_id, ScaleSetUpdate(**fields))))


# -- The behaviours ----------------------------------------------------------------------------


def created_and_listed(model: Model) -> Observed:
    """A create answers the scale set as a list then shows it; labels compare lower-cased."""
    answer = shape(create(model, extra_specs={"disk": 20}))
    return {"answer": answer, "listed": listed(model)}


def duplicate_name(model: Model) -> Observed:
    """A second scale set of the same name under the same entity is a conflict."""
    create(model)
    return attempt(lambda: create(model))


def invalid_create(model: Model) -> Observed:
    """What GARM would refuse late (max 0) is refused before any call, and nothing exists."""
    return {"answer": attempt(lambda: create(model, max_runners=0)), "listed": listed(model)}


def unknown_entity(model: Model) -> Observed:
    """Creating under a repository GARM does not know is not found."""
    params = ScaleSetCreate(
        name="small", provider_name=PROVIDER, image="i", flavor="f", labels=("x",), max_runners=1
    )
    missing = "00000000-0000-4000-8000-000000000000"
    return attempt(lambda: model.api.create_scaleset(EntityKind.REPOSITORY, missing, params).name)


def updates(model: Model) -> Observed:
    """Updates: mutable fields apply, empty strings keep, min > max and unknown ids refused."""
    scaleset = create(model)
    return [
        update(model, scaleset.id, enabled=True, min_idle_runners=1, image="noble", flavor=""),
        update(model, scaleset.id, extended_state='{"managed-by":"garm-charm"}'),
        update(model, scaleset.id, min_idle_runners=3),
        update(model, scaleset.id, min_idle_runners=3, max_runners=2),
        update(model, scaleset.id, runner_bootstrap_timeout=0),
        update(model, scaleset.id + 1000, max_runners=3),
    ]


def deletes(model: Model) -> Observed:
    """Deletes: 200 for an unknown id; refused enabled; refused with runners; gone when empty."""
    enabled = create(model, "enabled-set", enabled=True)
    busy = create(model, "busy-set", enabled=True, min_idle_runners=1)
    empty = create(model, "empty-set")
    model.advance(1)
    update(model, busy.id, enabled=False)
    answers = [
        attempt(lambda: model.api.delete_scaleset(enabled.id + 1000)),
        attempt(lambda: model.api.delete_scaleset(enabled.id)),
        attempt(lambda: model.api.delete_scaleset(busy.id)),
        attempt(lambda: model.api.delete_scaleset(empty.id)),
    ]
    return {"answers": answers, "left": [s["name"] for s in listed(model)]}


def kept_delete(model: Model) -> Observed:
    """When GitHub fails the delete GARM answers 200 and keeps the set; later it goes."""
    scaleset = create(model)
    model.keep_deletes(True)
    first = attempt(lambda: model.api.delete_scaleset(scaleset.id))
    kept = [s["name"] for s in listed(model)]
    model.keep_deletes(False)
    model.api.delete_scaleset(scaleset.id)
    return {"first": first, "kept": kept, "then": listed(model)}


def dropped_at_github(model: Model) -> Observed:
    """GitHub forgot a set: GARM keeps showing its old GitHub id and keeps it through a delete.

    After a restart it has a new GitHub id and a delete removes it (B33, as the real binaries
    do: `test_targets_github_dropped.py`).
    """
    scaleset = create(model)
    model.drop_at_github(scaleset)
    shown = _github_id(model, scaleset.id) == scaleset.github_scale_set_id
    first = attempt(lambda: model.api.delete_scaleset(scaleset.id))
    kept = [s["name"] for s in listed(model)]
    model.restart()
    renewed = _github_id(model, scaleset.id) not in (0, scaleset.github_scale_set_id)
    model.api.delete_scaleset(scaleset.id)
    return {
        "old id shown": shown,
        "first": first,
        "kept": kept,
        "renewed": renewed,
        "then": listed(model),
    }


def github_ids_not_reused(model: Model) -> Observed:
    """A set created after the newest one was deleted gets a GitHub id never given before."""
    first = create(model, "first")
    model.api.delete_scaleset(first.id)
    second = create(model, "second")
    return second.github_scale_set_id not in (0, first.github_scale_set_id)


def _github_id(model: Model, scaleset_id: int) -> int:
    return next(s.github_scale_set_id for s in model.api.list_scalesets() if s.id == scaleset_id)


def dropped_labels(model: Model) -> Observed:
    """GitHub drops a label at creation: the answer and the list lack it; updates keep it so."""
    model.drop_labels({"gpu"})
    scaleset = create(model)
    answer = shape(scaleset)["labels"]
    model.drop_labels(set())
    update(model, scaleset.id, max_runners=3)
    return {"answer": answer, "listed": [s["labels"] for s in listed(model)]}


def runners_boot_then_report(model: Model) -> Observed:
    """An enabled set gets runners at the next pass, `pending` until they report `idle`."""
    create(model, enabled=True, min_idle_runners=2)
    seen = [runners(model)]
    for _ in range(2):
        model.advance(1)
        seen.append(runners(model))
    return seen


def runners_that_never_report(model: Model) -> Observed:
    """With a broken image runners stay `pending` and take no job."""
    model.runners_report(False)
    scaleset = create(model, enabled=True, min_idle_runners=1)
    for _ in range(3):
        model.advance(1)
    return {"runners": runners(model), "job": model.start_job(scaleset.id) is not None}


def scale_down(model: Model) -> Observed:
    """Lowering min idle removes idle runners at the next pass but never a busy one."""
    scaleset = create(model, enabled=True, min_idle_runners=2)
    model.advance(1)
    model.advance(1)
    job = model.start_job(scaleset.id)
    update(model, scaleset.id, min_idle_runners=0)
    model.advance(1)
    return {"job": job is not None, "runners": runners(model)}


def job_on_enabled_set(model: Model) -> Observed:
    """A job ends on an enabled set: the runner goes at once and min idle replaces it."""
    scaleset = create(model, enabled=True, min_idle_runners=1)
    before = model.start_job(scaleset.id)
    model.advance(1)
    model.advance(1)
    job = model.start_job(scaleset.id)
    assert job is not None
    busy = runners(model)
    model.finish_job(job)
    ended = runners(model)
    model.advance(1)
    return {"before_report": before, "busy": busy, "ended": ended, "next": runners(model)}


def job_on_disabled_set(model: Model) -> Observed:
    """A job ends on a disabled set: the runner stays active until GARM's consolidation."""
    scaleset = create(model, enabled=True, min_idle_runners=1)
    model.advance(1)
    model.advance(1)
    job = model.start_job(scaleset.id)
    assert job is not None
    update(model, scaleset.id, enabled=False, min_idle_runners=0)
    model.finish_job(job)
    seen = [runners(model)]
    model.advance(CONSOLIDATION_SECONDS - 1)
    seen.append(runners(model))
    refused = attempt(lambda: model.api.delete_scaleset(scaleset.id))
    model.advance(1)
    seen.append(runners(model))
    model.advance(1)
    seen.append(runners(model))
    deleted = attempt(lambda: model.api.delete_scaleset(scaleset.id))
    return {"seen": seen, "refused": refused, "deleted": deleted, "left": listed(model)}


def forced_removal(model: Model) -> Observed:
    """A forced remove marks a busy runner `pending_force_delete`; it goes at the next pass."""
    scaleset = create(model, enabled=True, min_idle_runners=1)
    model.advance(1)
    model.advance(1)
    job = model.start_job(scaleset.id)
    assert job is not None
    update(model, scaleset.id, enabled=False, min_idle_runners=0)
    answer = attempt(lambda: model.api.delete_instance(job, force=True))
    marked = runners(model)
    model.advance(1)
    return {"answer": answer, "marked": marked, "after": runners(model)}


def busy_removal(model: Model) -> Observed:
    """GitHub refuses to remove a busy runner: unforced GARM answers 400 and keeps it (B32).

    Forced (the client then also bypasses GitHub's errors) the runner is marked for removal.
    """
    scaleset = create(model, enabled=True, min_idle_runners=1)
    model.advance(1)
    model.advance(1)
    job = model.start_job(scaleset.id)
    assert job is not None
    unforced = attempt(lambda: model.api.delete_instance(job, force=False))
    kept = runners(model)
    forced = attempt(lambda: model.api.delete_instance(job, force=True))
    return {"unforced": unforced, "kept": kept, "forced": forced, "marked": runners(model)}


def missing_instance(model: Model) -> Observed:
    """Removing a runner GARM does not know is not found."""
    return attempt(lambda: model.api.delete_instance("garm-000000000404", force=True))


def refusals(model: Model) -> Observed:
    """A refused call raises the client's error for its status; the next one goes through."""
    scaleset = create(model)
    answers: list[Observed] = []
    for operation, status in (("update_scaleset", 400), ("update_scaleset", 500)):
        model.refuse(operation, status)
        answers.append(update(model, scaleset.id, max_runners=3))
    model.refuse("update_scaleset", 409)
    answers.append(update(model, scaleset.id, max_runners=3))
    model.refuse("list_scalesets", 500)
    answers.append(attempt(lambda: listed(model)))
    model.refuse("delete_scaleset", 404)
    answers.append(attempt(lambda: model.api.delete_scaleset(scaleset.id)))
    answers.append(update(model, scaleset.id, max_runners=4))
    return answers


def outage(model: Model) -> Observed:
    """While GARM does not answer, reads and writes raise `GarmUnreachable`; nothing changes."""
    scaleset = create(model)
    with model.outage():
        answers = [
            attempt(lambda: listed(model)),
            update(model, scaleset.id, max_runners=3),
            attempt(lambda: model.api.delete_scaleset(scaleset.id)),
            attempt(lambda: runners(model)),
        ]
    return {"answers": answers, "after": listed(model)}


SMALL = {
    "name": "small",
    "enabled": False,
    "labels": ["gpu", "x64"],
    "provider": PROVIDER,
    "image": "ubuntu:22.04",
    "flavor": "small",
    "min": 0,
    "max": 2,
    "extended_state": "",
}
MANAGED = '{"managed-by":"garm-charm"}'

TABLE: dict[str, tuple[Callable[[Model], Observed], Observed]] = {
    "created and listed": (created_and_listed, {"answer": SMALL, "listed": [SMALL]}),
    "duplicate name": (duplicate_name, "GarmConflict"),
    "invalid create": (invalid_create, {"answer": "InvalidRequest", "listed": []}),
    "unknown entity": (unknown_entity, "GarmNotFound"),
    "updates": (
        updates,
        [
            SMALL | {"enabled": True, "min": 1, "image": "noble"},
            SMALL | {"enabled": True, "min": 1, "image": "noble", "extended_state": MANAGED},
            "GarmBadRequest",
            "InvalidRequest",
            "InvalidRequest",
            "GarmNotFound",
        ],
    ),
    "deletes": (
        deletes,
        {
            "answers": [None, "GarmBadRequest", "GarmBadRequest", None],
            "left": ["busy-set", "enabled-set"],
        },
    ),
    "kept delete": (kept_delete, {"first": None, "kept": ["small"], "then": []}),
    "dropped at GitHub": (
        dropped_at_github,
        {"old id shown": True, "first": None, "kept": ["small"], "renewed": True, "then": []},
    ),
    "GitHub ids not reused": (github_ids_not_reused, True),
    "dropped labels": (dropped_labels, {"answer": ["x64"], "listed": [["x64"]]}),
    "runners boot then report": (
        runners_boot_then_report,
        [[], [("running", "pending")] * 2, [("running", "idle")] * 2],
    ),
    "runners that never report": (
        runners_that_never_report,
        {"runners": [("running", "pending")], "job": False},
    ),
    "scale down": (scale_down, {"job": True, "runners": [("running", "active")]}),
    "job on an enabled set": (
        job_on_enabled_set,
        {
            "before_report": None,
            "busy": [("running", "active")],
            "ended": [("pending_delete", "terminated")],
            "next": [("running", "pending")],
        },
    ),
    "job on a disabled set": (
        job_on_disabled_set,
        {
            "seen": [
                [("running", "active")],
                [("running", "active")],
                [("pending_delete", "terminated")],
                [],
            ],
            "refused": "GarmBadRequest",
            "deleted": None,
            "left": [],
        },
    ),
    "forced removal": (
        forced_removal,
        {"answer": None, "marked": [("pending_force_delete", "active")], "after": []},
    ),
    "busy removal": (
        busy_removal,
        {
            "unforced": "GarmBadRequest",
            "kept": [("running", "active")],
            "forced": None,
            "marked": [("pending_force_delete", "active")],
        },
    ),
    "missing instance": (missing_instance, "GarmNotFound"),
    "refusals": (
        refusals,
        [
            "GarmBadRequest",
            "GarmServerError",
            "GarmConflict",
            "GarmServerError",
            "GarmNotFound",
            SMALL | {"max": 4},
        ],
    ),
    "outage": (
        outage,
        {"answers": ["GarmUnreachable"] * 4, "after": [SMALL]},
    ),
}


@pytest.mark.parametrize("behaviour", list(TABLE))
def test_both_models_answer_the_table(model: Model, behaviour: str):
    """Arrange: a fresh in-memory GARM or simulator (with one repository). Act: the behaviour.

    Assert: what it observed is the table's expected value, for each model.
    """
    script, expected = TABLE[behaviour]

    observed = script(model)

    assert observed == expected


def test_the_models_share_the_consolidation_delay():
    """Arrange: both models' constants. Act: none. Assert: one delay, GARM's 5 minutes."""
    assert MEMORY_CONSOLIDATION == CONSOLIDATION_SECONDS == 300
