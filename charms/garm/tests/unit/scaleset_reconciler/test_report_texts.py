"""The scale-set status texts, pinned word for word: each phase, count, boundary and cut."""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Iterator

import pytest

from scaleset_reconciler.report import (
    Failure,
    Phase,
    PredecessorReport,
    ReconcileReport,
    SpecReport,
    blocked_message,
    retry_message,
    status_message,
)
from status_text import STATUS_LIMIT, clock_time, cut, fit, short_name

DEADLINE = datetime.datetime(2026, 11, 30, 14, 5, tzinfo=datetime.UTC)


def predecessor(runners: int | None = None, delete_failures: int = 0) -> PredecessorReport:
    """An old generation of a spec, draining `runners` runners."""
    return PredecessorReport(
        "small-old", 7, Phase.DRAINING, runners=runners, delete_failures=delete_failures
    )


def active_text(spec: SpecReport) -> str:
    """The Active text for a report holding only `spec`."""
    return status_message(ReconcileReport(specs=[spec]))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (SpecReport("s", Phase.CREATING), "'s': creating"),
        (
            SpecReport("s", Phase.CREATING, predecessors=[predecessor()]),
            "'s' changing over: starting new scale set",
        ),
        (
            SpecReport(
                "s",
                Phase.CREATING,
                labels_changing=True,
                predecessors=[predecessor()],
                awaiting_runner_until=DEADLINE,
            ),
            "'s' labels changing: handing over (waiting for an idle runner of the new set until "
            "14:05 UTC)",
        ),
        (
            SpecReport("s", Phase.HANDING_OVER, predecessors=[predecessor()]),
            "'s' changing over: handing over",
        ),
        (
            SpecReport(
                "s", Phase.HANDING_OVER, labels_changing=True, predecessors=[predecessor()]
            ),
            "'s' labels changing: handing over",
        ),
        (
            SpecReport("s", Phase.DRAINING, predecessors=[predecessor(2), predecessor(None)]),
            "'s' changing over: draining 2 runners",
        ),
        (
            SpecReport("s", Phase.DRAINING, deadline=DEADLINE, predecessors=[predecessor(1)]),
            "'s' changing over: draining 1 runner (deadline 14:05 UTC)",
        ),
        (
            SpecReport("s", Phase.FORCING, predecessors=[predecessor(2)]),
            "'s' changing over: drain deadline passed, stopping 2 runners and their jobs",
        ),
        (
            SpecReport("s", Phase.FORCING, jobs_stopped=3, predecessors=[predecessor(0)]),
            "'s' changing over: drain deadline passed, stopping 3 runners and their jobs",
        ),
        (
            SpecReport("s", Phase.FORCING, jobs_stopped=1, predecessors=[predecessor(4)]),
            "'s' changing over: drain deadline passed, stopping 1 runner and its job",
        ),
        (
            SpecReport("s", Phase.DELETING, predecessors=[predecessor(0)]),
            "'s' changing over: deleting old scale set",
        ),
        (SpecReport("s", Phase.DELETING), "'s': deleting old scale set"),
    ],
)
def test_each_changeover_phase_has_its_pinned_text(spec: SpecReport, expected: str):
    """Arrange: one spec in a changeover phase. Act: the Active text.

    Assert: exactly the pinned text: the phase's words, runners counted in the right number,
    jobs stopped counted (or the runners when none were counted), the deadline when known.
    """
    text = active_text(spec)

    assert text == expected
    assert len(text) <= STATUS_LIMIT


@pytest.mark.parametrize(
    ("serves_in", "expected"),
    [
        (0.0, "1s"),
        (0.2, "1s"),
        (59.001, "60s"),
        (119.0, "119s"),
        (119.001, "2m"),
        (120.0, "2m"),
        (121.0, "3m"),
        (180.0, "3m"),
        (3599.5, "60m"),
        (3600.0, "60m"),
        (3601.0, "61m"),
    ],
)
def test_the_time_until_the_new_set_serves_is_seconds_then_whole_minutes_up(
    serves_in: float, expected: str
):
    """Arrange: a new set that serves in `serves_in` seconds. Act: the Active text.

    Assert: below two minutes whole seconds rounded up, from two minutes whole minutes rounded
    up, never "0s".
    """
    spec = SpecReport("s", Phase.CREATING, serves_in=serves_in, predecessors=[predecessor()])

    assert active_text(spec) == (f"'s' changing over: handing over (new set serves in {expected})")


