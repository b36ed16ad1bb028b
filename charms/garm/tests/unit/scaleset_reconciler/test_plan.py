"""The planner's less common branches, decided from what GARM lists (plan, pure).

Each test feeds `prepare`, `group` and `plan` the scale sets and runners a pass would list, and
asserts on the plan: its actions (what would be sent to GARM) and its report (what the status
says). They pin the boundaries and texts mutation testing found unpinned.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

import pytest

from doubles.memory_garm import REPO_ID, go_time
from garm_api.models import Entity, EntityKind, Instance, ScaleSet, ScaleSetCreate, ScaleSetUpdate
from scaleset_reconciler import Phase, PredecessorReport, ReconcileSettings
from scaleset_reconciler.actions import CreateAction, DeleteAction, ForceRemoveAction, UpdateAction
from scaleset_reconciler.grouping import group
from scaleset_reconciler.marker import Marker, config_hash
from scaleset_reconciler.naming import live_name, name_for, spec_generation
from scaleset_reconciler.needs import Observed, awaits_capacity, entity_key, needs
from scaleset_reconciler.plan import Plan, plan
from scaleset_reconciler.prepare import desired_create, prepare, validate_spec
from scaleset_reconciler.spec import EntityRef, ScalesetSpec
from unit.walks.scalesets import make_spec

# --- Found by mutation testing (mutmut): the planner's less common branches ---
# (was test_scaleset_plan_edges.py)

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)
LONG_AGO = NOW - datetime.timedelta(hours=1)
SETTINGS = ReconcileSettings()
SPEC = make_spec()
LIVE = live_name(SPEC)  # smal-x1br2
OLD_LABELS = ("x64",)
OLD = live_name(make_spec(labels=OLD_LABELS))
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
CAN_CREATE = Observed(
    providers=frozenset({"lxd"}), entities={entity_key(REPO.kind, REPO.name): REPO}
)


def listed(
    name: str,
    scaleset_id: int,
    *,
    labels: Sequence[str] = SPEC.labels,
    marker: Marker | None = None,
    created_at: datetime.datetime = LONG_AGO,
    **fields: Any,
) -> ScaleSet:
    """A scale set as `GET /scalesets` lists it: false, 0 and empty fields absent (B1)."""
    body: dict[str, Any] = {
        "runner_prefix": "garm",
        "created_at": go_time(created_at),
        "updated_at": go_time(created_at),
        "id": scaleset_id,
        "scale_set_id": scaleset_id + 100,
        "name": name,
        "disable_update": False,
        "state": "active",
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
        "repo_id": REPO_ID,
        "repo_name": "fake-org/fake-repo",
        "template_id": 1,
        "extended_state": marker.render() if marker is not None else "",
    }
    body.update(fields)
    return ScaleSet.from_wire({k: v for k, v in body.items() if v not in (False, 0, "", [])})


def marked(spec: ScalesetSpec = SPEC, **fields: Any) -> Marker:
    """The marker the charm writes for `spec` (its generation), with `fields` set."""
    values: dict[str, Any] = {"generation": spec_generation(spec), **fields}
    return Marker(logical=spec.name, config=config_hash(spec), **values)


def runner(scaleset_id: int, status: str, runner_status: str, name: str = "garm-r1") -> Instance:
    """A runner as `GET /instances` lists it (shape of wire/40_list_instances)."""
    return Instance.from_wire(
        {
            "id": f"id-{name}",
            "provider_id": f"fake-{name}",
            "provider_name": "lxd",
            "agent_id": 100,
            "name": name,
            "os_type": "linux",
            "status": status,
            "runner_status": runner_status,
            "scale_set_id": scaleset_id,
            "created_at": go_time(LONG_AGO),
            "updated_at": go_time(LONG_AGO),
            "github-runner-group": "Default",
        }
    )


def plan_pass(
    specs: Sequence[ScalesetSpec],
    scalesets: Sequence[ScaleSet],
    *,
    now: datetime.datetime = NOW,
    settings: ReconcileSettings = SETTINGS,
    observed: Observed = CAN_CREATE,
    instances: Sequence[Instance] = (),
) -> Plan:
    """One pass's plan from the specs and what GARM lists."""
    prepared = prepare(specs, settings)
    grouping = group(prepared, scalesets, all_readable=True)
    by_set: dict[int, list[Instance]] = {}
    for instance in instances:
        by_set.setdefault(instance.scale_set_id, []).append(instance)
    return plan(
        prepared,
        grouping,
        dataclasses.replace(observed, instances=by_set),
        now=now,
        settings=settings,
        sweep_orphans=True,
    )


