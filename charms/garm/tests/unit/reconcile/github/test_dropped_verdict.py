"""GitHub's "deleted" verdict takes two answers at least one check apart (ADR 0029).

`confirm` on its own, then whole passes against the in-memory GARM: a live scale set GitHub
named missing once is left alone; named so again a check later it is replaced; a check that
does not name it in between starts the count again.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from doubles.memory_garm import MemoryGarm
from reconcile.github.dropped_verdict import (
    ConfirmedCheck,
    Sightings,
    confirm,
    sightings_from_json,
    sightings_to_json,
)
from reconcile.github.scalesets import CHECK_EVERY
from scaleset_reconciler import GithubScaleSetRef, ReconcileReport, reconcile
from scaleset_reconciler.naming import live_name
from unit.walks.scalesets import SETTINGS, converge, make_spec

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


def test_a_first_answer_is_only_noted():
    """Arrange: no sightings. Act: a check naming set 7. Assert: nothing confirmed; 7 noted."""
    confirmed, kept = confirm({}, frozenset({7}), T0, CHECK_EVERY)

    assert confirmed == frozenset()
    assert kept == {7: T0}


def test_a_second_answer_a_check_later_confirms():
    """Arrange: set 7 noted at T0. Act: checks naming it just before and at T0 + CHECK_EVERY.

    Assert: not yet before; confirmed at; the first sighting is kept either way.
    """
    early, _ = confirm({7: T0}, frozenset({7}), T0 + CHECK_EVERY / 2, CHECK_EVERY)
    confirmed, kept = confirm({7: T0}, frozenset({7}), T0 + CHECK_EVERY, CHECK_EVERY)

    assert early == frozenset()
    assert confirmed == frozenset({7})
    assert kept == {7: T0}


def test_a_check_not_naming_the_set_forgets_it():
    """Arrange: sets 7 and 8 noted at T0. Act: a check later naming 8 only.

    Assert: 8 confirmed; 7 forgotten (GitHub has it, or was not asked): no sighting kept.
    """
    confirmed, kept = confirm({7: T0, 8: T0}, frozenset({8}), T0 + CHECK_EVERY, CHECK_EVERY)

    assert confirmed == frozenset({8})
    assert kept == {8: T0}


def test_a_sighting_in_the_future_starts_again():
    """Arrange: set 7 noted an hour ahead (the clock was set back). Act: a check naming it.

    Assert: not confirmed; noted afresh at now.
    """
    confirmed, kept = confirm(
        {7: T0 + datetime.timedelta(hours=1)}, frozenset({7}), T0, CHECK_EVERY
    )

    assert (confirmed, kept) == (frozenset(), {7: T0})


def test_sightings_round_trip_and_unreadable_ones_are_dropped():
    """Arrange: sightings. Act: to JSON and back; read garbage. Assert: equal; garbage is none."""
    sightings: Sightings = {7: T0, 12: T0 + CHECK_EVERY}

    assert sightings_from_json(sightings_to_json(sightings)) == sightings
    assert sightings_from_json("") == {}
    assert sightings_from_json("[1]") == {}
    assert sightings_from_json('{"x": "2026-12-01T12:00:00+00:00", "7": "noon", "²": 1}') == {}
    assert sightings_from_json('{"8": "2026-12-01T12:00:00"}') == {}


class FlakyGithub:
    """GitHub as the charm asks it: the in-memory GARM's dropped sets, and wrong answers.

    A set in `wrongly_missing` is answered `count: 0` once while GitHub still has it.
    """

    def __init__(self, garm: MemoryGarm) -> None:
        self.garm = garm
        self.wrongly_missing: set[int] = set()

    def __call__(self, refs: Sequence[GithubScaleSetRef]) -> frozenset[int]:
        """The ids GitHub answers missing for."""
        named = self.garm.ask_github_about_scalesets()(refs)
        wrong = frozenset(
            ref.scaleset_id for ref in refs if ref.scaleset_id in self.wrongly_missing
        )
        self.wrongly_missing.clear()
        return named | wrong


def checking(
    garm: MemoryGarm, github: FlakyGithub, sightings: Sightings
) -> tuple[ReconcileReport, Sightings]:
    """One pass that asks GitHub (as the charm does each check), confirming its answers."""
    check = ConfirmedCheck(github, dict(sightings), garm.now, CHECK_EVERY)
    report = reconcile(
        garm,
        [make_spec(min_idle_runners=1)],
        now=garm.now,
        settings=SETTINGS,
        sweep_orphans=True,
        missing_at_github=check,
    )
    return report, check.sightings


def test_one_wrong_count_zero_replaces_nothing():
    """Arrange: `small` converged; GitHub still has its set but answers `count: 0` once.

    Act: a check; a check a quarter hour later (GitHub answers right again).
    Assert: neither pass creates a replacement nor reports the set missing; no sighting kept.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])
    names = garm.names()
    github = FlakyGithub(garm)
    github.wrongly_missing.add(garm.by_name(live_name(make_spec())).id)

    first, sightings = checking(garm, github, {})
    garm.advance(CHECK_EVERY.total_seconds())
    second, sightings = checking(garm, github, sightings)

    assert garm.names() == names
    assert not first.spec("small").missing_at_github
    assert not second.spec("small").missing_at_github
    assert sightings == {}


def test_a_set_github_dropped_is_replaced_at_the_second_check():
    """Arrange: `small` converged; GitHub dropped its scale set.

    Act: a check; one 14 minutes later; one a quarter hour after the first.
    Assert: only the third creates the next attempt, and says why.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])
    names = garm.names()
    garm.drop_at_github(garm.by_name(live_name(make_spec())).id)
    github = FlakyGithub(garm)

    first, sightings = checking(garm, github, {})
    garm.advance(14 * 60)
    early, sightings = checking(garm, github, sightings)
    garm.advance(60)
    confirmed, _ = checking(garm, github, sightings)

    assert not first.spec("small").missing_at_github
    assert not early.spec("small").missing_at_github
    assert confirmed.spec("small").missing_at_github
    assert garm.names() == names | {live_name(make_spec(), attempt=1)}


def test_an_answer_in_between_that_names_nothing_starts_again():
    """Arrange: `small` converged; GitHub answers `count: 0`, then not, then `count: 0`.

    Act: three checks a quarter hour apart. Assert: nothing is replaced; only the last
    answer is noted.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])
    names = garm.names()
    github = FlakyGithub(garm)
    live = garm.by_name(live_name(make_spec())).id
    sightings: Sightings = {}

    for wrong in (True, False, True):
        if wrong:
            github.wrongly_missing.add(live)
        report, sightings = checking(garm, github, sightings)
        assert not report.spec("small").missing_at_github
        garm.advance(CHECK_EVERY.total_seconds())

    assert garm.names() == names
    assert sightings == {live: garm.now - CHECK_EVERY}
