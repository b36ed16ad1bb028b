"""The scale-set changeover, phase by phase, against the in-memory GARM."""

from __future__ import annotations

import dataclasses
import datetime
import logging
from typing import Any

import pytest

from doubles.memory_garm import CONSOLIDATION_SECONDS, MemoryGarm
from garm_api import GarmBadRequest, GarmUnreachable, ScaleSet, ScaleSetCreate, Template
from garm_api.models import ScaleSetUpdate
from scaleset_reconciler import (
    Phase,
    ReconcileReport,
    ReconcileSettings,
    blocked_message,
    preview,
    retry_message,
    status_message,
)
from scaleset_reconciler.marker import Marker, parse_marker
from scaleset_reconciler.naming import live_name, spec_generation
from scaleset_reconciler.prepare import desired_create
from scaleset_reconciler.report import Failure
from scaleset_reconciler.spec import ScalesetSpec
from status_text import short_name
from unit.walks.scalesets import (
    NEW_LABELS,
    ORG,
    SETTINGS,
    changeover_started,
    converge,
    make_spec,
    run,
)


def marker_of(garm: MemoryGarm, name: str) -> Marker:
    """The charm's marker on the scale set `name`."""
    marker = parse_marker(garm.by_name(name).extended_state)
    assert marker is not None
    return marker


def test_first_pass_creates_the_live_scale_set_and_stamps_it():
    """Arrange: an empty GARM. Act: one pass.

    Assert: the live name exists, enabled, with the labels, the marker written by the update
    right after the create; the report says creating.
    """
    garm = MemoryGarm()

    report = run(garm, [make_spec(min_idle_runners=1)])

    name = live_name(make_spec())
    scaleset = garm.by_name(name)
    assert scaleset.enabled
    assert scaleset.normalised_labels == {"x64", "linux"}
    assert (scaleset.min_idle_runners, scaleset.max_runners) == (1, 3)
    assert marker_of(garm, name) == Marker(
        "small", marker_of(garm, name).config, generation=spec_generation(make_spec())
    )
    assert [call[0] for call in garm.writes()] == ["create_scaleset", "update_scaleset"]
    assert report.spec("small").phase is Phase.CREATING
    assert status_message(report) == "'small': creating"


def test_converged_pass_lists_once_and_writes_nothing():
    """Arrange: a converged GARM. Act: one more pass. Assert: one request, no writes, active."""
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    garm.calls.clear()

    report = run(garm, [make_spec()])

    assert garm.calls == [("list_scalesets", ())]
    assert report.writes == 0
    assert report.converged
    assert report.spec("small").phase is Phase.ACTIVE
    assert status_message(report) == ""


def test_forty_specs_converged_pass_stays_within_budget():
    """Arrange: 40 specs over a repository and an organization, converged.

    Act: one pass. Assert: at most 5 requests and no writes.
    """
    garm = MemoryGarm()
    specs = [make_spec(f"set-{i}", entity=ORG if i % 2 else make_spec().entity) for i in range(40)]
    converge(garm, specs)
    garm.calls.clear()

    report = run(garm, specs)

    assert report.requests <= 5
    assert len(garm.calls) <= 5
    assert report.writes == 0
    assert report.converged


def test_predecessor_is_left_alone_within_the_handover_grace():
    """Arrange: labels changed, the new scale set created. Act: a pass 59 s later.

    Assert: the old scale set is still enabled with its counts; nothing was written.
    """
    garm = MemoryGarm()
    old, _ = changeover_started(garm)
    garm.advance(59)
    garm.calls.clear()

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert garm.by_name(old).enabled
    assert garm.by_name(old).max_runners == 3
    assert garm.writes() == []
    assert report.spec("small").phase is Phase.CREATING
    assert report.spec("small").labels_changing
    assert status_message(report) == "'small' labels changing: handing over (new set serves in 1s)"


def test_handover_retires_each_predecessor_with_one_update():
    """Arrange: labels changed, the grace elapsed. Act: one pass.

    Assert: one PUT per predecessor: disabled, min 0, max 0, marker with retired-at = now.
    """
    garm = MemoryGarm()
    old, new = changeover_started(garm)
    garm.advance(60)
    garm.calls.clear()

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    old_id = garm.by_name(old).id
    assert [(c[0], c[1][0]) for c in garm.writes()] == [("update_scaleset", old_id)]
    update = garm.writes()[0][1][1]
    assert isinstance(update, ScaleSetUpdate)
    assert (update.enabled, update.min_idle_runners, update.max_runners) == (False, 0, 0)
    assert marker_of(garm, old).retired_at == garm.now
    assert garm.by_name(new).enabled
    assert report.spec("small").phase is Phase.HANDING_OVER


def test_label_change_without_jobs_completes_in_two_passes_after_grace():
    """Arrange: labels changed, no jobs, the grace elapsed. Act: two passes (1 s apart).

    Assert: only the new scale set remains and the report says active.
    """
    garm = MemoryGarm()
    old, new = changeover_started(garm)
    garm.advance(60)

    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(1)
    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert garm.names() == {new}
    assert old not in garm.names()
    assert report.converged