def retire(scaleset: ScaleSet, marker: Marker, owner: str = "small") -> UpdateAction:
    """The update that retires `scaleset` with `marker` (stops its listener, B14)."""
    return UpdateAction(
        owner=owner,
        scaleset_id=scaleset.id,
        name=scaleset.name,
        update=ScaleSetUpdate(
            enabled=False, min_idle_runners=0, max_runners=0, extended_state=marker.render()
        ),
    )


# Preparing specs ---------------------------------------------------------------------------------


# Two logical names of one stem whose first live names collide (found by search, pinned).
COLLIDING = ("small-756", "small-2286")


def test_specs_whose_first_names_collide_get_distinct_names_in_one_pass():
    """Arrange: two specs whose attempt-0 names are one name, and an empty GARM.

    Act: plan. Assert: both are created in the same pass, the first under that name, the
    second under its next attempt's; neither is refused.
    """
    first, second = (make_spec(name) for name in COLLIDING)
    assert live_name(first) == live_name(second)

    result = plan_pass([first, second], [])

    creates = [a for a in result.actions if isinstance(a, CreateAction)]
    assert [(c.params.name, c.marker.attempt) for c in creates] == [
        (live_name(first), 0),
        (live_name(second, attempt=1), 1),
    ]
    assert result.report.spec(second.name).live_name == live_name(second, attempt=1)
    assert all(spec.phase is Phase.CREATING for spec in result.report.specs)


def test_a_name_another_specs_set_holds_is_skipped_and_never_touched():
    """Arrange: `small-2286`'s live set exists; `small-756`, whose first name is the same, is new.

    Act: plan, then plan again once its set exists. Assert: `small-756` is created under its
    next attempt's name, and no action ever touches the other spec's set.
    """
    first, second = (make_spec(name) for name in COLLIDING)
    holder = listed(live_name(second), 1, marker=marked(second))

    result = plan_pass([first, second], [holder])

    (create,) = [a for a in result.actions if isinstance(a, CreateAction)]
    assert (create.params.name, create.marker.attempt) == (live_name(first, attempt=1), 1)
    assert create.spares[0] == (live_name(first, attempt=2), 2)
    mine = listed(live_name(first, attempt=1), 2, marker=marked(first, attempt=1))
    again = plan_pass([first, second], [holder, mine])
    assert again.actions == []
    touched = [a for a in result.actions + again.actions if getattr(a, "scaleset_id", 0) == 1]
    assert touched == []


def test_a_name_an_unmarked_set_holds_is_skipped():
    """Arrange: a hand-made set (no marker) of another provider named as the spec's set would be.

    Act: plan. Assert: it is left alone, the spec's set created under its next attempt.
    """
    hand_made = listed(LIVE, 1, provider_name="someone-elses")

    result = plan_pass([SPEC], [hand_made])

    assert [a.params.name for a in result.actions if isinstance(a, CreateAction)] == [
        live_name(SPEC, attempt=1)
    ]
    assert [a for a in result.actions if not isinstance(a, CreateAction)] == []


def test_a_colliding_earlier_generation_of_the_same_spec_is_replaced_not_reused():
    """Arrange: generation `x64,l1680` live; the spec changes to `x64,l16815`, same first name.

    Act: plan. Assert: the old set is a predecessor (its marker's generation differs), the new
    generation is created under its next attempt's name; the old one keeps serving meanwhile.
    """
    old_spec, new_spec = make_spec(labels=("x64", "l1680")), make_spec(labels=("x64", "l16815"))
    assert live_name(old_spec) == live_name(new_spec)
    old = listed(live_name(old_spec), 1, labels=old_spec.labels, marker=marked(old_spec))

    result = plan_pass([new_spec], [old])

    (create,) = result.actions
    assert isinstance(create, CreateAction)
    assert create.params.name == live_name(new_spec, attempt=1)
    assert create.params.labels == ("l16815", "x64")
    assert [p.name for p in result.report.spec("small").predecessors] == [old.name]


def test_problems_are_joined_in_the_message_and_the_first_is_the_status():
    """Arrange: a spec with an invalid name and no entity. Act: prepare.

    Assert: the exact messages, joined with '; ', the first in the status (which fits in 120).
    """
    bad = make_spec("Bad_Name", entity=EntityRef(EntityKind.REPOSITORY, " "))

    (rejected,) = prepare([bad], SETTINGS).rejected

    name_problem = "the name must be made of a-z, 0-9 and '-' (not at either end)"
    entity_problem = "no repository or organization is set"
    assert rejected.errors == [name_problem, entity_problem]
    assert rejected.message == f"{name_problem}; {entity_problem}"
    assert rejected.status == f"invalid settings, fix them in its configurator: {name_problem}"
    assert len(rejected.status) <= 120


