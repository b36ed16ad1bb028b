"""Live names and family membership (scaleset_reconciler: naming, plan.group)."""

from __future__ import annotations

import dataclasses
import re
import zlib
from typing import Any

import pytest
from scaleset_fixtures import make_spec

from garm_api.models import EntityKind, ScaleSet
from scaleset_reconciler.marker import Marker, config_hash, parse_marker
from scaleset_reconciler.naming import (
    FamilyIndex,
    identity_hash,
    is_valid_logical_name,
    live_name,
    stem,
)
from scaleset_reconciler.plan import ReconcileSettings, group, prepare
from scaleset_reconciler.spec import EntityRef, ScalesetSpec


def spec(
    name: str = "small", labels: tuple[str, ...] = ("x64", "linux"), **kw: Any
) -> ScalesetSpec:
    """A valid spec."""
    return make_spec(name, labels, **kw)


def listed(name: str, *, extended_state: str = "", labels: tuple[str, ...] = ("x64",)) -> ScaleSet:
    """A scale set as `GET /scalesets` lists it (shape of wire/21_6b_list_repo_scalesets)."""
    body = {
        "runner_prefix": "garm",
        "created_at": "2026-11-29T22:50:07.06260339Z",
        "updated_at": "2026-11-29T22:50:07.063302244Z",
        "id": zlib.crc32(name.encode()) % 100000 + 1,
        "scale_set_id": 8,
        "name": name,
        "disable_update": False,
        "state": "pending_create",
        "provider_name": "lxd",
        "max_runners": 3,
        "image": "ubuntu:22.04",
        "flavor": "small",
        "os_type": "linux",
        "os_arch": "amd64",
        "enabled": True,
        "enable_shell": False,
        "generation": 0,
        "endpoint": {"created_at": "0001-01-01T00:00:00Z", "updated_at": "0001-01-01T00:00:00Z"},
        "runner_bootstrap_timeout": 20,
        "github-runner-group": "Default",
        "tags": [{"id": f"id-{label}", "name": label} for label in labels],
        "status_messages": None,
        "repo_id": "c35919a8-8f26-4fc5-ba84-a7386cbd45c8",
        "repo_name": "fake-org/fake-repo",
        "template_id": 2,
    }
    if extended_state:
        body["extended_state"] = extended_state
    return ScaleSet.from_wire(body)


def test_live_name_is_logical_name_and_eight_hex():
    """Arrange: a spec. Act: live_name. Assert: `<logical>-<8 hex>`, stable across calls."""
    name = live_name(spec())

    assert re.fullmatch(r"small-[0-9a-f]{8}", name)
    assert live_name(spec()) == name


def test_live_name_ignores_label_case_spaces_order_and_duplicates():
    """Arrange: label sets equal after normalisation. Act: live_name. Assert: one name."""
    a = live_name(spec(labels=("x64", "GPU")))
    b = live_name(spec(labels=(" gpu ", "x64", "X64", "")))

    assert a == b


@pytest.mark.parametrize(
    "change",
    [
        {"labels": ("x64", "gpu")},
        {"provider_name": "openstack"},
        {"entity": EntityRef(EntityKind.ORGANIZATION, "fake-org")},
        {"entity": EntityRef(EntityKind.REPOSITORY, "fake-org/other")},
    ],
)
def test_live_name_changes_with_what_garm_cannot_change(change: dict[str, object]):
    """Arrange: a spec and one immutable change. Act: live_name. Assert: the name differs."""
    assert live_name(dataclasses.replace(spec(), **change)) != live_name(spec())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [{"image": "other"}, {"max_runners": 9}, {"extra_specs": {"a": 1}}, {"template_name": "t"}],
)
def test_live_name_ignores_mutable_fields(change: dict[str, object]):
    """Arrange: a mutable change. Act: live_name. Assert: the same name (updated in place)."""
    assert live_name(dataclasses.replace(spec(), **change)) == live_name(spec())  # type: ignore[arg-type]


