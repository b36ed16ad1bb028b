"""What GARM lists, grouped: each spec's family of scale sets, the charm's orphans (pure).

`group` is the planner's second step (`plan`), after `prepare`. Membership is decided from names
and markers only (`naming`, `marker`, `ownership`), so every pass decides it alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from garm_api.models import ScaleSet
from scaleset_reconciler.marker import Marker, parse_marker, serves
from scaleset_reconciler.naming import generation_key, name_for, spec_generation, stem_of
from scaleset_reconciler.naming import stem as spec_stem
from scaleset_reconciler.ownership import claims, holder
from scaleset_reconciler.prepare import Prepared, SpecEntry
from scaleset_reconciler.spec import ScalesetSpec

# An unmarked scale set named as a further attempt up to this one is adopted (a crash between
# its create and its marker); a day of label retries at the longest wait is six attempts.
MAX_ADOPTED_ATTEMPT = 64


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


def member_serves(member: Member) -> bool:
    """Whether the member serves: enabled and not retired by the charm (`marker.serves`)."""
    return serves(member.scaleset, member.marker)