def test_a_name_budget_too_short_is_named():
    """Arrange: settings with a 6-character budget (7 is the least). Act: validate_spec.

    Assert: exactly the message saying the least budget.
    """
    settings = ReconcileSettings(name_budget=6)

    assert validate_spec(SPEC, settings) == ["the name budget must be at least 7 characters"]
    assert validate_spec(SPEC, ReconcileSettings(name_budget=7)) == []


def test_another_budget_is_used_for_live_names_and_adoption():
    """Arrange: a budget of 12; an unmarked set named for the spec's old labels at that budget.

    Act: prepare and group. Assert: the live name is cut to 12; the old set is adopted into
    the family as a predecessor (not foreign), with the old labels' generation.
    """
    settings = ReconcileSettings(name_budget=12)
    spec = make_spec("b" * 40)
    old_spec = make_spec("b" * 40, labels=OLD_LABELS)
    old = live_name(old_spec, 12)

    prepared = prepare([spec], settings)
    grouping = group(prepared, [listed(old, 1, labels=OLD_LABELS)], all_readable=True)

    (entry,) = prepared.entries
    assert entry.live_name == live_name(spec, 12)
    assert len(entry.live_name) == 12
    family = grouping.families[spec.name]
    assert [m.scaleset.name for m in family.predecessors] == [old]
    assert family.predecessors[0].generation == spec_generation(old_spec)
    assert family.foreign == []
    assert name_for(spec.name, spec_generation(old_spec), budget=12) == old


def test_differing_duplicates_warn_with_the_exact_text():
    """Arrange: `small` twice with different images. Act: prepare. Assert: the pinned warning."""
    prepared = prepare([SPEC, make_spec(image="other")], SETTINGS)

    assert prepared.warnings == [
        "scale set 'small' is configured more than once with different settings; "
        "the first one is used"
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {},
            {"runner_group": "Default", "extra_specs": None},
        ),
        (
            {
                "os_type": "windows",
                "os_arch": "arm64",
                "runner_group": "",
                "runner_bootstrap_timeout": 33,
                "extra_specs": {"disk": 20},
                "min_idle_runners": 1,
            },
            {
                "os_type": "windows",
                "os_arch": "arm64",
                "runner_group": "Default",
                "runner_bootstrap_timeout": 33,
                "extra_specs": {"disk": 20},
                "min_idle_runners": 1,
            },
        ),
        ({"runner_group": "ci"}, {"runner_group": "ci", "extra_specs": None}),
    ],
)
def test_the_create_request_carries_every_field(fields: dict[str, Any], expected: dict[str, Any]):
    """Arrange: a spec with non-default fields. Act: desired_create.

    Assert: the whole request: labels sorted, runner group `Default` when empty, no
    extra_specs when empty.
    """
    request = desired_create(make_spec(**fields), "small-1")

    base: dict[str, Any] = {
        "name": "small-1",
        "provider_name": "lxd",
        "image": "ubuntu:22.04",
        "flavor": "small",
        "labels": ("linux", "x64"),
        "max_runners": 3,
        "enabled": True,
    }
    assert request == ScaleSetCreate(**{**base, **expected})


# Grouping ----------------------------------------------------------------------------------------


def test_an_unmarked_live_set_gets_a_marker_of_the_first_attempt():
    """Arrange: the live set listed without a marker (created just before it was written).

    Act: plan. Assert: one update writing the marker: attempt 0, so no `attempt` key.
    """
    result = plan_pass([SPEC], [listed(LIVE, 1)])

    (update,) = result.actions
    assert isinstance(update, UpdateAction)
    assert update.update.extended_state == marked().render()


def test_an_attempt_under_old_labels_is_not_promoted_to_live():
    """Arrange: the live set, and a marked attempt 1 at the spec's old labels.

    Act: group. Assert: the live set stays live; the old attempt is a predecessor.
    """
    old_attempt = live_name(make_spec(labels=OLD_LABELS), attempt=1)
    live = listed(LIVE, 1, marker=marked())
    old = listed(old_attempt, 2, labels=OLD_LABELS, marker=marked(attempt=1))

    family = group(prepare([SPEC], SETTINGS), [live, old], all_readable=True).families["small"]

    assert family.live is not None
    assert family.live.scaleset.name == LIVE
    assert [m.scaleset.name for m in family.predecessors] == [old_attempt]


