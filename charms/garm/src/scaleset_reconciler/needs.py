"""What a pass observes besides scale sets, at GARM and at GitHub (pure).

`needs` asks GARM for entities, providers and instances only when the pass will use them, so a
converged pass lists nothing more; `Observed` is what was fetched. `busy_on_retired` and
`to_look_up_at_github` name what is worth asking GitHub (ADR 0029).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from garm_api.models import Entity, EntityKind, Instance
from scaleset_reconciler.grouping import Family, Grouping, Member
from scaleset_reconciler.grouping import member_serves as _serves
from scaleset_reconciler.prepare import Prepared
from scaleset_reconciler.runners import is_busy
from scaleset_reconciler.spec import ScalesetSpec


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


def entity_key(kind: EntityKind, name: str) -> tuple[EntityKind, str]:
    """Return how entities are looked up: GitHub names are case-insensitive."""
    return kind, name.strip().lower()


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
        if known_busy(runner)
    ]


def known_busy(runner: Instance) -> bool:
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


def _delete_kept(member: Member) -> bool:
    marker = member.marker
    return marker is not None and marker.retired and marker.delete_failures > 0