def test_draining_waits_for_the_job_then_deletes():
    """Arrange: a job runs on the old scale set; retired. Act: passes while it runs, then after.

    Assert: the retiring pass counts every write it made; a draining pass writes nothing (no
    retire update re-sent); draining with its runner count and time left; still draining while
    GARM has not noticed the job's end (a disabled set has no listener); deleted once its
    consolidation has.
    """
    garm = MemoryGarm()
    old, new = changeover_started(garm)
    job = garm.start_job_when_ready(garm.by_name(old).id)
    assert job is not None
    garm.advance(60)
    before_retire = len(garm.writes())
    retiring = run(garm, [make_spec(labels=NEW_LABELS)])
    assert retiring.writes == len(garm.writes()) - before_retire
    assert retiring.writes >= 1
    garm.advance(3600)
    before_drain = len(garm.writes())

    draining = run(garm, [make_spec(labels=NEW_LABELS)])

    assert garm.writes()[before_drain:] == []
    assert draining.writes == 0
    spec = draining.spec("small")
    assert spec.phase is Phase.DRAINING
    assert [(p.name, p.runners) for p in spec.predecessors] == [(old, 1)]
    assert spec.seconds_left == pytest.approx(6 * 3600)
    assert old in garm.names()
    assert status_message(draining) == (
        "'small' labels changing: draining 1 runner (deadline 05:52 UTC)"
    )
    assert garm.deletes_refused_with_runners == []

    garm.finish_job(job)
    garm.advance(1)
    unnoticed = run(garm, [make_spec(labels=NEW_LABELS)])
    assert unnoticed.spec("small").phase is Phase.DRAINING
    assert old in garm.names()

    garm.advance(CONSOLIDATION_SECONDS)  # GARM notices the job's end
    garm.advance(1)  # and the runner goes
    done = run(garm, [make_spec(labels=NEW_LABELS)])

    assert garm.names() == {new}
    assert done.spec("small").phase is Phase.ACTIVE


def test_drain_deadline_forces_removal_and_says_jobs_were_stopped():
    """Arrange: a job on a retired scale set. Act: a pass 1 s before the deadline, one at it.

    Assert: nothing forced before; at the deadline the runner is force-removed, the report
    and status say runners were stopped; the next passes delete the scale set.
    """
    garm = MemoryGarm()
    old, new = changeover_started(garm)
    job = garm.start_job_when_ready(garm.by_name(old).id)
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(7 * 3600 - 1)

    before = run(garm, [make_spec(labels=NEW_LABELS)])
    assert not any(c[0] == "delete_instance" for c in garm.writes())
    assert before.spec("small").phase is Phase.DRAINING

    garm.advance(1)
    forcing = run(garm, [make_spec(labels=NEW_LABELS)])

    assert ("delete_instance", (job, True)) in garm.calls
    assert forcing.spec("small").phase is Phase.FORCING
    assert forcing.spec("small").jobs_stopped == 1
    assert "stopping 1 runner and its job" in status_message(forcing)
    garm.advance(1)
    run(garm, [make_spec(labels=NEW_LABELS)])
    assert garm.names() == {new}


def test_forcing_skips_runners_garm_cannot_remove_yet():
    """Arrange: a retired scale set past its deadline with a `pending_create` runner.

    Act: a pass. Assert: no delete_instance for it (GARM would answer 400); still draining.
    """
    garm = MemoryGarm()
    old, _ = changeover_started(garm)
    job = garm.start_job_when_ready(garm.by_name(old).id)
    assert job is not None
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.now += datetime.timedelta(hours=8)
    garm.runners[job].status = "pending_create"

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert not any(c[0] == "delete_instance" for c in garm.calls)
    assert report.spec("small").phase is Phase.FORCING
    assert report.spec("small").jobs_stopped == 0