@pytest.mark.parametrize(("attempt", "adopted"), [(1, True), (64, True), (65, False)])
def test_unmarked_further_attempts_are_adopted_up_to_64(attempt: int, adopted: bool):
    """Arrange: the live set and an unmarked set named as attempt n at the spec.

    Act: group. Assert: attempts 1 to 64 are adopted (and the latest is live), 65 is foreign.
    """
    name = live_name(SPEC, attempt=attempt)
    live = listed(LIVE, 1, marker=marked())

    grouping = group(prepare([SPEC], SETTINGS), [live, listed(name, 2)], all_readable=True)
    family = grouping.families["small"]

    assert family.live is not None
    if adopted:
        assert (family.live.scaleset.name, family.live.attempt) == (name, attempt)
        assert family.foreign == []
    else:
        assert family.live.scaleset.name == LIVE
        assert family.foreign == [name]


# What to observe ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("retired", "instances"), [(True, True), (False, False)])
def test_instances_are_listed_for_a_retired_orphan_only(retired: bool, instances: bool):
    """Arrange: a converged `small` and an orphan of a removed spec, retired or not.

    Act: needs. Assert: instances are fetched only to drain the retired orphan.
    """
    orphan_marker = Marker(logical="gone", retired_at=LONG_AGO if retired else None)
    prepared = prepare([SPEC], SETTINGS)
    grouping = group(
        prepared,
        [listed(LIVE, 1, marker=marked()), listed("gone-12345", 2, marker=orphan_marker)],
        all_readable=True,
    )

    assert needs(prepared, grouping, sweep_orphans=True).instances is instances


@pytest.mark.parametrize(
    ("predecessor_marker", "awaits"),
    [(None, True), (Marker("small"), True), (Marker("small", retired_at=LONG_AGO), False)],
)
def test_a_handover_awaits_capacity_only_while_a_predecessor_serves(
    predecessor_marker: Marker | None, awaits: bool
):
    """Arrange: `min_idle_runners` 1, the live set and an old set (unmarked, marked, retired).

    Act: awaits_capacity. Assert: only a serving predecessor (not retired) makes it wait.
    """
    spec = make_spec(min_idle_runners=1)
    prepared = prepare([spec], SETTINGS)
    live = listed(LIVE, 1, marker=marked(spec))
    old = listed(OLD, 2, labels=OLD_LABELS, marker=predecessor_marker)

    family = group(prepared, [live, old], all_readable=True).families["small"]

    assert [m.scaleset.name for m in family.predecessors] == [OLD]
    assert awaits_capacity(spec, family) is awaits


# Planning a spec ---------------------------------------------------------------------------------


def test_creating_reports_the_live_name_and_drains_retired_predecessors():
    """Arrange: no live set; a retired, empty old set. Act: plan.

    Assert: the create of attempt 0 with three spare names, and the old set's delete owned by
    `small`; the report names the new live set.
    """
    old_marker = marked(make_spec(labels=OLD_LABELS), retired_at=LONG_AGO)
    old = listed(OLD, 2, labels=OLD_LABELS, marker=old_marker, enabled=False, max_runners=0)

    result = plan_pass([SPEC], [old])

    create, delete = result.actions
    assert isinstance(create, CreateAction)
    assert create.params.name == LIVE
    assert create.spares == tuple((live_name(SPEC, attempt=n), n) for n in (1, 2, 3))
    assert delete == DeleteAction("small", 2, OLD, old_marker)
    report = result.report.spec("small")
    assert report.live_name == LIVE
    assert report.phase is Phase.CREATING


def test_a_missing_provider_is_a_warning_with_the_exact_text():
    """Arrange: no live set and GARM without the `lxd` provider. Act: plan.

    Assert: skipped, nothing sent, the message and warning name the provider.
    """
    result = plan_pass([SPEC], [], observed=Observed(providers=frozenset(), entities={}))

    report = result.report.spec("small")
    assert result.actions == []
    assert report.phase is Phase.SKIPPED
    assert report.message == "provider 'lxd' is not configured in GARM yet"
    assert report.warnings == [report.message]


def test_a_foreign_generation_is_warned_about_with_the_exact_text():
    """Arrange: the live set and an unmarked set named like a generation of `small`.

    Act: plan. Assert: the pinned warning; nothing is sent to it.
    """
    result = plan_pass([SPEC], [listed(LIVE, 1, marker=marked()), listed("smal-0123a", 2)])

    assert result.actions == []
    assert result.report.spec("small").warnings == [
        "scale set 'smal-0123a' looks like a generation of 'small' but carries no marker "
        "of this charm; it is left alone"
    ]