@pytest.mark.parametrize(
    ("orphans", "expected"),
    [
        ([PredecessorReport("x", 1, Phase.DELETING)], "removing 1 unconfigured scale set"),
        (
            [PredecessorReport("x", 1, Phase.DRAINING, runners=3)],
            "removing 1 unconfigured scale set (3 runners draining)",
        ),
        (
            [
                PredecessorReport("x", 1, Phase.DRAINING, runners=1),
                PredecessorReport("y", 2, Phase.HANDING_OVER),
            ],
            "removing 2 unconfigured scale sets (1 runner draining)",
        ),
        (
            [PredecessorReport(n, i, Phase.DELETING, runners=0) for i, n in enumerate("xyz")],
            "removing 3 unconfigured scale sets",
        ),
    ],
)
def test_unconfigured_scale_sets_are_one_counted_entry(
    orphans: list[PredecessorReport], expected: str
):
    """Arrange: unconfigured scale sets being removed, with or without runners.

    Act: the Active text. Assert: one entry counting them in the right number, and their
    runners only when there are any (runners not yet counted count as none).
    """
    report = ReconcileReport(orphans=orphans)

    assert status_message(report) == expected


def test_the_active_text_names_two_entries_then_counts_the_rest():
    """Arrange: three creating specs and an orphan. Act: the Active text, default and limit 1.

    Assert: two entries named (one with limit 1), the rest counted; orphans come last.
    """
    report = ReconcileReport(
        specs=[SpecReport(name, Phase.CREATING) for name in "abc"],
        orphans=[PredecessorReport("x", 1, Phase.DELETING)],
    )
    alone = ReconcileReport(
        specs=[SpecReport("a", Phase.CREATING)],
        orphans=[PredecessorReport("x", 1, Phase.DELETING)],
    )

    assert status_message(report) == "'a': creating, 'b': creating, +2 more"
    assert status_message(report, limit=1) == "'a': creating, +3 more"
    assert status_message(alone) == "'a': creating, removing 1 unconfigured scale set"


def test_the_blocked_text_names_two_entries_then_counts_the_rest():
    """Arrange: three blocked specs, one with a short status for a long message.

    Act: the Blocked text, default and limit 1. Assert: entries joined by "; ", the short
    status preferred, two named (one with limit 1), the rest counted.
    """
    report = ReconcileReport(
        specs=[
            SpecReport("a", Phase.BLOCKED, message="fix a"),
            SpecReport("b", Phase.BLOCKED, message="x" * 300, status="fix b"),
            SpecReport("c", Phase.BLOCKED, message="fix c"),
            SpecReport("d", Phase.ERROR, message="not blocked"),
        ]
    )

    assert blocked_message(report) == "'a': fix a; 'b': fix b; +1 more"
    assert blocked_message(report, limit=1) == "'a': fix a; +2 more"


@pytest.mark.parametrize(
    ("failures", "retry_at", "blocked", "waiting"),
    [
        (
            1,
            None,
            "",
            "GARM kept the old scale set of 'x' after a delete; retrying",
        ),
        (
            2,
            DEADLINE,
            "",
            "GARM kept the old scale set of 'x' after a delete; retrying at 14:05 UTC",
        ),
        (
            3,
            DEADLINE,
            "GARM kept the old scale set of 'x' after 3 deletes: "
            "GitHub dropped it? restart garm, or see log",
            "",
        ),
        (
            4,
            None,
            "GARM kept the old scale set of 'x' after 4 deletes: "
            "GitHub dropped it? restart garm, or see log",
            "",
        ),
    ],
)
def test_a_kept_delete_waits_twice_then_blocks(
    failures: int, retry_at: datetime.datetime | None, blocked: str, waiting: str
):
    """Arrange: an unconfigured scale set GARM kept after `failures` deletes.

    Act: the Blocked and Waiting texts. Assert: Waiting (with the retry time when known) below
    three kept deletes, Blocked from the third on; never both.
    """
    orphan = PredecessorReport(
        "x", 1, Phase.DELETING, delete_failures=failures, delete_retry_at=retry_at
    )
    report = ReconcileReport(orphans=[orphan])

    assert blocked_message(report) == blocked
    assert retry_message(report) == waiting