def test_entity_name_case_does_not_change_the_name():
    """Arrange: entity names differing in case. Act: live_name. Assert: one name."""
    upper = spec(entity=EntityRef(EntityKind.REPOSITORY, "Fake-Org/Fake-Repo"))

    assert live_name(upper) == live_name(spec())


def test_long_names_are_cut_and_never_collide():
    """Arrange: two 80-character names sharing 70 characters. Act: live_name at 64.

    Assert: both fit in 64 characters of [a-z0-9-] and differ.
    """
    common = "a" * 70
    first = live_name(spec(name=common + "-first-one"), 64)
    second = live_name(spec(name=common + "-second-on"), 64)

    assert len(first) <= 64
    assert len(second) <= 64
    assert first != second
    assert re.fullmatch(r"[a-z0-9-]+", first)


def test_name_that_fits_exactly_is_not_cut():
    """Arrange: a 55-character name (55 + 9 = 64). Act: stem. Assert: unchanged."""
    name = "b" * 55

    assert stem(name, 64) == name
    assert stem(name + "b", 64) != name + "b"


@pytest.mark.parametrize("name", ["Small", "a_b", "a.b", "-a", "a-", "", "a b", "ä"])
def test_invalid_logical_names_are_refused(name: str):
    """Arrange: a name outside [a-z0-9-]. Act: check and live_name. Assert: refused."""
    assert not is_valid_logical_name(name)
    with pytest.raises(ValueError, match="invalid scale set name"):
        live_name(spec(name=name))


def test_family_index_prefers_live_then_exact_then_generation():
    """Arrange: specs `a` and `a-b`, and `a-1234abcd` (a spec too).

    Act: owner of each name. Assert: the more specific logical name wins, live names first.
    """
    index = FamilyIndex(
        {"a-11111111": "a", "a-b-22222222": "a-b"},
        {"a": "a", "a-b": "a-b", "a-1234abcd": "a-1234abcd"},
    )

    assert index.owner("a-11111111") == "a"
    assert index.owner("a-b-1234abcd") == "a-b"
    assert index.owner("a-b-22222222") == "a-b"
    assert index.owner("a-1234abcd") == "a-1234abcd"
    assert index.owner("a-1234abcd-99999999") == "a-1234abcd"
    assert index.owner("a-99999999") == "a"
    assert index.owner("a-b") == "a-b"
    assert index.owner("a-xyz") is None
    assert index.owner("a-B-1234ABCD") is None


def test_group_never_gives_a_spec_another_specs_generation():
    """Arrange: specs `a` and `a-b`; marked generations of both and their live names.

    Act: group. Assert: each scale set lands in its own spec's family.
    """
    specs = [spec("a"), spec("a-b", labels=("gpu",))]
    prepared = prepare(specs, ReconcileSettings())
    live_a, live_ab = (entry.live_name for entry in prepared.entries)
    old_a = Marker("a", config_hash(specs[0])).render()
    old_ab = Marker("a-b", config_hash(specs[1])).render()
    observed = [
        listed(live_a, labels=("x64", "linux")),
        listed(live_ab, labels=("gpu",)),
        listed("a-b-1234abcd", extended_state=old_ab),
        listed("a-0000abcd", extended_state=old_a),
    ]

    grouping = group(prepared, observed)

    family_a, family_ab = grouping.families["a"], grouping.families["a-b"]
    assert family_a.live is not None
    assert family_a.live.scaleset.name == live_a
    assert [m.scaleset.name for m in family_a.predecessors] == ["a-0000abcd"]
    assert family_ab.live is not None
    assert family_ab.live.scaleset.name == live_ab
    assert [m.scaleset.name for m in family_ab.predecessors] == ["a-b-1234abcd"]