def test_labels_are_not_changing_when_a_predecessor_has_the_same_labels():
    """Arrange: the live set and a marked predecessor with the same labels (another provider).

    Act: plan. Assert: the report says no labels change.
    """
    other = live_name(make_spec(provider_name="openstack"))
    predecessor = listed(other, 2, marker=marked(), provider_name="openstack")

    result = plan_pass([SPEC], [listed(LIVE, 1, marker=marked()), predecessor])

    assert result.report.spec("small").labels_changing is False


# The live set's update ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("listed_fields", "marker"),
    [
        ({"enabled": False}, marked()),
        ({"enabled": False, "max_runners": 0}, marked(retired_at=LONG_AGO)),
        ({}, marked(retired_at=LONG_AGO)),
    ],
    ids=["disabled", "retired", "retired-but-enabled"],
)
def test_a_live_set_back_from_retirement_is_re_enabled_now(
    listed_fields: dict[str, Any], marker: Marker
):
    """Arrange: the live set disabled or retired (labels changed back to it).

    Act: plan. Assert: one update to the whole wanted state, its marker enabled now and not
    retired; the old predecessors are not retired in the same pass.
    """
    live = listed(LIVE, 1, marker=marker, **listed_fields)

    result = plan_pass([SPEC], [live])

    fields: dict[str, Any] = {"extended_state": marked(enabled_at=NOW).render()}
    if not live.enabled:
        fields["enabled"] = True
    if live.max_runners != 3:
        fields.update(min_idle_runners=0, max_runners=3)
    assert result.actions == [
        UpdateAction(
            owner="small",
            scaleset_id=1,
            name=LIVE,
            update=ScaleSetUpdate(**fields),
            template_name=None,
            os_type="linux",
        )
    ]


def test_a_live_set_keeps_the_time_it_was_re_enabled():
    """Arrange: the live set, enabled, its marker with `enabled-at`. Act: plan.

    Assert: nothing to send.
    """
    live = listed(LIVE, 1, marker=marked(enabled_at=LONG_AGO))

    assert plan_pass([SPEC], [live]).actions == []


def test_a_changed_runner_group_and_bootstrap_timeout_are_updated_in_place():
    """Arrange: the live set listed in group `Default` with a 20-minute bootstrap timeout.

    Act: plan a spec in group `ci` with 33 minutes. Assert: one update of exactly those two,
    with the template resolved for the spec's OS.
    """
    spec = make_spec(runner_group="ci", runner_bootstrap_timeout=33, os_type="windows")
    live = listed(LIVE, 1, marker=marked(spec), os_type="windows")

    result = plan_pass([spec], [live])

    assert result.actions == [
        UpdateAction(
            owner="small",
            scaleset_id=1,
            name=LIVE,
            update=ScaleSetUpdate(runner_group="ci", runner_bootstrap_timeout=33),
            os_type="windows",
        )
    ]


# The live set's readiness ------------------------------------------------------------------------

WIDE = make_spec(labels=("x64", "linux", "gpu", "fpga"))
WIDE_LIVE = live_name(WIDE)


def dropped_labels_pass(
    created_at: datetime.datetime, *, now: datetime.datetime = NOW
) -> tuple[Plan, ScaleSet]:
    """A pass after GitHub dropped `gpu` and `fpga` from the new set; the old set serves."""
    live = listed(WIDE_LIVE, 1, marker=marked(WIDE), created_at=created_at)
    old = listed(LIVE, 2, marker=marked())
    return plan_pass([WIDE], [live, old], now=now), old


def test_dropped_labels_block_with_the_exact_texts_and_a_retry_time():
    """Arrange: the new set created 5 minutes ago without `gpu` and `fpga`; the old set serves.

    Act: plan. Assert: Blocked with the pinned message and status (retry 15 minutes after
    the create), nothing sent, and the old set is not retired (it is no attempt of the spec).
    """
    created = NOW - datetime.timedelta(minutes=5)

    result, old = dropped_labels_pass(created)

    report = result.report.spec("small")
    message = (
        f"GARM created {WIDE_LIVE!r} without the labels fpga, gpu (GitHub may not allow "
        "several labels here); the old scale set keeps serving: change the labels or enable "
        "multiple labels"
    )
    assert report.phase is Phase.BLOCKED
    assert report.message == message
    assert report.errors == [message]
    assert report.status == (
        "GitHub dropped labels fpga, gpu (old set serves): change labels; retry 12:10 UTC"
    )
    assert report.relabel_at == created + datetime.timedelta(minutes=15)
    assert result.actions == []
    assert report.predecessors == [PredecessorReport(old.name, old.id, Phase.ACTIVE)]