def test_delete_kept_by_garm_is_retried_with_backoff_then_blocked():
    """Arrange: GARM answers 200 to deletes but keeps the scale set (C9).

    Act: passes every 30 s for 8 minutes.
    Assert: deletes are sent 1, 2 and 4 minutes apart, not at every pass; the marker counts
    them; the first two wait (retrying at a given time), the third blocks saying what to do;
    when GARM recovers, the next delete goes through.
    """
    garm = MemoryGarm()
    old, new = changeover_started(garm)
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.keep_deletes = True
    garm.calls.clear()

    reports: list[ReconcileReport] = []
    for _ in range(16):
        garm.advance(30)
        reports.append(run(garm, [make_spec(labels=NEW_LABELS)]))

    deletes = [i for i, report in enumerate(reports) if report.spec("small").errors]
    assert deletes == [0, 2, 6, 14]
    first_retry = reports[0].spec("small").predecessors[0].delete_retry_at
    assert first_retry is not None
    assert retry_message(reports[0]) == (
        "GARM kept the old scale set of 'small' after a delete; "
        f"retrying at {first_retry:%H:%M} UTC"
    )
    assert blocked_message(reports[6]) == (
        "GARM kept the old scale set of 'small' after 3 deletes: "
        "GitHub dropped it? restart garm, or see log"
    )
    assert blocked_message(reports[7]) == blocked_message(reports[6])
    assert marker_of(garm, old).delete_failures == 4
    garm.keep_deletes = False
    garm.advance(8 * 60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    assert garm.names() == {new}


def test_mutable_change_updates_only_the_differing_fields():
    """Arrange: a converged spec. Act: change image and max runners, run a pass.

    Assert: one PUT carrying exactly image, min and max (raised by the refresh surge) and the
    marker starting the refresh; no new scale set; with no runners to replace, the next pass
    ends the refresh (counts back) and the one after writes nothing.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    garm.calls.clear()
    changed = make_spec(image="ubuntu:24.04", max_runners=5)

    report = run(garm, [changed])

    assert len(garm.writes()) == 1
    update = garm.writes()[0][1][1]
    assert isinstance(update, ScaleSetUpdate)
    sent = {f.name for f in dataclasses.fields(update) if getattr(update, f.name) is not None}
    assert sent == {"image", "min_idle_runners", "max_runners", "extended_state"}
    assert (update.min_idle_runners, update.max_runners) == (1, 6)
    assert garm.by_name(live_name(make_spec())).image == "ubuntu:24.04"
    assert report.spec("small").phase is Phase.REFRESHING
    assert run(garm, [changed]).spec("small").phase is Phase.ACTIVE
    assert garm.by_name(live_name(changed)).max_runners == 5
    assert run(garm, [changed]).writes == 0


def test_extra_specs_and_template_changes_are_seen_through_the_marker():
    """Arrange: a converged spec. Act: set extra specs and a template by name.

    Assert: one PUT with extra_specs, the template's id and the new marker; then converged
    once the refresh it started ends (no runners to replace).
    """
    garm = MemoryGarm()
    garm.templates.append({"id": 7, "name": "mine", "os_type": "linux", "owner_id": "admin"})
    converge(garm, [make_spec()])
    changed = make_spec(extra_specs={"disk": 20}, template_name="mine")
    garm.calls.clear()

    run(garm, [changed])

    update = garm.writes()[0][1][1]
    assert isinstance(update, ScaleSetUpdate)
    assert update.extra_specs == {"disk": 20}
    assert update.template_id == 7
    assert garm.rows[garm.by_name(live_name(changed)).id].extra_specs == {"disk": 20}
    run(garm, [changed])
    assert run(garm, [changed]).writes == 0


def test_unknown_template_is_an_error_for_that_spec_only():
    """Arrange: two new specs, one naming a template GARM lacks. Act: a pass.

    Assert: that spec reports an error and was not created; the other one was.
    """
    garm = MemoryGarm()

    report = run(garm, [make_spec("a", template_name="nope"), make_spec("b")])

    assert report.spec("a").phase is Phase.ERROR
    assert "template 'nope'" in report.spec("a").errors[0]
    assert garm.names() == {live_name(make_spec("b"))}


def test_label_change_back_mid_drain_reenables_that_generation():
    """Arrange: x64 -> gpu, handed over, a job draining on the x64 generation.

    Act: change back to x64 and run passes. Assert: no third scale set is created; the x64
    generation is re-enabled with its counts and no retired-at; after the grace the gpu one
    is retired and later deleted.
    """
    garm = MemoryGarm()
    old, new = changeover_started(garm)
    job = garm.start_job_when_ready(garm.by_name(old).id)
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(30)
    garm.calls.clear()

    back = run(garm, [make_spec()])

    assert not any(c[0] == "create_scaleset" for c in garm.writes())
    restored = garm.by_name(old)
    assert restored.enabled
    assert (restored.min_idle_runners, restored.max_runners) == (0, 3)
    assert marker_of(garm, old).retired_at is None
    assert back.spec("small").phase is Phase.CREATING
    assert garm.by_name(new).enabled
    assert job in {r.name for r in garm.runners_of(old)}

    garm.advance(60)
    run(garm, [make_spec()])
    assert not garm.by_name(new).enabled
    garm.advance(1)
    final = run(garm, [make_spec()])
    assert garm.names() == {old}
    assert final.converged


def test_dropped_labels_block_and_keep_the_predecessor_serving():
    """Arrange: GARM drops the `gpu` label at creation. Act: change labels, wait, run passes.

    Assert: blocked naming `gpu`; the old scale set stays enabled with its counts.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    garm.drop_labels = {"gpu"}
    old = live_name(make_spec())
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(120)

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert report.spec("small").phase is Phase.BLOCKED
    assert "gpu" in report.spec("small").message
    assert "gpu" in blocked_message(report)
    assert garm.by_name(old).enabled
    assert garm.by_name(old).max_runners == 3


def test_invalid_specs_are_blocked_before_any_call_and_others_go_on():
    """Arrange: specs with a bad name, max 0, and min > max, plus a valid one. Act: a pass.

    Assert: the invalid ones are blocked with reasons and never sent; the valid one is created.
    """
    garm = MemoryGarm()
    specs = [
        make_spec("Bad_Name"),
        make_spec("zero", max_runners=0),
        make_spec("inverted", min_idle_runners=4, max_runners=2),
        make_spec("good"),
    ]

    report = run(garm, specs)

    assert {s.logical: s.phase for s in report.specs} == {
        "Bad_Name": Phase.BLOCKED,
        "zero": Phase.BLOCKED,
        "inverted": Phase.BLOCKED,
        "good": Phase.CREATING,
    }
    assert "max_runners" in report.spec("zero").message
    created = [c for c in garm.writes() if c[0] == "create_scaleset"]
    assert len(created) == 1
    assert garm.names() == {live_name(make_spec("good"))}


def test_missing_provider_or_entity_skips_the_spec():
    """Arrange: one spec with an unknown provider, one with an unregistered org. Act: a pass.

    Assert: both skipped with a reason; nothing created for them.
    """
    garm = MemoryGarm()
    other_org = dataclasses.replace(ORG, name="someone-else")

    report = run(garm, [make_spec("a", provider_name="nope"), make_spec("b", entity=other_org)])

    assert report.spec("a").phase is Phase.SKIPPED
    assert "provider 'nope'" in report.spec("a").message
    assert report.spec("b").phase is Phase.SKIPPED
    assert "organization 'someone-else'" in report.spec("b").message
    assert garm.writes() == []


def test_one_refusal_does_not_stop_other_specs_or_the_sweep():
    """Arrange: an orphan of this charm and two new specs; GARM refuses the first create.

    Act: a pass. Assert: the refused spec reports an error; the other is created; the orphan
    is retired.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])
    garm.refuse("create_scaleset", 500)

    report = run(garm, [make_spec("a"), make_spec("b")])

    assert report.spec("a").phase is Phase.ERROR
    assert "HTTP 500" in report.spec("a").errors[0]
    assert report.spec("b").phase is Phase.CREATING
    assert not garm.by_name(live_name(make_spec("gone"))).enabled
    assert retry_message(report) == "GARM failed to create 'a' (HTTP 500); retrying"
    assert "'a'" not in status_message(report)


def test_outage_stops_the_pass_at_once():
    """Arrange: GARM goes away after the first create. Act: a pass.

    Assert: GarmUnreachable is raised and nothing after the failed call was attempted.
    """
    garm = MemoryGarm()
    original = garm.update_scaleset

    def update_then_die(scaleset_id: int, params: ScaleSetUpdate):
        garm.outage = True
        return original(scaleset_id, params)

    garm.update_scaleset = update_then_die  # type: ignore[method-assign]

    with pytest.raises(GarmUnreachable):
        run(garm, [make_spec("a"), make_spec("b")])

    assert [c[0] for c in garm.calls].count("create_scaleset") == 1


def test_duplicate_names_first_wins_and_warns_only_when_different():
    """Arrange: two identical specs, then two that differ. Act: a pass each.

    Assert: one scale set; no warning for identical duplicates; a warning for different ones.
    """
    garm = MemoryGarm()

    same = run(garm, [make_spec(), make_spec()])
    different = run(MemoryGarm(), [make_spec(), make_spec(max_runners=9)])

    assert same.warnings == []
    assert len(same.specs) == 1
    assert any("more than once" in w for w in different.warnings)
    assert len(garm.names()) == 1


def test_orphans_swept_only_when_the_desired_state_is_complete():
    """Arrange: a charm-made scale set whose spec is gone, and a hand-made one.

    Act: a pass with sweep_orphans=False, then passes with True.
    Assert: nothing touched without the sweep; with it the orphan goes, the hand-made stays.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])
    hand = garm.create_scaleset(
        make_spec().entity.kind,
        "c35919a8-8f26-4fc5-ba84-a7386cbd45c8",
        dataclasses.replace(desired_create(make_spec("hand"), "hand"), enabled=True),
    )
    garm.calls.clear()

    kept = run(garm, [], sweep_orphans=False)
    assert garm.writes() == []
    assert kept.orphans_kept == [live_name(make_spec("gone"))]

    run(garm, [], sweep_orphans=True)
    garm.advance(1)
    run(garm, [], sweep_orphans=True)
    assert garm.names() == {"hand"}
    assert all(c[1][0] != hand.id for c in garm.writes())


