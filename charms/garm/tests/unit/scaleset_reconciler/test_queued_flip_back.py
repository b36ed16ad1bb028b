"""A change back to a retired scale set, queued by the surge budget, keeps that set (ADR 0038).

The change back re-enables the retired set once its turn comes; meanwhile it is not deleted once
empty, so the turn is one update instead of a create that waits on GitHub.
Every check reads the in-memory GARM's own state.
"""

from __future__ import annotations

import dataclasses
import datetime

from doubles.memory_garm import WRITE_OPERATIONS, MemoryGarm
from scaleset_reconciler import Phase, ReconcileSettings
from scaleset_reconciler.naming import live_name
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

OLD = ("x64", "linux")
BIG = ("x64", "linux", "big")
GPU = ("x64", "linux", "gpu")
RETRY = datetime.timedelta(minutes=15)


def _budget(surge: int) -> ReconcileSettings:
    return dataclasses.replace(SETTINGS, changeover_surge=surge)


def test_a_queued_change_back_keeps_the_retired_set_and_re_enables_it_in_its_turn():
    """Arrange: budget 1; 'b' changed over to `big`, its old set retired and empty.

    Then in one pass 'a' relabelled while GitHub drops `gpu` (it starts and holds the budget)
    and 'b' changed back to its old labels (queued).

    Act: passes for 2 hours while 'a' stays stuck; then GitHub accepts `gpu`, passes go on.

    Assert: while queued, 'b''s old set is never deleted nor written; 'b' reports queued with
    that set queued; in its turn the same set (same id) is re-enabled and serves, and 'b''s
    `big` set is gone in the end.
    """
    garm = MemoryGarm()
    a_old, b_old = make_spec("a", OLD, min_idle_runners=1), make_spec("b", OLD, min_idle_runners=1)
    converge(garm, [a_old, b_old])
    settings = _budget(1)
    b_big = make_spec("b", BIG, min_idle_runners=1)
    kept = garm.by_name(live_name(b_old)).id
    for _ in range(10):
        run(garm, [a_old, b_big], settings=settings)
        garm.advance(61)
        if not garm.rows[kept].enabled:
            break
    assert not garm.rows[kept].enabled
    garm.advance(11)
    assert not garm.runners_of(live_name(b_old))
    garm.drop_labels = {"gpu"}
    specs = [make_spec("a", GPU, min_idle_runners=1), b_old]
    start = len(garm.log)

    reports = [run(garm, specs, settings=settings)]
    for _ in range(120):
        garm.advance(61)
        reports.append(run(garm, specs, settings=settings))
        # The retry is a repair and starts; keep GitHub dropping so 'a' never hands over.
        assert kept in garm.rows

    touched = [
        c for c in garm.log[start:] if c.operation in WRITE_OPERATIONS and c.args[0] == kept
    ]
    assert touched == []
    assert all(r.spec("b").phase is Phase.QUEUED for r in reports)
    queued = reports[-1].spec("b").predecessors
    assert [(p.scaleset_id, p.phase) for p in queued if p.scaleset_id == kept] == [
        (kept, Phase.QUEUED)
    ]
    garm.drop_labels = set()
    for _ in range(300):
        garm.advance(61)
        if run(garm, specs, settings=settings).converged:
            break
    assert garm.rows[kept].enabled
    assert live_name(b_big) not in garm.names()
    assert live_name(b_old) in garm.names()
