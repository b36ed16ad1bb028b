"""The relation library's min-idle schedule: windows past midnight, and the texts it refuses.

Both charms read a schedule with this code (the configurator validates it, garm applies it),
so a window counted on the wrong day, or a schedule let through past its limits, reaches GARM.
"""

from __future__ import annotations

import datetime

import pytest

from charms.garm_configurator.v0.garm_configurator import (
    MAX_RUNNERS_LIMIT,
    MAX_SCHEDULE_WINDOWS,
    parse_min_idle_schedule,
)

UTC = datetime.UTC
# 2026-12-04 is a Friday.
FRIDAY = datetime.date(2026, 12, 4)


def at(day_offset: int, hour: int) -> datetime.datetime:
    """A UTC moment `day_offset` days after the Friday, at `hour`:30."""
    day = FRIDAY + datetime.timedelta(days=day_offset)
    return datetime.datetime(day.year, day.month, day.day, hour, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (at(0, 23), 4),  # Friday night, after the start: the window is on
        (at(1, 5), 4),  # Saturday early: the Friday night window still runs
        (at(1, 6), 1),  # Saturday 06:30: past the end
        (at(1, 23), 1),  # Saturday night: Saturday is not one of the window's days
        (at(0, 5), 1),  # Friday early: Thursday had no window
        (at(0, 21), 1),  # Friday evening before the start
    ],
)
def test_a_window_past_midnight_belongs_to_the_day_it_starts(
    moment: datetime.datetime, expected: int
):
    """Arrange: `Fri 22:00-06:00 UTC=4; default=1`. Act: the min idle at `moment`.

    Assert: 4 from Friday 22:00 to Saturday 06:00, the default otherwise.
    """
    schedule = parse_min_idle_schedule("Fri 22:00-06:00 UTC=4; default=1")

    value, _ = schedule.at(moment)

    assert value == expected


WINDOW = "Mon 08:00-09:00 UTC=1"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (" ; ;", "the schedule is empty"),
        (
            ";".join([WINDOW] * (MAX_SCHEDULE_WINDOWS + 2)),
            f"at most {MAX_SCHEDULE_WINDOWS} windows",
        ),
        (
            ";".join([WINDOW] * (MAX_SCHEDULE_WINDOWS + 1)),
            f"at most {MAX_SCHEDULE_WINDOWS} windows",
        ),
        (f"Mon 08:00-09:00 UTC={MAX_RUNNERS_LIMIT + 1}", f"at most {MAX_RUNNERS_LIMIT} runners"),
        ("default=1; Mondays 8-9=2", "entry 2: expected e.g."),
    ],
    ids=["empty", "too-many-entries", "too-many-windows", "too-many-runners", "no-window-form"],
)
def test_a_schedule_past_its_limits_is_refused_naming_the_entry(text: str, words: str):
    """Arrange: a schedule past one limit. Act: parse it. Assert: ValueError saying which."""
    with pytest.raises(ValueError, match=words):
        parse_min_idle_schedule(text)


def test_the_largest_schedule_allowed_is_read():
    """Arrange: the most windows allowed, a default, the most runners allowed.

    Act: parse. Assert: every window kept; the highest value is the limit.
    """
    windows = [WINDOW] * (MAX_SCHEDULE_WINDOWS - 1)
    text = ";".join([*windows, f"Tue 08:00-09:00 UTC={MAX_RUNNERS_LIMIT}", "default=0"])

    schedule = parse_min_idle_schedule(text)

    assert len(schedule.windows) == MAX_SCHEDULE_WINDOWS
    assert schedule.highest() == MAX_RUNNERS_LIMIT
