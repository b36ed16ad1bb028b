"""The surge budget (ADR 0038): changeovers in flight stay within it, the rest wait in order.

Every check reads GARM's own state (its scale sets and their markers, its runners, its call
log) after passes against the in-memory GARM.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from doubles.memory_garm import WRITE_OPERATIONS, MemoryGarm
from scaleset_reconciler import Phase, ReconcileReport, ReconcileSettings, status_message
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec
from status_text import STATUS_LIMIT
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

OLD = ("x64", "linux")
NEW = ("x64", "linux", "gpu")
NAMES = ("a", "b", "c", "d", "e")


def fleet(labels: tuple[str, ...], names: tuple[str, ...] = NAMES) -> list[ScalesetSpec]:
    """Scale sets with min idle 2 each."""
    return [make_spec(name, labels, min_idle_runners=2) for name in names]


def budgeted(surge: int, writes: int = 0) -> ReconcileSettings:
    """The tests' settings with a surge budget and a bound on writes per pass."""
    return dataclasses.replace(SETTINGS, changeover_surge=surge, max_writes=writes)


def converged_fleet(garm: MemoryGarm, names: tuple[str, ...] = NAMES) -> None:
    """The fleet on its old labels, every set's idle runners up."""
    converge(garm, fleet(OLD, names))
    garm.advance(61)
    garm.advance(61)


def in_flight(garm: MemoryGarm, names: tuple[str, ...] = NAMES) -> set[str]:
    """Specs whose new scale set exists while their old one still serves (as GARM shows)."""
    flying: set[str] = set()
    for name in names:
        new = live_name(make_spec(name, NEW))
        old = live_name(make_spec(name, OLD))
        if new in garm.names() and old in garm.names() and garm.by_name(old).enabled:
            flying.add(name)
    return flying


def until_converged(
    garm: MemoryGarm,
    specs: list[ScalesetSpec],
    settings: ReconcileSettings,
    watch: Callable[[], None] = lambda: None,
) -> ReconcileReport:
    """Ticks a minute apart (at most 30) until a pass reports converged; `watch` after each."""
    report = run(garm, specs, settings=settings)
    for _ in range(30):
        watch()
        if report.converged:
            break
        garm.advance(61)
        report = run(garm, specs, settings=settings)
    return report


def test_changeovers_beyond_the_budget_wait_and_start_as_others_hand_over():
    """Arrange: 5 sets (min idle 2) converged; budget 4 extra runners. Act: relabel all, passes.

    Assert: never more than 2 in flight (as GARM shows); the first pass starts 'a' and 'b' and
    queues 'c', 'd', 'e' in that order, stamping their old sets; every spec ends on its new set.
    """
    garm = MemoryGarm()
    converged_fleet(garm)
    specs = fleet(NEW)

    first = run(garm, specs, settings=budgeted(4))

    assert in_flight(garm) == {"a", "b"}
    assert [first.spec(n).queue_position for n in NAMES] == [None, None, 1, 2, 3]
    assert first.spec("c").phase is Phase.QUEUED
    assert (first.surge_held, first.in_flight, first.queued) == (4, 2, 3)
    for name in ("c", "d", "e"):
        marker = json.loads(garm.by_name(live_name(make_spec(name, OLD))).extended_state)
        assert "queued-at" in marker
    peaks: list[int] = []
    report = until_converged(garm, specs, budgeted(4), lambda: peaks.append(len(in_flight(garm))))
    assert max(peaks) == 2
    assert report.converged
    assert garm.names() == {live_name(spec) for spec in specs}


def test_the_oldest_change_starts_first_whatever_its_name():
    """Arrange: budget 2 (one set at a time); 'a' changing; 'e' changed, then 'b' a pass later.

    Act: passes until 'a' has handed over. Assert: 'e' (changed first) starts before 'b'.
    """
    garm = MemoryGarm()
    converged_fleet(garm, ("a", "b", "e"))
    settings = budgeted(2)
    a_new, b_old, e_new = (
        make_spec("a", NEW, min_idle_runners=2),
        *fleet(OLD, ("b",)),
        make_spec("e", NEW, min_idle_runners=2),
    )
    run(garm, [a_new, b_old, e_new], settings=settings)
    garm.advance(20)
    specs = fleet(NEW, ("a", "b", "e"))

    report = run(garm, specs, settings=settings)

    assert report.spec("e").queue_position == 1
    assert report.spec("b").queue_position == 2
    started: list[str] = []

    def watch() -> None:
        started.extend(n for n in sorted(in_flight(garm, ("b", "e"))) if n not in started)

    assert until_converged(garm, specs, settings, watch).converged
    assert started == ["e", "b"]