def test_group_leaves_unmarked_lookalikes_alone_but_adopts_own_names():
    """Arrange: unmarked lookalikes, a bare `small`, and an orphan of this charm.

    Arrange: an unmarked `small-<hash>` whose hash matches its labels, one whose does not,
    a bare `small`, and a marked scale set of a spec that no longer exists.
    Act: group. Assert: the self-consistent one is a predecessor, the others are foreign or
    hand-made, the marked one is an orphan.
    """
    current = spec(labels=("gpu",))
    prepared = prepare([current], ReconcileSettings())
    earlier = live_name(spec(labels=("x64",)))
    observed = [
        listed(earlier, labels=("x64",)),
        listed("small-deadbeef", labels=("x64",)),
        listed("small", labels=("x64",)),
        listed("gone-12345678", extended_state=Marker("gone").render()),
        listed("hand-made"),
    ]

    grouping = group(prepared, observed)

    family = grouping.families["small"]
    assert family.live is None
    assert [m.scaleset.name for m in family.predecessors] == [earlier]
    assert sorted(family.foreign) == ["small", "small-deadbeef"]
    assert [m.scaleset.name for m in grouping.orphans] == ["gone-12345678"]


def test_marker_round_trips_and_ignores_foreign_extended_state():
    """Arrange: a marker with every field; other texts. Act: render and parse.

    Assert: the same marker back; anything not written by this charm is None.
    """
    marker = Marker(
        "small",
        "0123456789abcdef",
        retired_at=listed("x").created_at,
        enabled_at=listed("x").updated_at,
        delete_failures=2,
        delete_retry_at=listed("x").updated_at,
        attempt=3,
    )

    assert parse_marker(marker.render()) == marker
    assert parse_marker("") is None
    assert parse_marker("running") is None
    assert parse_marker('{"logical": "small"}') is None
    assert parse_marker('{"managed-by": "garm-charm", "logical": 3}') is None
    assert parse_marker("[1, 2]") is None


def test_a_further_attempt_has_a_distinct_name_in_the_family_and_the_first_is_unchanged():
    """Arrange: a spec. Act: name attempts 0, 1 and 2.

    Assert: attempt 0 is the name as it always was; each further attempt differs, and all are
    `<logical>-<8 hex>`, so they are in the spec's family.
    """
    spec = make_spec()

    names = [live_name(spec, attempt=n) for n in range(3)]

    assert names[0] == live_name(spec)
    assert len(set(names)) == 3
    assert all(re.fullmatch(r"small-[0-9a-f]{8}", name) for name in names)


def test_identity_hash_of_the_first_attempt_is_pinned():
    """Arrange: the fixture spec's labels, provider and entity. Act: identity_hash by default.

    Assert: the hash of the first attempt, as in the spec's pinned live name `small-9d329121`.
    """
    hashed = identity_hash(("x64", "linux"), "lxd", EntityKind.REPOSITORY, "fake-org/fake-repo")

    assert hashed == "9d329121"


def test_the_shortest_maximum_length_still_names_and_one_less_is_refused():
    """Arrange: a 20-character name. Act: stem at 17 (the least) and at 16.

    Assert: at 17 one character, a dash and 6 hex; at 16 the error names the least maximum.
    """
    assert stem("a" * 20, 17) == "a-42492d"
    with pytest.raises(ValueError, match=r"^the maximum name length must be at least 17$"):
        stem("a" * 20, 16)


def test_family_index_edges():
    """Arrange: indexes with a cut stem, a live name spelling another spec's name, and `a`.

    Act: owner. Assert: a set named exactly a cut stem is that spec's; a live name wins over
    an exact logical name; a non-hex suffix of 8 characters is in no family.
    """
    long_name = "a" * 70
    cut_only = FamilyIndex({}, {long_name: stem(long_name)})
    live_first = FamilyIndex({"a-1234abcd": "a"}, {"a": "a", "a-1234abcd": "a-1234abcd"})

    assert cut_only.owner(stem(long_name)) == long_name
    assert live_first.owner("a-1234abcd") == "a"
    assert FamilyIndex({}, {"a": "a"}).owner("a-xxxxxxxx") is None