def test_dropped_labels_are_retried_under_a_new_name_at_the_retry_time_exactly():
    """Arrange: the new set created exactly 15 minutes ago without two labels.

    Act: plan. Assert: a create of attempt 1, and the message says it tries again.
    """
    result, _ = dropped_labels_pass(NOW - datetime.timedelta(minutes=15))

    report = result.report.spec("small")
    (create,) = result.actions
    assert isinstance(create, CreateAction)
    assert create.params.name == live_name(WIDE, attempt=1)
    assert create.marker.attempt == 1
    assert report.message == (
        f"GARM created {WIDE_LIVE!r} without the labels fpga, gpu (GitHub may not allow "
        "several labels here); the old scale set keeps serving: change the labels or enable "
        "multiple labels; trying again under a new name"
    )


def test_a_re_enabled_set_serves_after_the_grace_from_its_re_enabling():
    """Arrange: a live set created long ago, re-enabled 30 s ago; the old set serves.

    Act: plan. Assert: it serves in 30 s; the old set is not retired yet.
    """
    live = listed(LIVE, 1, marker=marked(enabled_at=NOW - datetime.timedelta(seconds=30)))
    old = listed(OLD, 2, labels=OLD_LABELS, marker=marked(make_spec(labels=OLD_LABELS)))

    result = plan_pass([SPEC], [live, old])

    report = result.report.spec("small")
    assert report.serves_in == 30.0
    assert result.actions == []
    assert report.predecessors == [PredecessorReport(OLD, 2, Phase.ACTIVE)]


@pytest.mark.parametrize(
    ("listed_fields", "marker"),
    [({"enabled": False}, marked()), ({}, marked(retired_at=LONG_AGO))],
    ids=["disabled", "retired-but-enabled"],
)
def test_a_live_set_being_re_enabled_does_not_take_over_yet(
    listed_fields: dict[str, Any], marker: Marker
):
    """Arrange: the live set disabled or marked retired; the old set serves. Act: plan.

    Assert: the live set is re-enabled; the old set is not retired in the same pass.
    """
    live = listed(LIVE, 1, marker=marker, **listed_fields)
    old = listed(OLD, 2, labels=OLD_LABELS, marker=marked(make_spec(labels=OLD_LABELS)))

    result = plan_pass([SPEC], [live, old])

    (update,) = result.actions
    assert isinstance(update, UpdateAction)
    assert (update.name, update.update.enabled) == (LIVE, None if live.enabled else True)
    assert result.report.spec("small").predecessors == [PredecessorReport(OLD, 2, Phase.ACTIVE)]


# Capacity before a hand-over --------------------------------------------------------------------


def capacity_pass(minutes_ago: int) -> Plan:
    """`min_idle_runners` 1; the live set created `minutes_ago`, no runner online."""
    spec = make_spec(min_idle_runners=1)
    live = listed(
        LIVE,
        1,
        marker=marked(spec),
        min_idle_runners=1,
        created_at=NOW - datetime.timedelta(minutes=minutes_ago),
    )
    old = listed(OLD, 2, labels=OLD_LABELS, marker=marked(make_spec(labels=OLD_LABELS)))
    return plan_pass([spec], [live, old], instances=[runner(1, "running", "installing")])


def test_a_handover_waits_for_a_runner_with_the_exact_text():
    """Arrange: the live set created 10 minutes ago, its runner not online. Act: plan.

    Assert: the pinned waiting message and the time it gives up; the old set serves.
    """
    report = capacity_pass(10).report.spec("small")

    assert report.message == "waiting for an idle runner of 'smal-x1br2' to come online"
    assert report.awaiting_runner_until == NOW + datetime.timedelta(minutes=20)
    assert report.phase is Phase.CREATING


def test_a_handover_without_a_runner_after_the_timeout_blocks_with_the_exact_texts():
    """Arrange: the live set created 31 minutes ago (timeout 30), no runner online.

    Act: plan. Assert: Blocked with the pinned message and status; nothing is retired.
    """
    result = capacity_pass(31)

    report = result.report.spec("small")
    message = (
        "no idle runner of the new scale set 'smal-x1br2' came online within 30 min; the old "
        "scale set keeps serving: check the new set's image, flavor and provider (GARM's log); "
        "the hand-over goes on by itself once a runner is idle"
    )
    assert report.phase is Phase.BLOCKED
    assert report.message == message
    assert report.errors == [message]
    assert report.status == (
        "no idle runner of new set 'smal-x1br2' after 30 min; check image/flavor"
    )
    assert result.actions == []


