"""Rolling refresh (ADR 0022): an in-place change reaches every idle runner, a few at a time."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from doubles.memory_garm import MemoryGarm
from garm_api.models import Instance
from reconcile.desired_state import DesiredState
from reconcile.garm_objects import list_scalesets
from scaleset_reconciler import Phase, status_message
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.refresh import plan_step
from scaleset_reconciler.refresh_request import UnknownScaleset, request_refresh
from scaleset_reconciler.spec import ScalesetSpec
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

T0 = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def _idle(garm: MemoryGarm, spec: ScalesetSpec) -> list[str]:
    return [
        r.name
        for r in garm.runners_of(live_name(spec))
        if r.status == "running" and r.runner_status == "idle"
    ]


def _settled_with_idle_runners(spec: ScalesetSpec) -> tuple[MemoryGarm, set[str]]:
    garm = MemoryGarm()
    converge(garm, [spec])
    for _ in range(3):
        garm.advance(61)
        run(garm, [spec])
    old = set(_idle(garm, spec))
    assert len(old) == spec.min_idle_runners
    return garm, old


def _roll(garm: MemoryGarm, spec: ScalesetSpec, passes: int = 20) -> list[int]:
    """Run passes a minute apart until the refresh is over; return idle counts seen."""
    seen: list[int] = []
    for _ in range(passes):
        report = run(garm, [spec])
        seen.append(len(_idle(garm, spec)))
        garm.advance(61)
        seen.append(len(_idle(garm, spec)))
        if report.spec(spec.name).phase is Phase.ACTIVE:
            break
    return seen


def test_image_change_replaces_every_idle_runner_never_below_min_idle():
    """Arrange: a settled scale set with min idle 2 and its two idle runners.

    Act: change the image, then run passes a minute apart (GARM's worker in between).

    Assert: at every point at least 2 idle runners; in the end none of the old runners is left,
    the counts are the spec's again, the marker has no `refresh-from`, and the spec is active.
    """
    spec = make_spec(min_idle_runners=2, max_runners=3)
    garm, old = _settled_with_idle_runners(spec)
    changed = dataclasses.replace(spec, image="ubuntu:24.04")

    seen = _roll(garm, changed)

    names = {r.name for r in garm.runners_of(live_name(spec))}
    row = garm.by_name(live_name(spec))
    marker = parse_marker(row.extended_state)
    assert min(seen) >= 2
    assert not names & old
    assert (row.min_idle_runners, row.max_runners, row.image) == (2, 3, "ubuntu:24.04")
    assert marker is not None
    assert marker.refresh_from is None
    assert run(garm, [changed]).writes == 0
    assert {r.name for r in garm.removed} == old
    assert garm.forced == []


def test_refresh_status_names_the_outdated_runners():
    """Arrange: a settled scale set with two idle runners. Act: change the flavor; two passes.

    Assert: the second pass (which lists the runners) says `'small': refreshing 2 outdated
    runners`, at most 120 characters, and the spec is not converged.
    """
    spec = make_spec(min_idle_runners=2, max_runners=3)
    garm, _ = _settled_with_idle_runners(spec)
    changed = dataclasses.replace(spec, flavor="large")
    run(garm, [changed])

    report = run(garm, [changed])

    assert status_message(report) == "'small': refreshing 2 outdated runners"
    assert report.spec("small").outdated_runners == 2
    assert not report.converged


def test_a_runner_with_a_job_is_never_touched_and_does_not_hold_the_refresh():
    """Arrange: a settled scale set (min idle 1); its runner takes a job.

    Act: change the image; run passes until the refresh ends.

    Assert: GARM is never asked to remove the busy runner; the refresh ends with it still
    running its job (it goes with its job), the counts back to the spec's.
    """
    spec = make_spec(min_idle_runners=1, max_runners=3)
    garm, old = _settled_with_idle_runners(spec)
    busy = garm.start_job(garm.by_name(live_name(spec)).id)
    changed = dataclasses.replace(spec, image="ubuntu:24.04")

    _roll(garm, changed)

    assert busy in old
    assert garm.runners[busy].runner_status == "active"
    assert busy not in {call[1][0] for call in garm.calls if call[0] == "delete_instance"}
    assert garm.by_name(live_name(spec)).min_idle_runners == 1


def test_min_idle_zero_still_replaces_idle_runners_one_at_a_time():
    """Arrange: a scale set with min idle 0 that has two idle runners (left from jobs queued).

    Act: change the image; one pass to start, one to act.

    Assert: the acting pass removes one runner only (surge 1), unforced.
    """
    spec = make_spec(min_idle_runners=2, max_runners=3)
    garm, _ = _settled_with_idle_runners(spec)
    changed = dataclasses.replace(spec, min_idle_runners=0, image="ubuntu:24.04")
    run(garm, [changed])
    garm.advance(61)
    before = len(garm.removed)

    run(garm, [changed])

    assert len(garm.removed) - before == 1


def test_surge_two_replaces_two_at_a_time():
    """Arrange: four idle runners (min idle 4, max 4); surge 2. Act: change the image; passes.

    Assert: no pass removes more than two; never fewer than 4 idle; the roll finishes.
    """
    spec = make_spec(min_idle_runners=4, max_runners=4)
    garm, old = _settled_with_idle_runners(spec)
    changed = dataclasses.replace(spec, image="ubuntu:24.04")
    settings = dataclasses.replace(SETTINGS, refresh_surge=2)
    per_pass: list[int] = []
    idle: list[int] = []
    for _ in range(10):
        before = len(garm.removed)
        report = run(garm, [changed], settings=settings)
        per_pass.append(len(garm.removed) - before)
        idle.append(len(_idle(garm, changed)))
        garm.advance(61)
        if report.spec("small").phase is Phase.ACTIVE:
            break

    assert max(per_pass) == 2
    assert min(idle) >= 4
    assert not {r.name for r in garm.runners_of(live_name(spec))} & old


# The pure step ---------------------------------------------------------------------------------


def _runner(name: str, created: datetime.datetime, status: str, runner_status: str) -> Instance:
    return Instance(
        id=name,
        name=name,
        status=status,
        runner_status=runner_status,
        scale_set_id=1,
        pool_id="",
        provider_name="lxd",
        provider_id=name,
        agent_id=1,
        provider_fault=b"",
        created_at=created,
        updated_at=created,
    )


def test_step_waits_while_a_replacement_boots():
    """Arrange: two old idle runners, one new one booting; min idle 0, surge 1.

    Act: plan a step; then plan again once the new one is idle.

    Assert: nothing removed while it boots (one replacement in flight is the surge); then
    exactly one (the oldest).
    """
    early, later = T0 - datetime.timedelta(hours=1), T0 + datetime.timedelta(minutes=1)
    old = [_runner("a", early, "running", "idle"), _runner("b", early, "running", "idle")]

    booting = plan_step(
        [*old, _runner("c", later, "creating", "")],
        T0,
        min_idle=0,
        surge=1,
        serving=True,
    )
    ready = plan_step(
        [*old, _runner("c", later, "running", "idle")], T0, min_idle=0, surge=1, serving=True
    )

    assert (booting.removals, booting.outdated) == ((), 2)
    assert ready.removals == ("a",)


def test_step_removes_nothing_while_not_serving_and_ends_with_only_busy_runners_left():
    """Arrange: old idle runners on a scale set mid-changeover; then only an old busy one.

    Act: plan steps.

    Assert: not serving: no removals, the refresh goes on; only busy: the refresh is over.
    """
    early = T0 - datetime.timedelta(hours=1)
    idle = [_runner("a", early, "running", "idle"), _runner("b", early, "running", "idle")]

    waiting = plan_step(idle, T0, min_idle=0, surge=1, serving=False)
    over = plan_step(
        [_runner("a", early, "running", "active")], T0, min_idle=0, surge=1, serving=True
    )

    assert (waiting.removals, waiting.refresh_from is not None) == ((), True)
    assert (over.refresh_from is not None, over.busy_outdated) == (False, 1)


def test_step_never_takes_idle_runners_below_min_idle_when_replacements_fail():
    """Arrange: two old idle runners, min idle 2; the replacement ended in `error`.

    Act: plan a step.

    Assert: nothing removed (the replacement neither boots nor serves).
    """
    early, later = T0 - datetime.timedelta(hours=1), T0 + datetime.timedelta(minutes=1)
    runners = [
        _runner("a", early, "running", "idle"),
        _runner("b", early, "running", "idle"),
        _runner("c", later, "error", "failed"),
    ]

    step = plan_step(runners, T0, min_idle=2, surge=1, serving=True)

    assert (step.removals, step.outdated) == ((), 2)


# The refresh-runners action and list-scalesets --------------------------------------------------


def test_requested_refresh_replaces_runners_with_nothing_changed_and_survives_a_restart():
    """Arrange: a settled scale set (min idle 2), nothing changed.

    Act: request a refresh of `small` (as the action does), then run passes with a fresh
    reconciler each time (nothing kept in memory between them).

    Assert: the request is in GARM's marker; every old idle runner is replaced, never fewer than
    2 idle; the refresh then ends (no `refresh-from`, counts as the spec says).
    """
    spec = make_spec(min_idle_runners=2, max_runners=3)
    garm, old = _settled_with_idle_runners(spec)

    marked = request_refresh(garm, "small", now=garm.now)
    garm.advance(1)
    seen = _roll(garm, spec)

    row = garm.by_name(live_name(spec))
    marker = parse_marker(row.extended_state)
    assert marked == ["small"]
    assert min(seen) >= 2
    assert not {r.name for r in garm.runners_of(live_name(spec))} & old
    assert marker is not None
    assert marker.refresh_from is None
    assert (row.min_idle_runners, row.max_runners) == (2, 3)


def test_a_refresh_request_for_an_unknown_name_writes_nothing():
    """Arrange: a settled scale set. Act: request a refresh of `nope`.

    Assert: UnknownScaleset naming it; GARM received no write.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    garm.calls.clear()

    with pytest.raises(UnknownScaleset, match="nope"):
        request_refresh(garm, "nope", now=garm.now)

    assert garm.writes() == []


def test_list_scalesets_shows_the_outdated_runners_of_a_refresh():
    """Arrange: a settled scale set with two idle runners; the image changed, one pass ran.

    Act: list (the action's changeovers).

    Assert: phase refreshing, refreshing true, 2 outdated runners, none busy.
    """
    spec = make_spec(min_idle_runners=2, max_runners=3)
    garm, _ = _settled_with_idle_runners(spec)
    changed = dataclasses.replace(spec, image="ubuntu:24.04")
    run(garm, [changed])

    listed = list_scalesets(
        garm,  # pyright: ignore[reportArgumentType] - the scale-set calls are all it makes
        DesiredState(specs=(changed,)),
        now=garm.now,
        settings=SETTINGS,
    )

    (small,) = listed.changeovers
    assert (small["phase"], small["refreshing"]) == ("refreshing", True)
    assert (small["outdated-runners"], small["busy-outdated-runners"]) == (2, 0)


def _refresh_with_a_replacement_up(spec: ScalesetSpec) -> tuple[MemoryGarm, ScalesetSpec]:
    """A refresh started by an image change, one replacement booted: a removal is due."""
    garm, _ = _settled_with_idle_runners(spec)
    changed = dataclasses.replace(spec, image="ubuntu:24.04")
    run(garm, [changed])
    garm.advance(61)
    run(garm, [changed])
    garm.advance(61)
    return garm, changed


def _removals(garm: MemoryGarm) -> int:
    return sum(1 for call in garm.calls if call[0] == "delete_instance")


def test_a_change_during_a_refresh_starts_it_again_before_removing_anything():
    """Arrange: a refresh under way (image change) whose next pass would remove an old runner.

    Act: that pass, once with the flavor changed as well, once without (the same arrangement).

    Assert: with the second change the pass removes nothing and the marker's `refresh-from`
    moves to this pass (every runner is outdated again, counted anew next pass); without it,
    the pass removes one old runner.
    """
    spec = make_spec(min_idle_runners=2, max_runners=3)
    garm, changed = _refresh_with_a_replacement_up(spec)
    control, _ = _refresh_with_a_replacement_up(spec)
    before, control_before = _removals(garm), _removals(control)
    first = parse_marker(garm.by_name(live_name(spec)).extended_state)

    run(garm, [dataclasses.replace(changed, flavor="large")])
    run(control, [changed])

    again = parse_marker(garm.by_name(live_name(spec)).extended_state)
    assert first is not None
    assert again is not None
    assert first.refresh_from is not None
    assert again.refresh_from is not None
    assert again.refresh_from > first.refresh_from
    assert _removals(garm) - before == 0
    assert _removals(control) - control_before == 1
