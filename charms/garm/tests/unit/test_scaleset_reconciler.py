"""The scale-set changeover, phase by phase, against the in-memory GARM."""

from __future__ import annotations

import dataclasses
import datetime

import pytest
from scaleset_fixtures import ORG, converge, make_spec, run

from doubles.memory_garm import CONSOLIDATION_SECONDS, MemoryGarm
from garm_api import GarmUnreachable
from garm_api.models import ScaleSetUpdate
from scaleset_reconciler import (
    Phase,
    ReconcileReport,
    ReconcileSettings,
    blocked_message,
    retry_message,
    status_message,
)
from scaleset_reconciler.marker import Marker, parse_marker
from scaleset_reconciler.naming import live_name, spec_generation
from scaleset_reconciler.prepare import desired_create
from scaleset_reconciler.spec import ScalesetSpec

NEW_LABELS = ("x64", "gpu")


def marker_of(garm: MemoryGarm, name: str) -> Marker:
    """The charm's marker on the scale set `name`."""
    marker = parse_marker(garm.by_name(name).extended_state)
    assert marker is not None
    return marker


def changeover_started(garm: MemoryGarm) -> tuple[str, str]:
    """Converge `small`, change its labels, run the creating pass; return (old, new) names."""
    converge(garm, [make_spec()])
    old = live_name(make_spec())
    run(garm, [make_spec(labels=NEW_LABELS)])
    return old, live_name(make_spec(labels=NEW_LABELS))


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
