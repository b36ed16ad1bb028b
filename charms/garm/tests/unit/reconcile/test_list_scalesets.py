"""The list-scalesets action's content (garm_objects.list_scalesets) against the in-memory GARM."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from doubles.memory_garm import REPO_ID, MemoryGarm
from reconcile.desired_state import DesiredState
from reconcile.garm_objects import ScalesetListing, list_scalesets
from scaleset_reconciler import ReconcileSettings
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.prepare import desired_create
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

NEW_LABELS = ("x64", "gpu")


def listing(
    garm: MemoryGarm, *specs: Any, settings: ReconcileSettings = SETTINGS
) -> list[dict[str, Any]]:
    """The action's `changeovers` at GARM's time."""
    return whole_listing(garm, *specs, settings=settings).changeovers


def whole_listing(
    garm: MemoryGarm, *specs: Any, settings: ReconcileSettings = SETTINGS
) -> ScalesetListing:
    """The action's whole listing at GARM's time."""
    desired = DesiredState(specs=specs)
    return list_scalesets(
        garm,  # pyright: ignore[reportArgumentType] - the scale-set calls are all it makes
        desired,
        now=garm.now,
        settings=settings,
    )


def test_each_queued_changeover_shows_its_place_in_the_queue():
    """Arrange: 3 sets of min idle 1 converged; budget 1; all relabelled, one pass.

    Act: list. Assert: 'a' in flight (no place), 'b' and 'c' queued 1st and 2nd; the summary.
    """
    garm = MemoryGarm()
    names = ("a", "b", "c")
    converge(garm, [make_spec(n, min_idle_runners=1) for n in names])
    settings = dataclasses.replace(SETTINGS, changeover_surge=1)
    changed = [make_spec(n, NEW_LABELS, min_idle_runners=1) for n in names]
    run(garm, changed, settings=settings)

    listed = whole_listing(garm, *changed, settings=settings)

    places = {c["scaleset"]: (c["phase"], c["queue-position"]) for c in listed.changeovers}
    assert places == {"a": ("creating", None), "b": ("queued", 1), "c": ("queued", 2)}
    assert listed.surge == {"budget": 1, "held": 1, "in-flight": 1, "queued": 2}


def test_a_draining_changeover_shows_each_generation_and_an_absolute_deadline():
    """Arrange: `small` with one idle runner, a job on it; labels changed; old one retired.

    Act: list.
    Assert: the drain deadline is an absolute UTC time (retired-at + 7 h); the generations are
    the live one (new labels, enabled) and the old one (old labels, disabled, 1 busy runner,
    draining, with the deadline).
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])
    old = next(iter(garm.rows.values()))
    assert garm.start_job_when_ready(old.id) is not None
    changed = make_spec(labels=NEW_LABELS, min_idle_runners=1)
    run(garm, [changed])
    garm.advance(61)
    garm.tick()  # the new set's idle runner comes online
    retired_at = garm.now
    run(garm, [changed])

    (small,) = listing(garm, changed)

    deadline = (retired_at + datetime.timedelta(hours=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert small["phase"] == "draining"
    assert small["deadline"] == deadline
    live, previous = small["generations"]
    assert live["name"] == live_name(changed)
    assert live["labels"] == ["gpu", "x64"]
    assert live["enabled"] is True
    assert previous == {
        "name": live_name(make_spec()),
        "phase": "draining",
        "labels": ["linux", "x64"],
        "enabled": False,
        "runners": {"idle": 0, "busy": 1},
        "deadline": deadline,
    }


def test_waiting_for_the_grace_says_when_the_new_set_serves():
    """Arrange: labels changed 20 s ago. Act: list.

    Assert: `serves-in` is 40 s; the old generation still serves (phase active, enabled).
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(20)

    (small,) = listing(garm, make_spec(labels=NEW_LABELS))

    assert small["serves-in"] == 40
    assert small["deadline"] is None
    assert [(g["phase"], g["enabled"]) for g in small["generations"]] == [
        ("creating", True),
        ("active", True),
    ]


def test_each_row_names_its_logical_name_and_configurator_from_the_marker():
    """Arrange: `small` of configurator `cfg-small` converged, and a hand-made scale set.

    Act: list. Assert: the charm's row names `small` and `cfg-small` beside its 10-character
    live name; the hand-made one's are null.
    """
    garm = MemoryGarm()
    spec = make_spec(application="cfg-small")
    converge(garm, [spec])
    garm.create_scaleset(spec.entity.kind, REPO_ID, desired_create(make_spec("hand"), "hand-made"))
    desired = DesiredState(specs=(spec,))

    rows = list_scalesets(
        garm,  # pyright: ignore[reportArgumentType] - the scale-set calls are all it makes
        desired,
        now=garm.now,
        settings=SETTINGS,
    ).scalesets

    owners = {row["name"]: (row["scaleset"], row["application"]) for row in rows}
    assert owners == {live_name(spec): ("small", "cfg-small"), "hand-made": (None, None)}
    assert len(live_name(spec)) == 10
