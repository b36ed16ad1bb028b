"""Under `max-writes-per-pass`, empty retired scale sets are deleted while creates wait (ADR 0038).

Deletes come after creates in a pass's order; a bound that creates fill every pass of a
fleet-wide change kept part of it for them, so retired sets do not pile up until the last
create. Every check reads GARM's own state and call log (the in-memory GARM).
"""

from __future__ import annotations

import dataclasses

from doubles.memory_garm import WRITE_OPERATIONS, MemoryGarm
from scaleset_reconciler import ReconcileSettings
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

OLD = ("x64", "linux")
NEW = ("x64", "linux", "gpu")
NAMES = ("a", "b", "c", "d", "e")


def _fleet(labels: tuple[str, ...], names: tuple[str, ...] = NAMES) -> list[ScalesetSpec]:
    return [make_spec(name, labels, min_idle_runners=1) for name in names]


def _bounded(writes: int) -> ReconcileSettings:
    return dataclasses.replace(SETTINGS, max_writes=writes)


def _a_retired_and_empty(garm: MemoryGarm, settings: ReconcileSettings) -> str:
    """Relabel 'a' alone and pass until its old set is retired and GARM removed its runners."""
    old = live_name(make_spec("a", OLD))
    specs = [*_fleet(NEW, ("a",)), *_fleet(OLD, NAMES[1:])]
    for _ in range(10):
        run(garm, specs, settings=settings)
        garm.advance(61)
        if not garm.by_name(old).enabled:
            break
    assert not garm.by_name(old).enabled
    garm.advance(11)
    assert not garm.runners_of(old)
    return old


def test_an_empty_retired_set_is_deleted_in_a_pass_that_creates_fill():
    """Arrange: 5 sets converged; 'a' changed over, its old set retired and empty.

    At most 6 writes a pass. Act: relabel the other 4 (their creates want 8 writes), one pass.

    Assert: GARM deleted 'a''s old set in that pass, within 6 writes, creates first.
    """
    garm = MemoryGarm()
    converge(garm, _fleet(OLD))
    settings = _bounded(6)
    old = _a_retired_and_empty(garm, settings)
    start = len(garm.log)

    report = run(garm, _fleet(NEW), settings=settings)

    writes = [c.operation for c in garm.log[start:] if c.operation in WRITE_OPERATIONS]
    assert old not in garm.names()
    assert len(writes) <= 6, writes
    assert writes[:2] == ["create_scaleset", "update_scaleset"]
    assert "delete_scaleset" in writes
    assert report.deferred_writes > 0


def test_deletes_take_at_most_half_the_bound():
    """Arrange: 4 sets changed over but for the deletes of their 4 empty retired sets.

    Then 'e' added. Act: one pass at 4 writes.

    Assert: one delete (half the bound) and 'e''s create go; the rest waits.
    """
    garm = MemoryGarm()
    names = NAMES[:4]
    converge(garm, _fleet(OLD, names))
    olds = [live_name(make_spec(n, OLD)) for n in names]
    specs = _fleet(NEW, names)
    # Unbounded passes until every old set is retired and empty; GARM keeps the deletes.
    for _ in range(10):
        garm.keep_deletes = True
        run(garm, specs)
        garm.advance(61)
        if not any(garm.by_name(o).enabled or garm.runners_of(o) for o in olds):
            break
    garm.keep_deletes = False
    garm.advance(3_600)
    start = len(garm.log)

    run(garm, [*specs, *_fleet(NEW, ("e",))], settings=_bounded(4))

    writes = [c.operation for c in garm.log[start:] if c.operation in WRITE_OPERATIONS]
    assert writes == ["create_scaleset", "update_scaleset", "delete_scaleset"], writes
    assert sum(1 for o in olds if o in garm.names()) == 3