def test_one_changeover_larger_than_the_budget_starts_alone():
    """Arrange: 2 sets of min idle 2, budget 1. Act: relabel both, passes.

    Assert: one at a time (it would otherwise never start), and both complete.
    """
    garm = MemoryGarm()
    converged_fleet(garm, ("a", "b"))
    specs = fleet(NEW, ("a", "b"))
    peaks: list[int] = []
    report = until_converged(
        garm, specs, budgeted(1), lambda: peaks.append(len(in_flight(garm, ("a", "b"))))
    )
    assert max(peaks) == 1
    assert report.converged


def test_without_a_budget_every_changeover_starts_at_once():
    """Arrange: 5 converged sets; budget 0 (no bound). Act: relabel all, one pass.

    Assert: all five in flight, nothing queued, no stamp written.
    """
    garm = MemoryGarm()
    converged_fleet(garm)

    report = run(garm, fleet(NEW), settings=budgeted(0))

    assert in_flight(garm) == set(NAMES)
    assert report.queued == 0
    assert not any("queued-at" in row.extended_state for row in garm.rows.values())


def test_the_status_counts_in_flight_and_queued_within_120_characters():
    """Arrange: 5 sets, budget 4. Act: relabel all, one pass. Assert: the fleet-wide text."""
    garm = MemoryGarm()
    converged_fleet(garm)

    report: ReconcileReport = run(garm, fleet(NEW), settings=budgeted(4))

    text = status_message(report)
    assert text == "'a' and 4 more changing: 2 in flight, 3 queued"
    assert len(text) <= STATUS_LIMIT


def test_a_pass_makes_no_more_writes_than_its_bound_and_the_rest_follows():
    """Arrange: 5 sets, no budget, at most 3 writes per pass. Act: relabel all, passes.

    Assert: no pass sends GARM more than 3 writes; creates come before retirements; it converges.
    """
    garm = MemoryGarm()
    converged_fleet(garm)
    specs = fleet(NEW)
    per_pass: list[list[str]] = []
    start = len(garm.log)

    def watch() -> None:
        nonlocal start
        calls = garm.log[start:]
        per_pass.append([c.operation for c in calls if c.operation in WRITE_OPERATIONS])
        start = len(garm.log)

    report = until_converged(garm, specs, budgeted(0, writes=3), watch)
    assert report.converged
    assert max(len(writes) for writes in per_pass) <= 3
    # A second create and its marker would make 4: it waits, and so does everything after it.
    assert per_pass[0] == ["create_scaleset", "update_scaleset"]
    assert report.deferred_writes == 0


def test_a_bounded_pass_creates_before_it_retires_and_retires_before_it_deletes():
    """Arrange: 'a' relabelled and ready to hand over; then 'b' relabelled; at most 2 writes.

    Act: one pass. Assert: GARM saw 'b''s create and its marker only; 'a''s old set still
    serves, and the next pass retires it.
    """
    garm = MemoryGarm()
    converged_fleet(garm, ("a", "b"))
    settings = budgeted(0, writes=2)
    a_new = make_spec("a", NEW, min_idle_runners=2)
    run(garm, [a_new, *fleet(OLD, ("b",))], settings=settings)
    garm.advance(61)
    garm.advance(1)
    specs = fleet(NEW, ("a", "b"))
    start = len(garm.log)

    report = run(garm, specs, settings=settings)

    writes = [c for c in garm.log[start:] if c.operation in WRITE_OPERATIONS]
    assert [c.operation for c in writes] == ["create_scaleset", "update_scaleset"]
    assert writes[0].args[2].name == live_name(make_spec("b", NEW))
    assert garm.by_name(live_name(make_spec("a", OLD))).enabled
    assert report.deferred_writes == 1
    garm.advance(1)
    run(garm, specs, settings=settings)
    assert not garm.by_name(live_name(make_spec("a", OLD))).enabled
