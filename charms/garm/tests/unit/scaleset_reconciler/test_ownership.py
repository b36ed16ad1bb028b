"""A scale set belongs to the configurator that published it (docs/adr/0018).

Two configurators, `a` and `b`, each with its provider `openstack-<app>`, against the in-memory
GARM. The checks read GARM's state and its call log, never the charm's own report alone: which
scale sets exist, whose marker names which application, and which writes reached GARM.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doubles.memory_garm import WRITE_OPERATIONS, MemoryGarm
from garm_api import GarmUnreachable
from garm_api.models import ScaleSet
from scaleset_reconciler import Phase, blocked_message
from scaleset_reconciler.marker import Marker, parse_marker
from scaleset_reconciler.ownership import EARLIER_VERSION, held_report, one_spec_per_name
from scaleset_reconciler.spec import EntityRef, ScalesetSpec
from status_text import STATUS_LIMIT, short_name
from unit.walks.scalesets import ORG, REPO, make_spec, run

APPS = ("a", "b")


def spec_of(
    app: str, name: str = "small", entity: EntityRef = REPO, **fields: Any
) -> ScalesetSpec:
    """What configurator `app` publishes: a scale set on its own provider."""
    values: dict[str, Any] = {"application": app, "provider_name": f"openstack-{app}"}
    return make_spec(name, entity=entity, **{**values, **fields})


def previous_version_spec(app: str = "a") -> ScalesetSpec:
    """`app`'s spec as the previous charm version built it: no application recorded."""
    return spec_of(app, application="")


def new_garm() -> MemoryGarm:
    """A GARM with both configurators' providers, the repository and the organization."""
    return MemoryGarm(providers=[f"openstack-{app}" for app in APPS])


def markers(garm: MemoryGarm) -> dict[int, Marker | None]:
    """Each scale set's marker as GARM stores it."""
    return {s.id: parse_marker(s.extended_state) for s in garm.list_scalesets_quietly()}


def served_by(garm: MemoryGarm, app: str, name: str = "small") -> ScaleSet:
    """The one scale set of `name` whose marker names `app`."""
    (scaleset,) = [
        s
        for s in garm.list_scalesets_quietly()
        if (m := parse_marker(s.extended_state)) is not None
        and (m.application, m.logical) == (app, name)
    ]
    return scaleset


def writes_since(garm: MemoryGarm, calls: int) -> list[str]:
    """The write operations GARM received after the first `calls` calls."""
    return [call.operation for call in garm.log[calls:] if call.operation in WRITE_OPERATIONS]


def test_a_created_scale_set_records_its_application():
    """Arrange: an empty GARM. Act: a pass with `a`'s spec.

    Assert: the scale set's marker in GARM names `a` and the logical name.
    """
    garm = new_garm()

    run(garm, [spec_of("a")])

    (marker,) = markers(garm).values()
    assert marker is not None
    assert (marker.application, marker.logical) == ("a", "small")


def test_two_applications_publishing_one_name_are_both_blocked_and_garm_is_unchanged():
    """Arrange: `a` serves `small`. Act: `b` publishes `small` too (both readable), in both orders.

    Assert: no write reaches GARM; the one Blocked report names both applications; a's scale
    set is as it was.
    """
    for order in ((spec_of("a"), spec_of("b")), (spec_of("b"), spec_of("a"))):
        garm = new_garm()
        run(garm, [spec_of("a")])
        before = garm.list_scalesets_quietly()
        calls = len(garm.log)

        report = run(garm, order)

        assert writes_since(garm, calls) == []
        assert garm.list_scalesets_quietly() == before
        text = blocked_message(report)
        assert "'a' and 'b'" in text
        assert len(text) <= STATUS_LIMIT
        assert [s.phase for s in report.specs] == [Phase.BLOCKED]


def test_an_owner_whose_publication_is_unreadable_keeps_its_scale_set():
    """Arrange: `a` serves `small`; a's publication becomes unreadable (not complete).

    Act: a pass with only `b`'s spec of the same name.
    Assert: no write reaches GARM (a's set is neither retired nor replaced, b creates nothing);
    b is Blocked naming `a`.
    """
    garm = new_garm()
    run(garm, [spec_of("a")])
    calls = len(garm.log)

    report = run(garm, [spec_of("b")], sweep_orphans=False)

    assert writes_since(garm, calls) == []
    assert served_by(garm, "a").enabled
    (blocked,) = report.specs
    assert blocked.phase is Phase.BLOCKED
    assert "of 'a'" in blocked_message(report)


def test_a_removed_owners_scale_set_is_an_orphan_and_the_name_is_free():
    """Arrange: `a` serves `small`.

    Act: `a` is gone, `b` publishes `small`, every publication readable.
    Assert: a's scale set is retired as an orphan (disabled, marker still names `a`) and b gets
    a scale set of its own on its provider.
    """
    garm = new_garm()
    run(garm, [spec_of("a")])

    run(garm, [spec_of("b")])

    retired = served_by(garm, "a")
    assert not retired.enabled
    assert served_by(garm, "b").provider_name == "openstack-b"


