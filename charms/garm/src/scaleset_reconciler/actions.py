"""The writes a pass makes to GARM, one class a kind, and the order they are made in (pure).

The planner (`plan`) decides them; the executor makes them in the order `order_writes` gives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from garm_api.models import EntityKind, ScaleSetCreate, ScaleSetUpdate
from scaleset_reconciler.marker import Marker


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
