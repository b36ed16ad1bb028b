"""The min-idle-schedule window in force, in the `juju status` text (at most 120 characters)."""

from __future__ import annotations

import dataclasses

import pytest

from reconcile.schedule_status import schedule_message, with_schedule
from status_text import STATUS_LIMIT
from unit.walks.scalesets import make_spec

OFFICE = "Mon-Fri 08:00-18:00 Europe/Berlin"
LONG = "a-very-long-scale-set-name-for-the-gpu-runners-of-the-platform-team-x"


def scheduled(name: str, min_idle: int, window: str):
    """A spec whose configurator's schedule put `min_idle` in force through `window`."""
    return dataclasses.replace(make_spec(name), min_idle_runners=min_idle, min_idle_window=window)


def test_a_window_in_force_is_named_under_active():
    """Arrange: `small` at 6 by the office-hours window; nothing else to say.

    Act: build the Active text.

    Assert: it names the scale set, its min idle and the window.
    """
    text = with_schedule("", [scheduled("small", 6, OFFICE)])

    assert text == f"scheduled: 'small' min idle 6 ({OFFICE})"


@pytest.mark.parametrize("window", ["", "default"])
def test_no_schedule_or_outside_every_window_says_nothing(window: str):
    """Arrange: a spec without a schedule, or outside every window. Act: build the text.

    Assert: the Active text is unchanged (empty).
    """
    assert with_schedule("", [scheduled("small", 1, window)]) == ""


def test_the_schedule_follows_a_refresh_text_when_both_fit():
    """Arrange: a refresh under way and a window in force. Act: build the text.

    Assert: the refresh first, then the window, joined by `; `.
    """
    refreshing = "'small': refreshing 2 outdated runners"

    text = with_schedule(refreshing, [scheduled("small", 6, OFFICE)])

    assert text == f"{refreshing}; scheduled: 'small' min idle 6 ({OFFICE})"


def test_the_schedule_is_left_out_rather_than_cut_when_it_does_not_fit():
    """Arrange: a changeover text of 100 characters and a window in force. Act: build the text.

    Assert: only the changeover text: the schedule is dropped whole, nothing is cut.
    """
    busy = "x" * 100

    assert with_schedule(busy, [scheduled("small", 6, OFFICE)]) == busy


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_many_long_names_and_windows_fit_and_count_the_rest(count: int):
    """Arrange: `count` specs with long names and long window texts, each in force.

    Act: build the schedule text.

    Assert: at most 120 characters; beyond what fits (at most two named), `+N more`.
    """
    window = "Mon,Tue,Wed,Thu,Fri 07:30-19:45 America/Argentina/ComodRivadavia"
    specs = [scheduled(f"{LONG}-{n}", 40, window) for n in range(count)]

    text = schedule_message(specs)

    assert text.startswith("scheduled: ")
    assert len(text) <= STATUS_LIMIT
    if count > 1:
        assert text.endswith("more")
