"""Properties of live names under random specs and a GARM that already holds names they want.

Two properties, over specs drawn with long logical names, names that are prefixes of one another
(one stem for many), several configurator applications, many label sets (generations) and
further attempts:

- **One pass, adversarial GARM** (pure `prepare`, `group`, `plan`): GARM already holds scale sets
  named exactly as the specs' sets would be (at random attempts), marked for another spec, for
  another application, for another generation of the same spec, or hand-made. Every name the
  pass creates fits the budget and the alphabet, is distinct from every other and from every
  name GARM holds; no action touches a set the spec does not own.
- **Many passes, many generations** (against the in-memory GARM): label changes one after the
  other while hand-made sets sit at the names each next generation would take. After every
  pass: every charm-made name fits the budget, no two scale sets share a name, the hand-made
  sets are never written to; once settled each spec is served by exactly one set of its
  current generation, the one its marker names. (Sets of another application at those names
  are the one-pass property's: with every configurator readable they are orphans, swept.)
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doubles.memory_garm import REPO_ID, MemoryGarm
from garm_api.models import Entity, EntityKind, ScaleSet
from scaleset_reconciler import ReconcileSettings, reconcile
from scaleset_reconciler.actions import CreateAction
from scaleset_reconciler.grouping import group
from scaleset_reconciler.marker import Marker, config_hash, parse_marker
from scaleset_reconciler.naming import NAME_BUDGET, live_name, spec_generation
from scaleset_reconciler.needs import Observed, entity_key
from scaleset_reconciler.plan import plan
from scaleset_reconciler.prepare import desired_create, prepare
from scaleset_reconciler.spec import ScalesetSpec
from unit.walks.scalesets import SETTINGS, make_spec

STEMS = ("small", "smal", "small-gpu", "smalt", "s", "a" * 40, "ab-c")
APPLICATIONS = ("cfg-one", "cfg-two")
LABEL_SETS = (("x64",), ("x64", "gpu"), ("arm64",), ("x64", "linux"), ("gpu", "linux"))
LIVE_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
REPO = Entity.from_wire(
    EntityKind.REPOSITORY,
    {
        "id": REPO_ID,
        "owner": "fake-org",
        "name": "fake-repo",
        "credentials_name": "app",
        "endpoint": {"name": "github.com"},
        "pool_manager_status": {"running": True},
    },
)
NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)
CAN_CREATE = Observed(
    providers=frozenset({"lxd"}), entities={entity_key(REPO.kind, REPO.name): REPO}
)


@st.composite
def specs(draw: st.DrawFn) -> list[ScalesetSpec]:
    """Specs of distinct logical names, each of one application, with random labels."""
    names = draw(st.lists(st.sampled_from(STEMS), min_size=1, max_size=5, unique=True))
    return [
        make_spec(
            name,
            draw(st.sampled_from(LABEL_SETS)),
            application=draw(st.sampled_from(APPLICATIONS)),
        )
        for name in names
    ]


# Who holds a name a spec wants: another spec, another application, another generation of the
# same spec (a hash collision), or nobody's (hand-made).
HOLDERS = ("other-spec", "other-app", "other-generation", "hand-made")


@st.composite
def held_names(draw: st.DrawFn, wanted: list[ScalesetSpec]) -> list[tuple[str, str, int]]:
    """(name, holder, spec index) of scale sets named as the specs would name theirs."""
    held: list[tuple[str, str, int]] = []
    for index, spec in enumerate(wanted):
        for attempt in draw(st.lists(st.integers(0, 3), max_size=3, unique=True)):
            held.append((live_name(spec, attempt=attempt), draw(st.sampled_from(HOLDERS)), index))
    return held


def holder_set(
    scaleset_id: int, name: str, holder: str, spec: ScalesetSpec
) -> tuple[ScaleSet, bool]:
    """A scale set named `name` that `spec` must not claim, and whether it carries a marker."""
    marker: Marker | None
    if holder == "other-spec":
        marker = Marker("someone-else", application=spec.application, generation="0" * 16)
    elif holder == "other-app":
        other = next(app for app in APPLICATIONS if app != spec.application)
        marker = Marker(spec.name, application=other, generation=spec_generation(spec))
    elif holder == "other-generation":
        earlier = dataclasses.replace(spec, labels=("earlier",))
        marker = Marker(
            spec.name, config_hash(spec), spec.application, generation=spec_generation(earlier)
        )
    else:
        marker = None
    body: dict[str, Any] = {
        "created_at": "2026-11-30T10:00:00Z",
        "updated_at": "2026-11-30T10:00:00Z",
        "id": scaleset_id,
        "name": name,
        "state": "pending_create",
        "disable_update": False,
        "enable_shell": False,
        "generation": 0,
        # A hand-made one is on another provider: the charm would otherwise adopt it.
        "provider_name": "lxd" if marker is not None else "hand",
        "max_runners": 3,
        "image": "ubuntu:22.04",
        "flavor": "small",
        "os_type": "linux",
        "enabled": True,
        "runner_bootstrap_timeout": 20,
        "github-runner-group": "Default",
        "endpoint": {"created_at": "0001-01-01T00:00:00Z", "updated_at": "0001-01-01T00:00:00Z"},
        "tags": [{"id": f"t-{label}", "name": label} for label in spec.labels],
        "status_messages": None,
        "repo_id": REPO_ID,
        "repo_name": "fake-org/fake-repo",
    }
    if marker is not None:
        body["extended_state"] = marker.render()
    return ScaleSet.from_wire(body), marker is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), readable=st.booleans())
def test_one_pass_never_takes_a_held_name_nor_adopts_its_holder(
    data: st.DataObject, readable: bool
):
    """Arrange: random specs; GARM holding names they want, for others or hand-made.

    Every configurator's data is readable, or not.
    Act: prepare, group and plan one pass.
    Assert: every create's name fits the budget and the alphabet and is distinct from the
    others and from every name GARM holds; every spec creates, but one whose logical name
    another application's set holds while a configurator is unreadable; no spec's action
    targets a held set (only the orphan sweep may retire one, when everything is readable).
    """
    wanted = data.draw(specs())
    held = data.draw(held_names(wanted))
    observed: list[ScaleSet] = []
    names: set[str] = set()
    for name, holder, index in held:
        if name not in names:  # GitHub refuses a second set of a name in one runner group
            names.add(name)
            observed.append(holder_set(len(observed) + 1, name, holder, wanted[index])[0])
    prepared = prepare(wanted, SETTINGS)

    grouping = group(prepared, observed, all_readable=readable)
    result = plan(
        prepared, grouping, CAN_CREATE, now=NOW, settings=SETTINGS, sweep_orphans=readable
    )

    created = [a.params.name for a in result.actions if isinstance(a, CreateAction)]
    assert all(len(name) <= NAME_BUDGET and LIVE_NAME.fullmatch(name) for name in created)
    assert len(created) == len(set(created))
    assert not set(created) & names
    blocked = {wanted[i].name for _, holder, i in held if holder == "other-app"}
    creators = {a.owner for a in result.actions if isinstance(a, CreateAction)}
    assert creators == {s.name for s in wanted} - (set() if readable else blocked)
    held_ids = {scaleset.id for scaleset in observed}
    by_specs = {getattr(a, "scaleset_id", None) for a in result.actions if a.owner in creators}
    assert not by_specs & held_ids


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(st.sampled_from(STEMS), min_size=1, max_size=3, unique=True),
    changes=st.lists(st.sampled_from(LABEL_SETS), min_size=1, max_size=5),
    squat=st.booleans(),
)
def test_generations_after_generations_keep_names_unique_and_others_untouched(
    names: list[str], changes: list[tuple[str, ...]], squat: bool
):
    """Arrange: specs converged; before each label change, maybe a hand-made set at its name.

    The hand-made set takes the name the new generation would take first.
    Act: the label changes, each followed by passes until it settles.
    Assert: after every pass no two sets share a name and every charm-made name fits the
    budget; the hand-made sets are never written to; once settled each spec has one
    set, of its current generation per its marker, with the spec's labels.
    """
    garm = MemoryGarm()
    current = [make_spec(name, application="cfg-one") for name in names]
    squatters: set[int] = set()
    settle(garm, current, squatters)
    for labels in changes:
        current = [dataclasses.replace(spec, labels=labels) for spec in current]
        if squat:
            for spec in current:
                squatters |= squatters_of(garm, spec)
        settle(garm, current, squatters)
        mine = [s for s in garm.list_scalesets_quietly() if s.id not in squatters]
        assert len(mine) == len(current)
        for spec in current:
            (own,) = [s for s in mine if owner_of(s) == spec.name]
            marker = parse_marker(own.extended_state)
            assert marker is not None
            assert marker.generation == spec_generation(spec)
            assert own.normalised_labels == set(spec.labels)


def settle(garm: MemoryGarm, current: list[ScalesetSpec], squatters: set[int]) -> None:
    """Passes, past the grace each, until one writes nothing; the checks after every pass."""
    for _ in range(8):
        start = len(garm.log)
        report = reconcile(
            garm, current, now=garm.now, settings=ReconcileSettings(), sweep_orphans=True
        )
        listed = garm.list_scalesets_quietly()
        assert len({s.name for s in listed}) == len(listed)
        assert all(len(s.name) <= NAME_BUDGET for s in listed if s.id not in squatters)
        writes = [c for c in garm.log[start:] if c.operation != "list_scalesets"]
        assert not [c for c in writes if c.args and c.args[0] in squatters]
        if report.writes == 0:
            return
        garm.advance(61)
    raise AssertionError("the label change did not settle within 8 passes")


def squatters_of(garm: MemoryGarm, spec: ScalesetSpec) -> set[int]:
    """A hand-made scale set (another provider) at the name `spec`'s generation takes first.

    None when a set has that name already (the spec's own, when its labels did not change).
    """
    name = live_name(spec)
    if name in garm.names():
        return set()
    hand_made = dataclasses.replace(desired_create(spec, name), provider_name="hand")
    return {garm.create_scaleset(spec.entity.kind, REPO_ID, hand_made).id}


def owner_of(scaleset: ScaleSet) -> str:
    """The logical name in a scale set's marker ("" without one)."""
    marker = parse_marker(scaleset.extended_state)
    return marker.logical if marker is not None else ""