def test_a_scale_set_of_an_earlier_version_is_adopted_once_by_the_matching_configurator():
    """Arrange: a scale set stamped by the previous charm version (marker without application).

    Act: a pass with `a`'s spec of the same name and entity.
    Assert: nothing is created or retired; the one write stamps the marker with `a`.
    """
    garm = new_garm()
    run(garm, [previous_version_spec()])
    calls = len(garm.log)

    run(garm, [spec_of("a")])

    assert writes_since(garm, calls) == ["update_scaleset"]
    adopted = served_by(garm, "a")
    assert adopted.enabled
    assert len(garm.list_scalesets_quietly()) == 1


def test_a_scale_set_of_an_earlier_version_waits_while_a_configurator_is_unreadable():
    """Arrange: a scale set stamped by the previous charm version; one publication unreadable.

    Act: a pass with `a`'s spec of that name and entity, then one with every one readable.
    Assert: no write reaches GARM in the first (another configurator may publish that name),
    `a` is Blocked saying what to fix; the second adopts it (stamped with `a`).
    """
    garm = new_garm()
    run(garm, [previous_version_spec()])
    calls = len(garm.log)

    report = run(garm, [spec_of("a")], sweep_orphans=False)

    assert writes_since(garm, calls) == []
    assert "waits: fix unreadable configurators" in blocked_message(report)
    assert len(blocked_message(report)) <= STATUS_LIMIT
    run(garm, [spec_of("a")])
    assert served_by(garm, "a").enabled


def test_a_rename_onto_another_configurators_name_keeps_the_renamers_own_sets():
    """Arrange: `a` serves `small`, `b` serves `large`.

    Act: `b` renames its scale set to `small` (both now publish it), every publication readable.
    Assert: both are Blocked and no write reaches GARM: b's `large` set keeps serving, it is
    not swept as an orphan while b's spec is refused.
    """
    garm = new_garm()
    run(garm, [spec_of("a"), spec_of("b", "large")])
    calls = len(garm.log)

    report = run(garm, [spec_of("a"), spec_of("b")])

    assert writes_since(garm, calls) == []
    assert served_by(garm, "b", "large").enabled
    assert report.orphans == []
    assert [s.phase for s in report.specs] == [Phase.BLOCKED]


def test_an_invalid_rename_keeps_the_old_scale_set():
    """Arrange: `b` serves `large`. Act: `b` publishes an invalid name instead.

    Assert: b's spec is Blocked naming the problem; no write reaches GARM (the old set serves).
    """
    garm = new_garm()
    run(garm, [spec_of("b", "large")])
    calls = len(garm.log)

    report = run(garm, [spec_of("b", "Large!")])

    assert writes_since(garm, calls) == []
    assert served_by(garm, "b", "large").enabled
    assert [s.phase for s in report.specs] == [Phase.BLOCKED]


def test_a_scale_set_of_an_earlier_version_on_another_entity_is_not_adopted():
    """Arrange: a previous-version scale set `small` on the repository; one publication unreadable.

    Act: a pass with `b`'s spec `small` on the organization.
    Assert: no write reaches GARM; b is Blocked naming the earlier version's scale set.
    """
    garm = new_garm()
    run(garm, [previous_version_spec()])
    calls = len(garm.log)

    report = run(garm, [spec_of("b", entity=ORG)], sweep_orphans=False)

    assert writes_since(garm, calls) == []
    assert "earlier version" in blocked_message(report)


def test_when_two_configurators_match_an_earlier_versions_scale_set_neither_adopts():
    """Arrange: a previous-version scale set `small`. Act: `a` and `b` both publish `small`.

    Assert: no write reaches GARM; its marker still names no application; both are named.
    """
    garm = new_garm()
    run(garm, [previous_version_spec()])
    calls = len(garm.log)

    report = run(garm, [spec_of("a"), spec_of("b")])

    assert writes_since(garm, calls) == []
    ((marker),) = markers(garm).values()
    assert marker is not None
    assert marker.application == ""
    assert "'a' and 'b'" in blocked_message(report)


def test_an_unmarked_scale_set_on_another_configurators_provider_is_not_adopted():
    """Arrange: `a`'s scale set was created but the charm died before stamping its marker.

    Act: passes, past the hand-over grace, while a's publication is unreadable and `b`
    publishes `small` on the same entity.
    Assert: b does not adopt or retire it: no write reaches it.
    """
    garm = new_garm()
    garm.outage_after_call("create_scaleset")
    with contextlib.suppress(GarmUnreachable):
        run(garm, [spec_of("a")])
    garm.end_outage()
    (unmarked,) = garm.list_scalesets_quietly()
    assert parse_marker(unmarked.extended_state) is None
    calls = len(garm.log)

    for _ in range(3):
        run(garm, [spec_of("b")], sweep_orphans=False)
        garm.advance(61)

    touched = [c.args[0] for c in garm.log[calls:] if c.operation in WRITE_OPERATIONS]
    assert unmarked.id not in touched


