"""Hypothesis: a teardown keeps hand-made scale sets and jobs, and empties the charm's (ADR 0036).

Whatever GARM holds, a teardown never touches a hand-made scale set, never stops a job, and
leaves none of the charm's scale sets once no runner has a job.

GARM is the in-memory double with GARM's rules (refuses to delete a set with runners or an
enabled one, refuses an unforced removal of a busy runner as GitHub does, B32); its worker runs
between passes, and jobs end at random.
"""

from __future__ import annotations

import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doubles.memory_garm import REPO_ID, MemoryGarm
from garm_api import EntityKind, ScaleSetCreate, ScaleSetUpdate
from reconcile.teardown import teardown_pass
from scaleset_reconciler.marker import Marker

# One scale set: (charm's marker?, min idle runners, jobs started on it).
SCALESET = st.tuples(st.booleans(), st.integers(0, 2), st.integers(0, 2))


def _garm(scalesets: list[tuple[bool, int, int]]) -> tuple[MemoryGarm, set[int]]:
    """GARM holding the scale sets, runners up, jobs running; the hand-made sets' ids."""
    garm = MemoryGarm()
    hand_made: set[int] = set()
    for index, (marked, min_idle, _) in enumerate(scalesets):
        created = garm.create_scaleset(
            EntityKind.REPOSITORY,
            REPO_ID,
            ScaleSetCreate(
                name=f"set-{index}",
                provider_name="lxd",
                image="ubuntu:24.04",
                flavor="small",
                labels=("x64",),
                max_runners=3,
                min_idle_runners=min_idle,
            ),
        )
        if marked:
            marker = Marker(logical=f"set{index}", application="cfg")
            garm.update_scaleset(created.id, ScaleSetUpdate(extended_state=marker.render()))
        else:
            hand_made.add(created.id)
    for _ in range(2):
        garm.tick()
    for scaleset_id, (_, _, jobs) in zip(sorted(garm.rows), scalesets, strict=True):
        for _ in range(jobs):
            garm.start_job(scaleset_id)
    garm.calls.clear()
    return garm, hand_made


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SCALESET, min_size=1, max_size=4), st.lists(st.booleans(), max_size=6))
def test_teardown_keeps_hand_made_sets_and_jobs_and_empties_the_charms(
    scalesets: list[tuple[bool, int, int]], job_ends: list[bool]
):
    """Arrange: GARM with the charm's and hand-made scale sets, idle and busy runners.

    Act: teardown passes with GARM's worker between them; after each, maybe one job ends
    (its runner goes at GARM's consolidation); then every job ends and passes go on.

    Assert: no call names a hand-made set; no runner is force-removed, and none is removed
    while busy; once no job runs, the charm's scale sets are all gone and the report is done.
    """
    garm, hand_made = _garm(scalesets)

    for ends in [*job_ends, *([True] * 12)]:
        teardown_pass(garm, now=garm.now)
        if ends:
            busy = [r.name for r in garm.runners.values() if r.runner_status == "active"]
            if busy:
                garm.finish_job(busy[0])
        garm.advance(400)  # past GARM's consolidation: an ended job's runner goes
        garm.tick()
    report = teardown_pass(garm, now=garm.now)
    garm.tick()
    final = teardown_pass(garm, now=garm.now)

    writes = ("update_scaleset", "delete_scaleset")
    touched = {args[0] for operation, args in garm.calls if operation in writes}
    assert not touched & hand_made
    assert garm.forced == []
    assert all(removal.runner_status != "active" for removal in garm.removed)
    assert set(garm.rows) == hand_made, (report, final)
    assert final.done


def test_a_teardown_pass_retires_with_the_time_it_is_given():
    """Arrange: the charm's enabled scale set. Act: one pass at a given time.

    Assert: the set is disabled with min and max 0, its marker's `retired-at` that time.
    """
    garm, _ = _garm([(True, 1, 1)])
    at = datetime.datetime(2026, 12, 2, 5, 0, tzinfo=datetime.UTC)

    teardown_pass(garm, now=at)

    (row,) = garm.rows.values()
    assert (row.enabled, row.min_idle_runners, row.max_runners) == (False, 0, 0)
    assert f'"retired-at":"{at.isoformat().replace("+00:00", "Z")}"' in row.extended_state
