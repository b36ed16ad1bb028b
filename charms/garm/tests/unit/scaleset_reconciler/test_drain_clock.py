"""The drain clock stands still while the charm is paused (ADR 0042).

The deadline arithmetic on its own (`drain_deadline`, with Hypothesis), then a whole
changeover against the in-memory GARM: a pass at the old deadline after a pause forces
nothing, and forces at the deadline moved by the pause's length.
"""

from __future__ import annotations

import dataclasses
import datetime
import json

from hypothesis import given
from hypothesis import strategies as st

from doubles.memory_garm import MemoryGarm
from relations.peers.keys import HOLDS_KEY, PAUSED_SINCE_KEY
from relations.peers.pause import Maintenance, holds, resumed
from scaleset_reconciler import Phase
from scaleset_reconciler.drain_clock import Hold, drain_deadline
from unit.walks.scalesets import NEW_LABELS, SETTINGS, changeover_started, make_spec, run

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)


def test_a_pause_after_the_retirement_moves_the_deadline_by_its_length():
    """Arrange: retired at T0, 7 h to drain; a 2 h pause from T0+1h.

    Act: the deadline. Assert: T0 + 9 h.
    """
    assert drain_deadline(T0, 7 * HOUR, [(T0 + HOUR, T0 + 3 * HOUR)]) == T0 + 9 * HOUR


def test_only_the_part_of_a_pause_after_the_retirement_counts():
    """Arrange: a pause from T0-1h to T0+1h; one wholly before.

    Act: the deadline of a set retired at T0. Assert: moved by 1 h.
    """
    holds = [(T0 - 3 * HOUR, T0 - 2 * HOUR), (T0 - HOUR, T0 + HOUR)]

    assert drain_deadline(T0, 7 * HOUR, holds) == T0 + 8 * HOUR


def test_a_pause_after_the_clock_ran_out_moves_nothing():
    """Arrange: a pause starting after the deadline. Act: the deadline. Assert: unmoved."""
    assert drain_deadline(T0, HOUR, [(T0 + 2 * HOUR, T0 + 5 * HOUR)]) == T0 + HOUR


def test_a_second_pause_within_the_moved_deadline_moves_it_again():
    """Arrange: 1 h to drain; a 1 h pause at T0+30m, one at T0+1h45m (inside the moved deadline).

    Act: the deadline. Assert: T0 + 3 h (1 h of drain outside the two 1 h pauses).
    """
    holds = [(T0 + 1.75 * HOUR, T0 + 2.75 * HOUR), (T0 + 0.5 * HOUR, T0 + 1.5 * HOUR)]

    assert drain_deadline(T0, HOUR, holds) == T0 + 3 * HOUR


moments = st.integers(min_value=-20, max_value=40).map(lambda h: T0 + h * HOUR / 2)


@given(
    timeout=st.integers(min_value=1, max_value=20).map(lambda h: h * HOUR / 2),
    holds=st.lists(st.tuples(moments, moments).filter(lambda pair: pair[0] < pair[1]), max_size=4),
)
def test_the_deadline_is_the_drain_timeout_of_unpaused_time(
    timeout: datetime.timedelta, holds: list[Hold]
):
    """Arrange: any holds (overlapping or not) and timeout. Act: the deadline.

    Assert: the time from the retirement to the deadline outside every hold is the timeout,
    and the deadline itself is not inside a hold's interior.
    """
    deadline = drain_deadline(T0, timeout, holds)

    step = HOUR / 2
    unpaused = datetime.timedelta(0)
    moment = T0
    while moment < deadline:
        if not any(start <= moment < end for start, end in holds):
            unpaused += step
        moment += step
    assert unpaused == timeout
    assert deadline >= T0 + timeout


def retired_with_a_job() -> tuple[MemoryGarm, datetime.datetime]:
    """GARM with `small`'s old generation retired and running a job; when it retired."""
    garm = MemoryGarm()
    old, _ = changeover_started(garm)
    garm.start_job_when_ready(garm.by_name(old).id)
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    return garm, garm.now


def forced(garm: MemoryGarm) -> list[object]:
    """The forced runner removals GARM received."""
    return [call for call in garm.writes() if call[0] == "delete_instance"]


def test_without_a_hold_the_old_deadline_forces():
    """Arrange: a job on a retired scale set; no pause. Act: a pass just after 7 h.

    Assert: the runner is forced (the contrast for the test below).
    """
    garm, _ = retired_with_a_job()
    garm.advance(7 * 3600 + 1)

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert report.spec("small").phase is Phase.FORCING
    assert forced(garm) != []


def test_a_pass_after_a_pause_forces_only_at_the_moved_deadline():
    """Arrange: a job on a retired scale set; the charm paused 3 h during its drain.

    Act: a pass just after the old deadline, then one just after the moved one.
    Assert: the first forces nothing and reports the deadline moved by 3 h; the second forces.
    """
    garm, retired_at = retired_with_a_job()
    held = dataclasses.replace(SETTINGS, drain_holds=((retired_at + HOUR, retired_at + 4 * HOUR),))
    garm.advance(7 * 3600 + 1)

    after_old_deadline = run(garm, [make_spec(labels=NEW_LABELS)], settings=held)
    forced_before = forced(garm)
    garm.advance(3 * 3600)
    after_moved_deadline = run(garm, [make_spec(labels=NEW_LABELS)], settings=held)

    assert forced_before == []
    (predecessor,) = after_old_deadline.spec("small").predecessors
    assert predecessor.phase is Phase.DRAINING
    assert predecessor.deadline is not None
    assert abs(predecessor.deadline - (retired_at + 10 * HOUR)) <= datetime.timedelta(seconds=1)
    assert after_moved_deadline.spec("small").phase is Phase.FORCING


def test_resume_keeps_the_pause_as_a_hold_and_drops_old_and_unreadable_ones():
    """Arrange: peer data with a hold 40 days old, one 1 day old and two unreadable entries.

    Act: resume a pause of 2 h. Assert: the 1-day hold and the new one are kept (the pause's
    keys cleared), the held time is 2 h; unreadable entries and the old hold are gone.
    """
    now = T0
    data = {
        HOLDS_KEY: json.dumps(
            [
                [(now - 40 * DAY).isoformat(), (now - 40 * DAY + HOUR).isoformat()],
                [(now - DAY).isoformat(), (now - DAY + HOUR).isoformat()],
                ["not a time", now.isoformat()],
                [now.isoformat()],
            ]
        )
    }
    pause = Maintenance(now - 2 * HOUR)

    written, held = resumed(pause, data, now)

    assert held == 2 * HOUR
    assert written[PAUSED_SINCE_KEY] == ""
    assert holds(written, None, now) == (
        (now - DAY, now - DAY + HOUR),
        (now - 2 * HOUR, now),
    )


def test_unreadable_holds_move_no_deadline_and_a_pause_in_force_holds_until_now():
    """Arrange: garbage under the holds key; a pause in force since 1 h ago.

    Act: read the holds. Assert: only the pause so far.
    """
    pause = Maintenance(T0 - HOUR)

    assert holds({HOLDS_KEY: "{not json"}, pause, T0) == ((T0 - HOUR, T0),)
    assert holds({HOLDS_KEY: '{"a": 1}'}, None, T0) == ()