# Earlier attempts that serve nothing the live one lacks ------------------------------------------


def attempts_pass(
    *,
    live_fields: dict[str, Any] | None = None,
    live_marker: dict[str, Any] | None = None,
    age: datetime.timedelta = datetime.timedelta(hours=1),
    min_idle_runners: int = 0,
    instances: Sequence[Instance] = (),
    settings: ReconcileSettings = SETTINGS,
    name: str = "small",
) -> list[int]:
    """Attempt 1 is live, GitHub dropped `gpu` from it and from attempt 0; the old set serves.

    Returns the ids of the scale sets the pass retires (attempt 0 is 2, the old set 3).
    """
    spec = make_spec(name, labels=("x64", "linux", "gpu"), min_idle_runners=min_idle_runners)
    length = settings.name_budget
    live = listed(
        live_name(spec, length, attempt=1),
        1,
        labels=("x64", "linux"),
        marker=marked(spec, attempt=1, **(live_marker or {})),
        created_at=NOW - age,
        min_idle_runners=min_idle_runners,
        **(live_fields or {}),
    )
    first = listed(live_name(spec, length), 2, labels=("x64", "linux"), marker=marked(spec))
    old = listed(live_name(make_spec(name), length), 3, marker=marked(make_spec(name)))
    result = plan_pass([spec], [live, first, old], settings=settings, instances=instances)
    return [
        action.scaleset_id
        for action in result.actions
        if isinstance(action, UpdateAction) and action.update.enabled is False
    ]


@pytest.mark.parametrize(
    ("case", "retired"),
    [
        ({}, [2]),
        ({"settings": ReconcileSettings(name_budget=12), "name": "d" * 40}, [2]),
        ({"age": datetime.timedelta(seconds=60)}, [2]),
        ({"age": datetime.timedelta(seconds=59)}, []),
        ({"live_fields": {"enabled": False}}, []),
        ({"live_marker": {"retired_at": LONG_AGO}}, []),
        ({"min_idle_runners": 1, "instances": [runner(1, "running", "idle")]}, [2]),
        ({"min_idle_runners": 1, "instances": [runner(1, "running", "installing")]}, []),
    ],
    ids=[
        "serving",
        "another-budget",
        "grace-just-passed",
        "within-grace",
        "live-disabled",
        "live-retired",
        "runner-online",
        "runner-not-online",
    ],
)
def test_an_earlier_attempt_is_retired_once_the_next_one_serves(
    case: dict[str, Any], retired: list[int]
):
    """Arrange: attempts 0 and 1 both without `gpu`; the old set of the former labels.

    Act: plan. Assert: attempt 0 is retired only once attempt 1 is enabled, not retired, past
    the grace and (with `min_idle_runners`) has a runner online; the old set always serves.
    """
    assert attempts_pass(**case) == retired


# Retiring, draining and deleting -----------------------------------------------------------------


@pytest.mark.parametrize(
    "old_marker",
    [None, Marker("small", config="abc", attempt=2)],
    ids=["unmarked", "marked"],
)
def test_a_ready_handover_retires_the_predecessor_keeping_its_marker(old_marker: Marker | None):
    """Arrange: the live set serving; the old set unmarked (adopted) or marked. Act: plan.

    Assert: one retire of the old set whose marker keeps what it had (an adopted one's, the
    generation its name says) and starts the drain clock now; the old set is handing over.
    """
    old = listed(OLD, 2, labels=OLD_LABELS, marker=old_marker)

    result = plan_pass([SPEC], [listed(LIVE, 1, marker=marked()), old])

    adopted = Marker("small", generation=spec_generation(make_spec(labels=OLD_LABELS)))
    base = old_marker or adopted
    assert result.actions == [retire(old, dataclasses.replace(base, retired_at=NOW))]
    assert result.report.spec("small").predecessors == [
        PredecessorReport(OLD, 2, Phase.HANDING_OVER)
    ]