def test_report_counts_the_scale_sets_left_on_each_provider():
    """Arrange: `gone` served on provider `old`; its spec goes and `small` on `lxd` comes.

    Act: the pass that creates `small` and retires `gone`, then the pass that deletes `gone`.
    Assert: each report counts what GARM holds after its pass: the created scale set at once,
    the deleted one no more.
    """
    garm = MemoryGarm(providers=("lxd", "old"))
    converge(garm, [make_spec("gone", provider_name="old")])

    swapped = run(garm, [make_spec()])
    garm.advance(1)
    swept = run(garm, [make_spec()])

    assert swapped.provider_scalesets == {"old": 1, "lxd": 1}
    assert swept.provider_scalesets == {"lxd": 1}
    assert garm.names() == {live_name(make_spec())}


def test_live_scale_set_without_marker_is_adopted_not_recreated():
    """Arrange: the live name exists without a marker (the charm died after create).

    Act: a pass. Assert: no create; one update writes the marker (and hidden fields).
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    garm.rows[garm.by_name(live_name(make_spec())).id].extended_state = ""
    garm.calls.clear()

    run(garm, [make_spec()])

    assert [c[0] for c in garm.writes()] == ["update_scaleset"]
    assert marker_of(garm, live_name(make_spec())).logical == "small"
    assert run(garm, [make_spec()]).writes == 0


def test_status_names_two_changeovers_then_counts_the_rest():
    """Arrange: four specs converged, then all change labels. Act: a pass.

    Assert: the status names two and says +2 more.
    """
    garm = MemoryGarm()
    names = ["a", "b", "c", "d"]
    converge(garm, [make_spec(n) for n in names])

    report = run(garm, [make_spec(n, labels=NEW_LABELS) for n in names])

    assert status_message(report) == (
        "'a' labels changing: starting new scale set, "
        "'b' labels changing: starting new scale set, +2 more"
    )


def test_several_predecessors_are_one_status_entry():
    """Arrange: x64 -> gpu -> arm quickly, with jobs on both older generations.

    Act: passes past the grace. Assert: one status entry counting both runners.
    """
    garm = MemoryGarm()
    old, middle = changeover_started(garm)
    garm.start_job_when_ready(garm.by_name(old).id)
    garm.start_job_when_ready(garm.by_name(middle).id)
    run(garm, [make_spec(labels=("arm64",))])
    garm.advance(60)
    run(garm, [make_spec(labels=("arm64",))])
    garm.advance(1)

    report = run(garm, [make_spec(labels=("arm64",))])

    assert status_message(report) == (
        "'small' labels changing: draining 2 runners (deadline 05:52 UTC)"
    )
    assert len(report.spec("small").predecessors) == 2


def test_settings_default_to_a_minute_of_grace_and_seven_hours_of_drain():
    """Arrange: nothing. Act: build the settings with no arguments.

    Assert: 60 s grace, 7 h drain (GitHub's 6 h job limit + 1), 30 min without a runner
    before blocking, 15 min before another label attempt, names up to 10 characters (what
    the OpenStack provider's server tags leave, garm-behaviour B46).
    """
    defaults = ReconcileSettings()

    assert defaults.handover_grace == datetime.timedelta(seconds=60)
    assert defaults.drain_timeout == datetime.timedelta(hours=7)
    assert defaults.handover_timeout == datetime.timedelta(minutes=30)
    assert defaults.label_retry == datetime.timedelta(minutes=15)
    assert defaults.name_budget == 10


def test_retired_generation_keeps_draining_while_a_newer_one_is_created():
    """Arrange: x64 -> gpu handed over, the x64 generation retired and empty.

    Act: change to arm64 and run one pass. Assert: the arm64 scale set is created, the retired
    x64 generation is deleted in the same pass, and the serving gpu one is left alone.
    """
    garm = MemoryGarm()
    old, middle = changeover_started(garm)
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.keep_deletes = True
    garm.advance(1)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.keep_deletes = False
    garm.advance(60)  # the kept delete is retried a minute later

    report = run(garm, [make_spec(labels=("arm64",))])

    assert garm.names() == {middle, live_name(make_spec(labels=("arm64",)))}
    assert garm.by_name(middle).enabled
    assert report.spec("small").phase is Phase.CREATING
    assert old not in garm.names()


def test_each_report_counts_the_calls_and_writes_its_pass_made():
    """Arrange: a changeover whose job is forced off at the drain deadline.

    Act: passes from the first create until the old set is gone (creates, updates, a forced
    remove, deletes, the first of them kept by GARM: B15).

    Assert: every report's `requests` and `writes` are the calls and writes GARM saw in its
    pass (reads included, refused calls included).
    """
    garm = MemoryGarm()
    specs = [make_spec(min_idle_runners=1)]
    changed = [make_spec(labels=NEW_LABELS, min_idle_runners=1)]
    counted: list[tuple[int, int]] = []
    seen: list[tuple[int, int]] = []

    def counted_run(wanted: list[ScalesetSpec]) -> None:
        calls, writes = len(garm.calls), len(garm.writes())
        report = run(garm, wanted)
        counted.append((report.requests, report.writes))
        seen.append((len(garm.calls) - calls, len(garm.writes()) - writes))

    counted_run(specs)
    garm.advance(61)
    counted_run(specs)
    assert garm.start_job_when_ready(garm.by_name(live_name(specs[0])).id) is not None
    for _ in range(3):
        counted_run(changed)
        garm.advance(61)
    garm.advance(7 * 3600)
    garm.keep_deletes = True
    for _ in range(4):
        counted_run(changed)
        garm.advance(61)
        garm.keep_deletes = False
    garm.advance(3600)
    counted_run(changed)

    assert counted == seen
    assert any(c[0] == "delete_instance" for c in garm.writes())
    assert any(c[0] == "delete_scaleset" for c in garm.writes())
    assert live_name(specs[0]) not in garm.names()


# --- Found by mutation testing (mutmut): the executor's rarer paths ---
# (was test_scaleset_reconciler_edges.py)
# The scale-set reconciler's less common paths, against the in-memory GARM.
#
# Refusals in the middle of a pass, deletes GARM keeps, unconfigured scale sets, templates,
# names GitHub still holds, the log, and the read-only preview: each pinned by what GARM was
# asked and what the report and status say.


REFUSED = "HTTP 400 refused: fault injected by the test"


def retired(garm: MemoryGarm) -> tuple[str, str]:
    """Converge `small`, change its labels, hand over; return (old, new) scale-set names."""
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    return live_name(make_spec()), live_name(make_spec(labels=NEW_LABELS))


def orphaned(garm: MemoryGarm) -> str:
    """Converge `gone`, then drop its spec and retire it; return its scale set's name."""
    converge(garm, [make_spec("gone")])
    run(garm, [])
    garm.advance(1)
    return live_name(make_spec("gone"))


def counted_pass(garm: MemoryGarm, specs: list[ScalesetSpec]) -> ReconcileReport:
    """One pass whose report must count exactly the calls and writes GARM saw."""
    calls, writes = len(garm.calls), len(garm.writes())
    report = run(garm, specs)
    assert (report.requests, report.writes) == (
        len(garm.calls) - calls,
        len(garm.writes()) - writes,
    )
    return report


def at(moment: datetime.datetime) -> str:
    """The retry time as the error text writes it."""
    return f"{moment:%H:%M:%S} UTC"


# Refusals within a pass -------------------------------------------------------------------


def test_one_owners_refusal_skips_only_its_own_later_actions():
    """Arrange: `a` past its grace with its live set's image changed too, `b` changed as well.

    Act: a pass in which GARM refuses the first update (the image of `a`'s live set).
    Assert: `a`'s later action (retiring its old set) is not sent; `b`'s update is; the error
    is `a`'s message and phase.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("a"), make_spec("b")])
    run(garm, [make_spec("a", labels=NEW_LABELS), make_spec("b")])
    garm.advance(60)
    garm.refuse("update_scaleset", 400)
    garm.calls.clear()
    live_a = live_name(make_spec("a", labels=NEW_LABELS))

    report = run(
        garm,
        [make_spec("a", labels=NEW_LABELS, image="ubuntu:24.04"), make_spec("b", max_runners=5)],
    )

    ids = [call[1][0] for call in garm.writes()]
    assert ids == [garm.by_name(live_a).id, garm.by_name(live_name(make_spec("b"))).id]
    assert garm.by_name(live_name(make_spec("a"))).enabled
    assert garm.by_name(live_name(make_spec("b"))).max_runners == 5
    spec = report.spec("a")
    assert spec.phase is Phase.ERROR
    assert spec.message == f"updating {live_a!r}: update_scaleset: {REFUSED}"
    assert spec.errors == [spec.message]
    assert report.spec("b").phase is Phase.ACTIVE


def test_a_refused_forced_removal_does_not_stop_the_next():
    """Arrange: two jobs on a retired set at its drain deadline; GARM refuses the first remove.

    Act: a pass. Assert: the second runner is still removed, forced; the refusal is reported
    as a Blocked failure; the report counts both removes as writes.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    old = live_name(make_spec())
    row = garm.rows[garm.by_name(old).id]
    row.desired_runner_count = 1  # GitHub's queue holds a second job
    jobs = [garm.start_job_when_ready(row.id) for _ in range(2)]
    row.desired_runner_count = 0
    assert None not in jobs
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(7 * 3600)
    garm.refuse("delete_instance", 400)

    report = counted_pass(garm, [make_spec(labels=NEW_LABELS)])

    assert [call[1] for call in garm.writes()[-2:]] == [(jobs[0], True), (jobs[1], True)]
    assert garm.runners[str(jobs[1])].status == "pending_force_delete"
    assert report.writes == 2
    assert report.failures == [Failure("small", "remove a runner of", 400)]
    assert report.spec("small").errors == [
        f"removing runner {jobs[0]!r} of {old!r}: delete_instance: {REFUSED}"
    ]
    assert blocked_message(report) == (
        "GARM refused to remove a runner of 'small' (HTTP 400): see juju debug-log"
    )


class GentleByDefault(MemoryGarm):
    """A GARM client whose removal is not forced unless asked (GARM's own default)."""

    def delete_instance(self, name: str, *, force: bool = False) -> None:
        """DELETE /instances/{name}, forceRemove only when asked."""
        super().delete_instance(name, force=force)


def test_a_removal_at_the_drain_deadline_asks_for_force_itself():
    """Arrange: a job on a retired set at its deadline, a client that forces only when asked.

    Act: a pass. Assert: the remove was sent with force (a job runs on it: only a forced
    removal takes it, garm-behaviour B18).
    """
    garm = GentleByDefault()
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    job = garm.start_job_when_ready(garm.by_name(live_name(make_spec())).id)
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(7 * 3600)

    run(garm, [make_spec(labels=NEW_LABELS)])

    assert ("delete_instance", (job, True)) in garm.calls
    assert garm.runners[str(job)].status == "pending_force_delete"


def test_every_write_of_a_busy_pass_is_counted():
    """Arrange: an empty GARM. Act: a pass creating three scale sets, one with a template.

    Assert: the report counts each create and marker update, and the template listing.
    """
    garm = MemoryGarm()
    garm.templates.append({"id": 7, "name": "mine", "os_type": "linux", "owner_id": "admin"})

    report = counted_pass(
        garm, [make_spec("a"), make_spec("b", template_name="mine"), make_spec("c")]
    )

    assert report.writes == 6
    assert [call[0] for call in garm.calls].count("list_templates") == 1


def test_two_deletes_in_one_pass_are_counted():
    """Arrange: two unconfigured scale sets, retired. Act: the pass deleting both.

    Assert: both are gone and the report counts both deletes.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("x"), make_spec("y")])
    run(garm, [])
    garm.advance(1)

    report = counted_pass(garm, [])

    assert garm.names() == set()
    assert report.writes == 2
    assert report.orphans == []


# Deletes GARM keeps (garm-behaviour B15) ---------------------------------------------------


def test_each_kept_delete_is_an_error_saying_when_the_next_is_sent():
    """Arrange: a retired, empty old set; GARM answers deletes but keeps the scale set.

    Act: the pass that deletes it, then the passes at each retry (1, then 2 minutes later).
    Assert: each error says when the next delete is sent; the third says how many in a row and
    what to check; the marker counts them.
    """
    garm = MemoryGarm()
    old, _ = retired(garm)
    garm.keep_deletes = True
    texts: list[list[str]] = []
    retries: list[datetime.datetime] = []
    for wait, backoff in ((1, 1), (60, 2), (120, 4)):
        garm.advance(wait)
        report = run(garm, [make_spec(labels=NEW_LABELS)])
        texts.append(report.spec("small").errors)
        retries.append(garm.now + datetime.timedelta(minutes=backoff))
        assert report.spec("small").message == report.spec("small").errors[-1]

    kept = f"GARM answered the delete of {old!r} but kept it"
    assert texts == [
        [f"{kept}; the next delete at {at(retries[0])}"],
        [f"{kept}; the next delete at {at(retries[1])}"],
        [
            f"{kept} 3 times in a row: check GARM's log (GitHub refused the delete, "
            "or dropped the set: restart garm); "
            f"the next delete at {at(retries[2])}"
        ],
    ]
    marker = parse_marker(garm.by_name(old).extended_state)
    assert marker is not None
    assert marker.delete_failures == 3


def test_a_kept_delete_that_cannot_be_recorded_is_a_refused_update():
    """Arrange: a retired, empty old set; GARM keeps the delete and refuses the next update.

    Act: the deleting pass. Assert: both the kept delete and the refused recording are the
    spec's errors; the refusal is a Blocked failure of an update of `small`.
    """
    garm = MemoryGarm()
    old, _ = retired(garm)
    garm.keep_deletes = True
    garm.advance(1)
    garm.refuse("update_scaleset", 400)

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    retry_at = garm.now + datetime.timedelta(minutes=1)
    assert report.spec("small").errors == [
        f"GARM answered the delete of {old!r} but kept it; the next delete at {at(retry_at)}",
        f"recording the failed delete of {old!r}: update_scaleset: {REFUSED}",
    ]
    assert report.failures == [Failure("small", "update", 400)]
    assert blocked_message(report) == (
        "GARM refused to update 'small' (HTTP 400): see juju debug-log"
    )
    assert report.spec("small").predecessors[0].delete_failures == 1


def test_a_deleted_predecessor_leaves_the_report_while_the_live_set_is_recreated():
    """Arrange: the old set retired and empty; the new live set deleted by hand in GARM.

    Act: a pass. Assert: the live set is created again and the old one deleted in the same
    pass; the spec is still creating, with no predecessor left.
    """
    garm = MemoryGarm()
    old, new = retired(garm)
    del garm.rows[garm.by_name(new).id]
    garm.advance(1)

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert garm.names() == {new}
    spec = report.spec("small")
    assert spec.phase is Phase.CREATING
    assert spec.predecessors == []
    assert status_message(report) == "'small': creating"
    assert old not in garm.names()


# Unconfigured scale sets (orphans) -----------------------------------------------------------


def test_a_deleted_orphan_leaves_the_report_with_a_warning():
    """Arrange: an unconfigured scale set, retired and empty. Act: the deleting pass.

    Assert: gone from GARM and from the report's orphans; one warning naming it; converged.
    """
    garm = MemoryGarm()
    name = orphaned(garm)

    report = run(garm, [])

    assert garm.names() == set()
    assert report.orphans == []
    assert report.warnings == [f"deleted unconfigured scale set {name!r}"]
    assert report.converged


def test_a_kept_orphan_delete_is_counted_on_the_orphan_and_waits():
    """Arrange: an unconfigured scale set, retired and empty; GARM keeps deletes.

    Act: the deleting pass. Assert: the orphan is in error with one kept delete and the retry
    time; the error is the pass's; the Waiting text names it with the retry time.
    """
    garm = MemoryGarm()
    name = orphaned(garm)
    garm.keep_deletes = True

    report = run(garm, [])

    retry_at = garm.now + datetime.timedelta(minutes=1)
    (orphan,) = report.orphans
    assert (orphan.phase, orphan.delete_failures, orphan.delete_retry_at) == (
        Phase.ERROR,
        1,
        retry_at,
    )
    assert report.errors == [
        f"GARM answered the delete of {name!r} but kept it; the next delete at {at(retry_at)}"
    ]
    assert retry_message(report) == (
        f"GARM kept the old scale set of {short_name(name)} after a delete; "
        f"retrying at {retry_at:%H:%M} UTC"
    )


def test_a_refused_orphan_retirement_names_the_scale_set():
    """Arrange: an unconfigured scale set; GARM refuses the update retiring it.

    Act: the sweeping pass. Assert: the orphan is in error; the pass's error and the Blocked
    failure name the scale set itself (it has no spec).
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])
    name = live_name(make_spec("gone"))
    garm.refuse("update_scaleset", 400)

    report = run(garm, [])

    assert report.orphans[0].phase is Phase.ERROR
    assert report.errors == [f"updating {name!r}: update_scaleset: {REFUSED}"]
    assert report.failures == [Failure(name, "update", 400)]
    assert blocked_message(report) == (
        f"GARM refused to update {short_name(name)} (HTTP 400): see juju debug-log"
    )
    assert garm.by_name(name).enabled


