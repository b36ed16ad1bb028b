"""Live names within the provider's budget, and family membership (naming, grouping.group)."""

from __future__ import annotations

import dataclasses
import re
import zlib
from typing import Any

import pytest

from garm_api.models import EntityKind, ScaleSet
from scaleset_reconciler import ReconcileSettings
from scaleset_reconciler.grouping import group
from scaleset_reconciler.marker import Marker, config_hash, parse_marker
from scaleset_reconciler.naming import (
    ENTITY_ID_LENGTH,
    NAME_BUDGET,
    POOL_TAG_PREFIX,
    generation_key,
    is_valid_logical_name,
    live_name,
    name_for,
    spec_generation,
    stem,
    stem_of,
)
from scaleset_reconciler.prepare import prepare
from scaleset_reconciler.spec import EntityRef, ScalesetSpec
from unit.walks.scalesets import make_spec


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


def test_live_name_is_a_short_stem_and_five_base36_characters():
    """Arrange: a spec. Act: live_name.

    Assert: `<4 characters of the logical name>-<5 of [a-z0-9]>`, 10 characters, stable.
    """
    name = live_name(spec())

    assert re.fullmatch(r"smal-[a-z0-9]{5}", name)
    assert len(name) == NAME_BUDGET == 10
    assert live_name(spec()) == name


def test_the_budget_is_what_novas_tag_limit_leaves_the_openstack_pool_tag():
    """Arrange: GARM's pool ID `<name>-<entity uuid>` and the provider's tag (B46).

    Act: the tag of the longest live name. Assert: exactly Nova's 60 characters; one more
    character would be refused.
    """
    entity_id = "c35919a8-8f26-4fc5-ba84-a7386cbd45c8"
    name = live_name(spec(name="a-long-logical-name-of-a-scale-set"))

    tag = f"{POOL_TAG_PREFIX}{name}-{entity_id}"

    assert len(entity_id) == ENTITY_ID_LENGTH
    assert len(tag) == 60
    assert len(f"{POOL_TAG_PREFIX}{name}x-{entity_id}") == 61


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
    [
        {"image": "other"},
        {"max_runners": 9},
        {"extra_specs": {"a": 1}},
        {"template_name": "t"},
        {"application": "another-app"},
    ],
)
def test_live_name_ignores_mutable_fields(change: dict[str, object]):
    """Arrange: a mutable change, or another publishing application.

    Act: live_name. Assert: the same name (updated in place; the marker says whose it is).
    """
    assert live_name(dataclasses.replace(spec(), **change)) == live_name(spec())  # type: ignore[arg-type]


def test_entity_name_case_does_not_change_the_name():
    """Arrange: entity names differing in case. Act: live_name. Assert: one name."""
    upper = spec(entity=EntityRef(EntityKind.REPOSITORY, "Fake-Org/Fake-Repo"))

    assert live_name(upper) == live_name(spec())


def test_names_that_share_a_stem_differ_by_their_hash():
    """Arrange: logical names that share their first four characters. Act: live_name.

    Assert: one stem, distinct names: the logical name is in the hash.
    """
    names = {live_name(spec(name=name)) for name in ("small", "smalt", "smal", "small-gpu")}

    assert {name.split("-")[0] for name in names} == {"smal"}
    assert len(names) == 4


@pytest.mark.parametrize(
    ("logical", "expected"),
    [("small", "smal"), ("ab", "ab"), ("a-b-c", "a-b"), ("abc-d", "abc"), ("a---b", "a")],
)
def test_the_stem_is_the_logical_name_cut_to_fit_without_trailing_dashes(
    logical: str, expected: str
):
    """Arrange: a logical name. Act: stem at the budget. Assert: cut to 4, no dash at the end."""
    assert stem(logical) == expected


@pytest.mark.parametrize("name", ["Small", "a_b", "a.b", "-a", "a-", "", "a b", "ä"])
def test_invalid_logical_names_are_refused(name: str):
    """Arrange: a name outside [a-z0-9-]. Act: check and live_name. Assert: refused."""
    assert not is_valid_logical_name(name)
    with pytest.raises(ValueError, match="invalid scale set name"):
        live_name(spec(name=name))


def test_a_further_attempt_has_a_distinct_name_of_the_same_shape_and_the_first_is_unchanged():
    """Arrange: a spec. Act: name attempts 0, 1 and 2.

    Assert: attempt 0 is the name without an attempt; each further one differs, same shape.
    """
    spec = make_spec()

    names = [live_name(spec, attempt=n) for n in range(3)]

    assert names[0] == live_name(spec)
    assert len(set(names)) == 3
    assert all(re.fullmatch(r"smal-[a-z0-9]{5}", name) for name in names)