def test_the_waiting_text_joins_failures_and_kept_deletes():
    """Arrange: two failures GARM may get past, and a kept delete of a spec's predecessor.

    Act: the Waiting text, default and limit 1. Assert: entries joined by "; ", failures first,
    the rest counted.
    """
    report = ReconcileReport(
        specs=[SpecReport("s", Phase.DELETING, predecessors=[predecessor(0, delete_failures=1)])],
        failures=[Failure("a", "create", 500, retry=True), Failure("b", "delete", 400)],
    )

    assert retry_message(report) == (
        "GARM failed to create 'a' (HTTP 500); retrying; "
        "GARM kept the old scale set of 's' after a delete; retrying"
    )
    assert retry_message(report, limit=1) == (
        "GARM failed to create 'a' (HTTP 500); retrying; +1 more"
    )


@pytest.mark.parametrize(
    ("entries", "most", "expected"),
    [
        (["a" * 59, "b" * 59], None, f"{'a' * 59}, {'b' * 59}"),
        (["a" * 59, "b" * 60], None, f"{'a' * 59}, +1 more"),
        (["a" * 55, "b" * 55, "c"], None, f"{'a' * 55}, +2 more"),
        (["a", "b", "c"], 2, "a, b, +1 more"),
        (["a", "b"], 2, "a, b"),
        (["a", "", "b"], 1, "a, +1 more"),
    ],
)
def test_fit_fills_exactly_to_the_limit(entries: list[str], most: int | None, expected: str):
    """Arrange: entries whose join is 120 characters, one more, or more than `most` of them.

    Act: fit them in 120 characters. Assert: a text of exactly 120 fits; the count of the rest
    is part of the length; at most `most` are named; empty entries are not counted.
    """
    text = fit(entries, ", ", most=most)

    assert text == expected
    assert len(text) <= STATUS_LIMIT


@pytest.mark.parametrize(
    ("text", "length", "expected"),
    [
        ("abc", 3, "abc"),
        ("abcd", 3, "..."),
        ("abcdefgh", 6, "abc..."),
        ("ab  cdef", 7, "ab..."),
        ("  abcdef", 6, "  a..."),
        ("abcdef", 2, "..."),
    ],
)
def test_cut_keeps_what_fits_and_drops_trailing_spaces(text: str, length: int, expected: str):
    """Arrange: a text and a length. Act: cut it.

    Assert: a text of exactly the length is kept whole; a longer one keeps its head without
    trailing spaces (leading ones stay) and ends in "..."; nothing of it when even "..." is long.
    """
    assert cut(text, length) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a" * 24, "'" + "a" * 24 + "'"),
        ("abcdefghijklmnopqrstuvwxy", "'abcdefghij...opqrstuvwxy'"),
        ("small-0123456789abcdef-0123456789", "'small-0123...-0123456789'"),
    ],
)
def test_short_name_keeps_24_characters_losing_the_middle(name: str, expected: str):
    """Arrange: a name of 24 characters, and longer ones. Act: shorten it.

    Assert: 24 characters stay whole; a longer name keeps its first 10 and last 11 around "...".
    """
    assert short_name(name) == expected


def test_a_missing_spec_is_a_key_error_naming_it():
    """Arrange: a report without `gone`. Act: ask for it. Assert: KeyError carrying the name."""
    report = ReconcileReport(specs=[SpecReport("here", Phase.ACTIVE)])

    with pytest.raises(KeyError) as raised:
        report.spec("gone")

    assert raised.value.args == ("gone",)


@pytest.fixture
def local_zone_not_utc() -> Iterator[None]:
    """The machine's local time zone is UTC+05:30 for the test (a POSIX TZ, no tzdata needed)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "IST-5:30"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.mark.usefixtures("local_zone_not_utc")
def test_clock_times_are_utc_whatever_the_machines_zone():
    """Arrange: the machine's zone is UTC+05:30. Act: a UTC and a +02:00 moment as clock times.

    Assert: both in UTC, as the status says "UTC".
    """
    plus_two = datetime.timezone(datetime.timedelta(hours=2))

    assert clock_time(DEADLINE) == "14:05 UTC"
    assert clock_time(datetime.datetime(2026, 11, 30, 16, 5, tzinfo=plus_two)) == "14:05 UTC"