def test_a_predecessor_waits_while_the_live_set_is_not_ready():
    """Arrange: the live set created 10 s ago; the old set unmarked. Act: plan.

    Assert: nothing sent; the old set is reported active with its id.
    """
    live = listed(LIVE, 1, marker=marked(), created_at=NOW - datetime.timedelta(seconds=10))
    old = listed(OLD, 2, labels=OLD_LABELS)

    result = plan_pass([SPEC], [live, old])

    assert result.actions == []
    assert result.report.spec("small").predecessors == [PredecessorReport(OLD, 2, Phase.ACTIVE)]


@pytest.mark.parametrize(
    ("listed_fields", "resent"),
    [
        ({"enabled": True, "max_runners": 0}, True),
        ({"enabled": False, "max_runners": 2}, True),
        ({"enabled": False, "max_runners": 0}, False),
    ],
)
def test_a_retired_set_is_retired_again_while_it_could_still_run(
    listed_fields: dict[str, Any], resent: bool
):
    """Arrange: a retired old set listed enabled or with runners allowed, with a job running.

    Act: plan. Assert: the same retire is sent again (same marker) only if it is enabled or
    may have runners; it drains meanwhile.
    """
    old_marker = marked(make_spec(labels=OLD_LABELS), retired_at=LONG_AGO)
    old = listed(OLD, 2, labels=OLD_LABELS, marker=old_marker, **listed_fields)

    result = plan_pass(
        [SPEC], [listed(LIVE, 1, marker=marked()), old], instances=[runner(2, "running", "active")]
    )

    assert result.actions == ([retire(old, old_marker)] if resent else [])
    assert result.report.spec("small").predecessors[0].phase is Phase.DRAINING


def test_past_the_drain_deadline_only_forceable_runners_are_removed():
    """Arrange: an old set retired 8 hours ago (deadline 7 h); a runner in a job, one starting.

    Act: plan.

    Assert: one force-remove of the running one, owned by `small`; the report says forcing,
    no time left, one forced, and the deadline.
    """
    retired_at = NOW - datetime.timedelta(hours=8)
    old_marker = marked(make_spec(labels=OLD_LABELS), retired_at=retired_at)
    old = listed(OLD, 2, labels=OLD_LABELS, marker=old_marker, enabled=False, max_runners=0)
    runners = [runner(2, "running", "active", "garm-r1"), runner(2, "creating", "", "garm-r2")]

    result = plan_pass([SPEC], [listed(LIVE, 1, marker=marked()), old], instances=runners)

    assert result.actions == [ForceRemoveAction("small", OLD, "garm-r1")]
    assert result.report.spec("small").predecessors == [
        PredecessorReport(
            OLD,
            2,
            Phase.FORCING,
            runners=2,
            seconds_left=0.0,
            forced=1,
            deadline=retired_at + datetime.timedelta(hours=7),
        )
    ]


@pytest.mark.parametrize(
    ("retry_in", "deleted"),
    [(datetime.timedelta(minutes=5), False), (datetime.timedelta(0), True)],
)
def test_an_empty_retired_set_is_deleted_when_its_retry_time_comes(
    retry_in: datetime.timedelta, deleted: bool
):
    """Arrange: a retired, empty old set whose last delete GARM kept; retry in 5 min or now.

    Act: plan. Assert: the delete is sent only at its retry time; the report says deleting,
    with the failures and the retry time.
    """
    old_marker = marked(
        make_spec(labels=OLD_LABELS),
        retired_at=LONG_AGO,
        delete_failures=1,
        delete_retry_at=NOW + retry_in,
    )
    old = listed(OLD, 2, labels=OLD_LABELS, marker=old_marker, enabled=False, max_runners=0)

    result = plan_pass([SPEC], [listed(LIVE, 1, marker=marked()), old])

    assert result.actions == ([DeleteAction("small", 2, OLD, old_marker)] if deleted else [])
    (report,) = result.report.spec("small").predecessors
    assert report.phase is Phase.DELETING
    assert report.delete_failures == 1
    assert report.delete_retry_at == NOW + retry_in


def test_an_orphan_is_retired_under_its_own_key():
    """Arrange: a marked scale set of a spec no configurator asks for any more. Act: plan.

    Assert: it is retired with its marker kept, the action owned by `orphan:<name>`; the report
    lists it handing over.
    """
    orphan_marker = Marker("gone", config="abc")
    orphan = listed("gone-12345678", 2, marker=orphan_marker)

    result = plan_pass([SPEC], [listed(LIVE, 1, marker=marked()), orphan])

    retired = dataclasses.replace(orphan_marker, retired_at=NOW)
    assert result.actions == [retire(orphan, retired, owner="orphan:gone-12345678")]
    assert result.report.orphans == [PredecessorReport("gone-12345678", 2, Phase.HANDING_OVER)]