def test_a_retired_orphans_runners_are_listed_so_it_drains():
    """Arrange: an unconfigured scale set with a job, retired; only the sweep needs runners.

    Act: a pass. Assert: the orphan drains (its runner counted); no delete was sent.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])
    name = live_name(make_spec("gone"))
    assert garm.start_job_when_ready(garm.by_name(name).id) is not None
    run(garm, [])
    garm.advance(1)

    report = run(garm, [])

    (orphan,) = report.orphans
    assert (orphan.phase, orphan.runners) == (Phase.DRAINING, 1)
    assert "delete_scaleset" not in [call[0] for call in garm.calls]
    assert status_message(report) == "removing 1 unconfigured scale set (1 runner draining)"


# Templates -----------------------------------------------------------------------------------


class ForgeTemplates(MemoryGarm):
    """Lists each template with its own forge type (absent when empty: GARM's `omitempty`)."""

    def list_templates(self, os_type: str | None = None) -> list[Template]:
        """GET /templates, each with the forge type its entry in `templates` has."""
        forge = {t["id"]: t.get("forge_type", "github") for t in self.templates}
        return [
            dataclasses.replace(t, forge_type=forge[t.id]) for t in super().list_templates(os_type)
        ]


@pytest.mark.parametrize(("forge", "template_id"), [("github", 7), ("", 7), ("gitea", None)])
def test_a_new_scale_set_gets_its_named_template_of_githubs_forge(
    forge: str, template_id: int | None
):
    """Arrange: a template `mine` of forge `forge`. Act: a pass creating a spec naming it.

    Assert: created with its id when the template is GitHub's (or has no forge type);
    otherwise nothing is created and the error names the template and the OS.
    """
    garm = ForgeTemplates()
    garm.templates.append(
        {"id": 7, "name": "mine", "os_type": "linux", "owner_id": "admin", "forge_type": forge}
    )
    spec = make_spec(template_name="mine")

    report = run(garm, [spec])

    if template_id is None:
        assert garm.names() == set()
        assert report.spec("small").errors == [
            f"creating {live_name(spec)!r}: template 'mine' (linux) does not exist in GARM"
        ]
    else:
        assert garm.rows[garm.by_name(live_name(spec)).id].template_id == template_id
        assert report.spec("small").errors == []


def test_naming_a_missing_template_later_is_an_error_and_changes_nothing():
    """Arrange: a converged spec. Act: a pass naming a template GARM lacks.

    Assert: no update sent; the error names the template and the OS.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    garm.calls.clear()

    report = run(garm, [make_spec(template_name="nope")])

    assert garm.writes() == []
    assert report.spec("small").errors == [
        f"updating {live_name(make_spec())!r}: template 'nope' (linux) does not exist in GARM"
    ]


# Names GitHub still holds ----------------------------------------------------------------------


class GithubAnswers400(MemoryGarm):
    """GitHub answers 400 for a name it holds; GARM passes it on (garm-behaviour B25)."""

    def create_scaleset(self, kind: Any, entity_id: str, params: ScaleSetCreate) -> ScaleSet:
        """POST /{entity}/{id}/scalesets, a 400 with GitHub's body for a leftover name."""
        if params.name in self.github_leftovers:
            self._enter("create_scaleset", kind, entity_id, params)
            raise GarmBadRequest(
                "create scale set",
                400,
                "Bad Request",
                f'bad request while calling github: "scale set {params.name} already exists"',
            )
        return super().create_scaleset(kind, entity_id, params)


@pytest.mark.parametrize("garm_type", [MemoryGarm, GithubAnswers400])
def test_the_last_spare_name_is_used_when_github_holds_the_others(garm_type: type[MemoryGarm]):
    """Arrange: GitHub holds the first three names (answered 409, or 400 with its message).

    Act: a pass. Assert: created under the fourth name; each leftover is reported, with a
    warning saying where to delete it.
    """
    garm = garm_type()
    spec = make_spec()
    names = [live_name(spec, attempt=n) for n in range(4)]
    garm.github_leftovers = set(names[:3])

    report = run(garm, [spec])

    assert garm.names() == {names[3]}
    small = report.spec("small")
    assert small.leftovers == names[:3]
    assert small.live_name == names[3]
    assert small.warnings[0] == (
        f"GitHub still holds a runner scale set named {names[0]!r} that GARM does not know; "
        f"creating {names[1]!r} instead: delete the leftover at GitHub (repository or "
        "organization settings, Actions, Runner groups) when no job uses it"
    )
    assert small.errors == []


def test_a_conflict_without_already_exists_is_refused_not_retried():
    """Arrange: GARM answers 409 with another message to the create. Act: a pass.

    Assert: no other name is tried; the refusal is reported.
    """
    garm = MemoryGarm()
    garm.refuse("create_scaleset", 409)

    report = run(garm, [make_spec()])

    assert [call[0] for call in garm.calls].count("create_scaleset") == 1
    assert report.failures == [Failure("small", "create", 409)]


# The log ---------------------------------------------------------------------------------------


def test_errors_and_warnings_of_a_pass_are_logged_with_the_spec(caplog: pytest.LogCaptureFixture):
    """Arrange: GARM refuses `a`'s create; `b` names a provider GARM lacks. Act: a pass.

    Assert: one warning line each, naming the spec and saying what happened.
    """
    garm = MemoryGarm()
    garm.refuse("create_scaleset", 400)
    caplog.set_level(logging.WARNING, logger="scaleset_reconciler")

    run(garm, [make_spec("a"), make_spec("b", provider_name="nope")])

    logged = [r.getMessage() for r in caplog.records if r.name == "scaleset_reconciler.executor"]
    assert logged == [
        f"scale sets: 'a': creating {live_name(make_spec('a'))!r}: create_scaleset: {REFUSED}",
        "scale sets: 'b': provider 'nope' is not configured in GARM yet",
    ]


# The preview (list-scalesets) ---------------------------------------------------------------


def test_the_preview_plans_with_the_given_settings_and_writes_nothing():
    """Arrange: labels changed 2 minutes ago; a retired unconfigured set with a job.

    Act: preview with a 10-minute grace, sweeping. Assert: the new set serves in 8 minutes
    (not the default minute); the orphan drains its runner; the scale sets are counted per
    provider; nothing was written.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(), make_spec("gone")])
    gone = live_name(make_spec("gone"))
    assert garm.start_job_when_ready(garm.by_name(gone).id) is not None
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(120)
    garm.calls.clear()
    settings = dataclasses.replace(SETTINGS, handover_grace=datetime.timedelta(minutes=10))

    report = preview(
        garm, [make_spec(labels=NEW_LABELS)], now=garm.now, settings=settings, sweep_orphans=True
    )

    assert garm.writes() == []
    assert report.spec("small").serves_in == pytest.approx(480)
    (orphan,) = report.orphans
    assert (orphan.name, orphan.phase, orphan.runners) == (gone, Phase.DRAINING, 1)
    assert report.provider_scalesets == {"lxd": 3}


def test_the_preview_keeps_orphans_when_the_desired_state_is_incomplete():
    """Arrange: an unconfigured scale set. Act: preview without sweeping.

    Assert: the orphan is listed as kept, not planned.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])

    report = preview(garm, [], now=garm.now, settings=ReconcileSettings(), sweep_orphans=False)

    assert report.orphans == []
    assert report.orphans_kept == [live_name(make_spec("gone"))]