def test_the_smallest_budget_still_names_and_one_less_is_refused():
    """Arrange: a long name. Act: stem at 7 (one character, a dash, 5) and at 6.

    Assert: at 7 one character; at 6 the error names the least budget.
    """
    assert stem("a" * 20, 7) == "a"
    assert len(live_name(spec(name="a" * 20), 7)) == 7
    with pytest.raises(ValueError, match=r"^the name budget must be at least 7 characters$"):
        stem("a" * 20, 6)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("smal-abc12", "smal"), ("a-b-00000", "a-b"), ("small", None), ("smal-ABC12", None)],
)
def test_stem_of_reads_only_names_shaped_as_live_names(name: str, expected: str | None):
    """Arrange: names. Act: stem_of. Assert: the stem of `<stem>-<5 of [a-z0-9]>`, else None."""
    assert stem_of(name) == expected


def test_group_puts_each_scale_set_in_the_family_its_marker_names():
    """Arrange: specs `a` and `a-b` (one stem), their live sets and marked earlier ones.

    Act: group. Assert: each scale set is in its own spec's family, whatever its name looks
    like; the live one of each is its current generation's.
    """
    specs = [spec("a"), spec("a-b", labels=("gpu",))]
    prepared = prepare(specs, ReconcileSettings())
    live_a, live_ab = (entry.live_name for entry in prepared.entries)
    gen_a, gen_ab = (spec_generation(s) for s in specs)
    observed = [
        listed(live_a, labels=("x64", "linux"), extended_state=_marker("a", gen_a)),
        listed(live_ab, labels=("gpu",), extended_state=_marker("a-b", gen_ab)),
        listed("a-b-1234abcd", extended_state=Marker("a-b", config_hash(specs[1])).render()),
        listed("a-0000abcd", extended_state=Marker("a", config_hash(specs[0])).render()),
    ]

    grouping = group(prepared, observed, all_readable=True)

    family_a, family_ab = grouping.families["a"], grouping.families["a-b"]
    assert family_a.live is not None
    assert family_a.live.scaleset.name == live_a
    assert [m.scaleset.name for m in family_a.predecessors] == ["a-0000abcd"]
    assert family_ab.live is not None
    assert family_ab.live.scaleset.name == live_ab
    assert [m.scaleset.name for m in family_ab.predecessors] == ["a-b-1234abcd"]


def test_a_set_named_as_the_live_name_is_live_only_with_the_generation_in_its_marker():
    """Arrange: the spec's live name held by a marked set of another generation of the spec.

    Act: group. Assert: a predecessor, not the live set: a 5-character hash is never trusted.
    """
    current = spec()
    prepared = prepare([current], ReconcileSettings())
    other = spec_generation(spec(labels=("arm64",)))
    observed = [listed(live_name(current), extended_state=_marker("small", other))]

    grouping = group(prepared, observed, all_readable=True)

    family = grouping.families["small"]
    assert family.live is None
    assert [m.scaleset.name for m in family.predecessors] == [live_name(current)]


def test_group_leaves_unmarked_lookalikes_alone_but_adopts_own_names():
    """Arrange: unmarked sets named for an earlier label set, at a further attempt; others.

    The others: a lookalike, a bare `small`, an orphan of this charm and a hand-made one.
    Act: group. Assert: the three the charm would have named are the spec's (the current one
    live), the lookalike is foreign, the marked one an orphan, the rest left alone.
    """
    current = spec(labels=("gpu",))
    prepared = prepare([current], ReconcileSettings())
    earlier = live_name(spec(labels=("x64",)))
    further = live_name(current, attempt=3)
    observed = [
        listed(earlier, labels=("x64",)),
        listed(further, labels=("gpu",)),
        listed("smal-zzzzz", labels=("x64",)),
        listed("small", labels=("x64",)),
        listed("gone-12345", extended_state=Marker("gone").render()),
        listed("hand-made"),
    ]

    grouping = group(prepared, observed, all_readable=True)

    family = grouping.families["small"]
    assert family.live is not None
    assert (family.live.scaleset.name, family.live.attempt) == (further, 3)
    assert [m.scaleset.name for m in family.predecessors] == [earlier]
    assert family.predecessors[0].generation == spec_generation(spec(labels=("x64",)))
    assert family.foreign == ["smal-zzzzz"]
    assert [m.scaleset.name for m in grouping.orphans] == ["gone-12345"]
    assert grouping.taken == {s.name for s in observed}


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
        generation="0123456789abcdef",
    )

    assert parse_marker(marker.render()) == marker
    assert parse_marker("") is None
    assert parse_marker("running") is None
    assert parse_marker('{"logical": "small"}') is None
    assert parse_marker('{"managed-by": "garm-charm", "logical": 3}') is None
    assert parse_marker("[1, 2]") is None


def test_name_for_is_live_name_of_the_specs_generation():
    """Arrange: the fixture spec. Act: name_for with its generation key, and live_name.

    Assert: the same name at each attempt.
    """
    current = spec()
    generation = generation_key(
        ("x64", "linux"), "lxd", EntityKind.REPOSITORY, "fake-org/fake-repo"
    )

    assert generation == spec_generation(current)
    for attempt in range(3):
        assert name_for("small", generation, attempt=attempt) == live_name(
            current, attempt=attempt
        )


def _marker(logical: str, generation: str, attempt: int = 0) -> str:
    return Marker(logical, "c", generation=generation, attempt=attempt).render()
