"""Rolling refreshes and label retries are charged to the surge budget too (ADR 0038).

A refresh raises GARM's min idle by `refresh-surge` and a label retry creates a further attempt
beside the one GitHub dropped labels of: both boot extra idle runners, so they wait in the same
queue as changeovers. Every check reads the in-memory GARM's own state after each pass and each
run of its worker, never the charm's report alone.
"""

from __future__ import annotations

import dataclasses
import datetime

from doubles.memory_garm import MemoryGarm
from scaleset_reconciler import ReconcileReport, ReconcileSettings, status_message
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

OLD = ("x64", "linux")
NEW = ("x64", "linux", "gpu")
NAMES = ("a", "b", "c", "d", "e")
DELETING = frozenset({"pending_delete", "deleting", "pending_force_delete"})
RETRY = datetime.timedelta(minutes=15)


def _budget(surge: int) -> ReconcileSettings:
    return dataclasses.replace(SETTINGS, changeover_surge=surge, refresh_surge=1)


def _runners(garm: MemoryGarm) -> int:
    """Runners GARM holds that are not being removed."""
    return sum(1 for r in garm.runners.values() if r.status not in DELETING)


def _raised(garm: MemoryGarm, specs: list[ScalesetSpec]) -> int:
    """Scale sets GARM runs with a min idle above their spec's: refreshes in flight."""
    wanted = {live_name(s): s.min_idle_runners for s in specs}
    return sum(
        1
        for row in garm.rows.values()
        if row.name in wanted and row.min_idle_runners > wanted[row.name]
    )


def test_a_fleet_wide_refresh_holds_no_more_than_the_budget():
    """Arrange: 5 sets (min idle 1) settled with their idle runners; budget 2 extra runners.

    Act: change every set's image (a rolling refresh each), passes until converged.

    Assert: never more than 2 sets raised at once, never more than 5 + 2 runners; the first
    pass raises 2 and queues 3 (the status counts them); every set ends on the new image at
    the spec's counts.
    """
    garm = MemoryGarm()
    specs = [make_spec(n, OLD, min_idle_runners=1, max_runners=3) for n in NAMES]
    converge(garm, specs)
    for _ in range(3):
        garm.advance(61)
        run(garm, specs)
    base = _runners(garm)
    changed = [dataclasses.replace(s, image="ubuntu:24.04") for s in specs]
    settings = _budget(2)

    first = run(garm, changed, settings=settings)

    assert _raised(garm, changed) == 2
    assert first.queued == 3
    assert [first.spec(n).queue_position for n in NAMES] == [None, None, 1, 2, 3]
    assert status_message(first) == "'a' and 4 more changing: 2 in flight, 3 queued"
    raised: list[int] = []
    peak: list[int] = []
    report = first
    for _ in range(40):
        if report.converged:
            break
        for _ in range(6):
            garm.advance(10)
            peak.append(_runners(garm))
        report = run(garm, changed, settings=settings)
        raised.append(_raised(garm, changed))
    assert report.converged
    assert max(raised) <= 2
    assert max(peak) <= base + 2
    for spec in changed:
        row = garm.by_name(live_name(spec))
        assert (row.image, row.min_idle_runners, row.max_runners) == ("ubuntu:24.04", 1, 3)


def test_a_label_retry_waits_for_room_and_goes_before_changes_not_started():
    """Arrange: budget 2; 'a' relabelled while GitHub drops `gpu`; then 'b' and 'c'.

    'a''s first attempt serves beside the old set, holding 1; 14 minutes later 'b' and 'c' are
    relabelled without `gpu` ('b' starts, 'c' queues). Act: passes past 'a''s retry time.

    Assert: the retry waits, first in the queue (it finishes a changeover in flight), with no
    further attempt while 'b' holds the rest; it is created before 'c' starts; runners never
    exceed 3 + 2.
    """
    garm = MemoryGarm()
    specs = [make_spec(n, OLD, min_idle_runners=1) for n in NAMES[:3]]
    converge(garm, specs)
    garm.advance(61)
    garm.advance(61)
    base = _runners(garm)
    garm.drop_labels = {"gpu"}
    settings = _budget(2)
    a_new = make_spec("a", NEW, min_idle_runners=1)
    peak: list[int] = []
    for _ in range(14):
        run(garm, [a_new, *specs[1:]], settings=settings)
        _minute(garm, peak)
    others = [make_spec(n, ("x64", "linux", "big"), min_idle_runners=1) for n in NAMES[1:3]]
    changed = [a_new, *others]
    second = live_name(a_new, attempt=1)
    c_new = live_name(others[1])
    waited: list[ReconcileReport] = []
    for _ in range(30):
        report = run(garm, changed, settings=settings)
        if second in garm.names():
            break
        if report.spec("a").queue_position is not None:
            waited.append(report)
        _minute(garm, peak)

    assert waited, "the retry never waited"
    assert waited[0].spec("a").queue_position == 1
    assert waited[0].spec("c").queue_position == 2
    assert waited[0].spec("a").status.endswith("; retry queued")
    assert second in garm.names()
    assert c_new not in garm.names()
    assert max(peak) <= base + 2


def test_changeovers_that_fill_the_budget_waiting_for_retries_retry_one_at_a_time():
    """Arrange: budget 2; 'a' and 'b' relabelled while GitHub drops `gpu`: both hold it all.

    Neither hands over. Act: passes past their retry times.

    Assert: a retry still starts (nothing would ever free the budget otherwise), one at a time;
    the retried changeover then holds both its attempts' min idle.
    """
    garm = MemoryGarm()
    specs = [make_spec(n, OLD, min_idle_runners=1) for n in NAMES[:2]]
    converge(garm, specs)
    garm.drop_labels = {"gpu"}
    changed = [make_spec(n, NEW, min_idle_runners=1) for n in NAMES[:2]]
    settings = _budget(2)
    run(garm, changed, settings=settings)
    garm.advance(RETRY.total_seconds() + 61)

    run(garm, changed, settings=settings)

    retried = {
        n for n in NAMES[:2] if live_name(changed[0 if n == "a" else 1], attempt=1) in garm.names()
    }
    assert len(retried) == 1
    # The retried one holds 2 while both its attempts serve beside the old set: no room.
    garm.advance(10)
    after = run(garm, changed, settings=settings)
    assert after.surge_held == 3


def _minute(garm: MemoryGarm, peak: list[int]) -> None:
    for _ in range(6):
        garm.advance(10)
        peak.append(_runners(garm))


def test_a_retry_of_a_changeover_larger_than_the_budget_starts_alone():
    """Arrange: budget 1; 'a' relabelled while GitHub drops `gpu`, holding the whole budget.

    Act: passes past the retry time.

    Assert: the retry is not kept waiting for the budget its own changeover holds.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("a", OLD, min_idle_runners=1)])
    garm.drop_labels = {"gpu"}
    a_new = make_spec("a", NEW, min_idle_runners=1)
    settings = _budget(1)
    run(garm, [a_new], settings=settings)
    garm.advance(RETRY.total_seconds() + 61)

    report = run(garm, [a_new], settings=settings)

    assert live_name(a_new, attempt=1) in garm.names()
    assert report.spec("a").queue_position is None
