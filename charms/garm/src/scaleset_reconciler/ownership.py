"""Which configurator a scale set belongs to (docs/adr/0018-scale-set-ownership.md).

A spec's family is (application, logical name): the application is the garm-configurator that
published the spec, and the charm records it in every scale set's marker. The rules, all pure:

- Two applications publishing the same logical name are both refused, naming each other, and
  nothing in GARM changes for that name (`one_spec_per_name`).
- A spec claims a scale set whose marker names its own application, or an unmarked one or one
  an earlier charm version stamped (no application) on the spec's own entity (`claims`). Any
  other scale set of the same name is held by someone else: the spec never adopts, retires or
  deletes it. One an earlier version stamped is claimed only while every configurator's data
  is readable: until then another application may be the one publishing that name, so it is
  held untouched (`UNTIL_READABLE`).
- A held scale set is an orphan, swept like any other, only when every related configurator
  published readable data (its application is gone, or renamed its spec). Until then the spec
  that would take its name is Blocked naming the holder, and nothing changes for it
  (`held_report`): an owner whose publication is merely unreadable keeps its scale sets.
"""

from __future__ import annotations

from collections.abc import Sequence

from garm_api.models import ScaleSet
from scaleset_reconciler.marker import Marker
from scaleset_reconciler.report import Phase, SpecReport
from scaleset_reconciler.spec import ScalesetSpec
from status_text import short_name

EARLIER_VERSION = "an earlier charm version"
# The holder of a scale set an earlier version stamped, while a configurator is unreadable.
UNTIL_READABLE = "an earlier charm version, until every configurator is readable"


def one_spec_per_name(
    specs: Sequence[ScalesetSpec],
) -> tuple[list[ScalesetSpec], list[str], list[SpecReport]]:
    """Keep one spec per logical name; refuse names that several applications publish.

    Returns:
        The specs kept (the first of each name published by one application), warnings for
        repeats within one application, and one Blocked report per contested name.
    """
    by_name: dict[str, list[ScalesetSpec]] = {}
    for spec in specs:
        by_name.setdefault(spec.name, []).append(spec)
    kept: list[ScalesetSpec] = []
    warnings: list[str] = []
    contested: list[SpecReport] = []
    for name, same_name in by_name.items():
        applications = sorted({spec.application for spec in same_name})
        if len(applications) > 1:
            contested.append(_contested_report(name, applications))
            continue
        kept.append(same_name[0])
        if any(spec != same_name[0] for spec in same_name[1:]):
            warnings.append(
                f"scale set {name!r} is configured more than once with different "
                "settings; the first one is used"
            )
    return kept, warnings, contested


def _contested_report(name: str, applications: Sequence[str]) -> SpecReport:
    publishers = " and ".join(short_name(application or "?") for application in applications)
    message = (
        f"the scale set name {name!r} is published by {publishers}; nothing in GARM changes "
        "for it until all but one of them publish another name"
    )
    return SpecReport(
        name,
        Phase.BLOCKED,
        message=message,
        status=f"published by both {publishers}: rename one",
        errors=[message],
    )


def claims(spec: ScalesetSpec, scaleset: ScaleSet, marker: Marker | None) -> bool:
    """Whether `spec` may adopt, retire or delete `scaleset` (one of its name's family).

    Its own application's marker, or no application (unmarked, or stamped by an earlier charm
    version) on the spec's own entity; an unmarked one also on the spec's own provider, which
    is named after the application.
    """
    if marker is not None and marker.application:
        return marker.application == spec.application
    same_entity = (
        scaleset.entity_kind is spec.entity.kind
        and scaleset.entity_name.strip().lower() == spec.entity.name.strip().lower()
    )
    if marker is None:
        return same_entity and scaleset.provider_name == spec.provider_name
    return same_entity


def holder(marker: Marker | None, *, waiting: bool = False) -> str:
    """Who holds a scale set a spec does not claim: its application, or an earlier version.

    With `waiting`, the spec would claim it, but not while a configurator is unreadable.
    """
    if marker is not None and marker.application:
        return marker.application
    return UNTIL_READABLE if waiting else EARLIER_VERSION


def held_report(spec: ScalesetSpec, live_name: str, held: Sequence[tuple[str, str]]) -> SpecReport:
    """The Blocked report of a spec whose name another configurator's scale set holds.

    Args:
        spec: the spec that would take the name.
        live_name: the name its own scale set would have.
        held: (scale set name, holder) of each scale set of the name it does not claim.
    """
    scaleset, owner = held[0]
    if owner == UNTIL_READABLE:
        message = (
            f"scale set {scaleset!r}, stamped by {EARLIER_VERSION} without its application, "
            "is adopted only once every configurator's data can be read (another one may "
            "publish this name); it is left alone: fix the configurators whose data is unreadable"
        )
        status = (
            f"set {short_name(scaleset)} of an earlier version waits: fix unreadable configurators"
        )
    elif owner == EARLIER_VERSION:
        message = (
            f"scale set {scaleset!r}, stamped by {EARLIER_VERSION}, has this name on another "
            f"entity than {spec.entity}; it is left alone: point the configurator back at its "
            "entity, or remove that scale set by hand"
        )
        status = f"set {short_name(scaleset)} of an earlier version is on another entity"
    else:
        message = (
            f"scale set {scaleset!r} of this name belongs to {owner}, whose publication "
            f"cannot be read now; {spec.application or 'this configurator'} takes nothing of "
            f"it: fix {owner}'s relation, or rename one of the two"
        )
        status = f"held by {short_name(scaleset)} of {short_name(owner)}: fix that app or rename"
    return SpecReport(
        spec.name,
        Phase.BLOCKED,
        live_name=live_name,
        message=message,
        status=status,
        errors=[message],
    )