# Orderings -----------------------------------------------------------------------------------

# What one configurator's relation shows in one hook: its spec (by name), unreadable, or gone.
PUBLICATIONS = st.sampled_from(["small", "other", "unreadable", "gone"])
STEP = st.tuples(PUBLICATIONS, PUBLICATIONS, st.booleans(), st.sampled_from([REPO, ORG]))


def _specs_of(step: tuple[str, str, bool, EntityRef]) -> tuple[list[ScalesetSpec], bool]:
    """The specs a pass sees for one step, in relation order, and whether all are readable."""
    published_a, published_b, b_first, entity_b = step
    specs: list[ScalesetSpec] = []
    if published_a in ("small", "other"):
        specs.append(spec_of("a", published_a))
    if published_b in ("small", "other"):
        specs.append(spec_of("b", published_b, entity=entity_b))
    if b_first:
        specs.reverse()
    return specs, "unreadable" not in (published_a, published_b)


def _allowed(
    marker: Marker, scaleset: ScaleSet, specs: list[ScalesetSpec], complete: bool
) -> bool:
    """Whether a pass may write to a scale set carrying `marker`, by the ownership rule."""
    same_name = [spec for spec in specs if spec.name == marker.logical]
    if len({spec.application for spec in same_name}) > 1:
        return False
    if marker.application:
        owners = [spec for spec in same_name if spec.application == marker.application]
    else:
        owners = [
            spec
            for spec in same_name
            if spec.entity.kind is scaleset.entity_kind
            and spec.entity.name.lower() == scaleset.entity_name.lower()
        ]
    return bool(owners) or complete


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    legacy=st.booleans(),
    steps=st.lists(STEP, min_size=1, max_size=8),
)
def test_no_ordering_lets_one_configurator_touch_anothers_scale_set(
    legacy: bool, steps: list[tuple[str, str, bool, EntityRef]]
):
    """Arrange: a GARM where `a` (or the previous charm version) serves `small` on the repository.

    Act: passes over random orderings of both configurators publishing `small`, another name,
    nothing readable, or being gone; relations in either order; time passing between passes.
    Assert, from GARM's call log: every write to a scale set goes to one whose marker names the
    spec's application (or none, on the spec's entity) while one application alone publishes
    its name, or is an orphan's retirement while every publication is readable; a name two
    applications publish gets no scale set created; every Blocked text fits the status.
    """
    garm = new_garm()
    run(garm, [previous_version_spec() if legacy else spec_of("a")])
    for step in steps:
        specs, complete = _specs_of(step)
        before = {s.id: s for s in garm.list_scalesets_quietly()}
        calls = len(garm.log)

        report = run(garm, specs, sweep_orphans=complete)

        _assert_owned_writes(garm, calls, before, specs, complete)
        _assert_no_contested_create(garm, calls, specs)
        assert len(blocked_message(report)) <= STATUS_LIMIT
        garm.advance(61)


def _assert_owned_writes(
    garm: MemoryGarm,
    calls: int,
    before: dict[int, ScaleSet],
    specs: list[ScalesetSpec],
    complete: bool,
) -> None:
    for call in garm.log[calls:]:
        if call.operation not in ("update_scaleset", "delete_scaleset"):
            continue
        scaleset = before.get(call.args[0])
        marker = parse_marker(scaleset.extended_state) if scaleset is not None else None
        if scaleset is None or marker is None:
            continue
        assert _allowed(marker, scaleset, specs, complete), (call, marker, specs, complete)


def _assert_no_contested_create(garm: MemoryGarm, calls: int, specs: list[ScalesetSpec]) -> None:
    contested = {
        spec.name
        for spec in specs
        if len({s.application for s in specs if s.name == spec.name}) > 1
    }
    created = [c.args[2].name for c in garm.log[calls:] if c.operation == "create_scaleset"]
    assert not [name for name in created if name.split("-")[0] in contested]


def test_ownership_status_texts_fit_whole_with_the_longest_names():
    """Arrange: a 63-character scale-set name, 50-character applications and set names.

    Act: the contested, held and earlier-version reports.
    Assert: each status text, with its scale-set prefix, is at most 120 characters uncut.
    """
    name, app, other = "n" * 63, "a" * 50, "b" * 50
    spec = spec_of(app, name)
    reports = [
        one_spec_per_name([spec, spec_of(other, name)])[2][0],
        held_report(spec, "x", [("s" * 64, other)]),
        held_report(spec, "x", [("s" * 64, EARLIER_VERSION)]),
    ]

    texts = [f"{short_name(report.logical)}: {report.status}" for report in reports]

    assert all(len(text) <= STATUS_LIMIT for text in texts), texts
