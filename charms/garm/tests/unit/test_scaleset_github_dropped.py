"""Scale sets GitHub dropped (its offline deletion, garm-behaviour B33), on the in-memory GARM.

GARM keeps a retired set GitHub dropped through every delete and creates any dropped set
again at GitHub, under the same name, when it restarts. The charm's recovery is that restart:
a retired set then goes by its next delete, a live one keeps serving under its name (no new
attempt name is needed, and none is made).
"""

from __future__ import annotations

from scaleset_fixtures import converge, make_spec, run

from doubles.memory_garm import MemoryGarm
from scaleset_reconciler import blocked_message
from scaleset_reconciler.naming import live_name

NEW_LABELS = ("x64", "gpu")


def test_a_retired_set_github_dropped_is_deleted_after_garm_restarts():
    """Arrange: a label change retired `small`'s old set, empty; GitHub dropped the old set.

    Act: passes every four minutes until three deletes were kept; GARM restarts; one pass.

    Assert: the old set stays and the status says to restart garm; after the restart its
    delete goes through, nothing is Blocked and only the new set remains.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=0)])
    old = live_name(make_spec())
    changed = [make_spec(labels=NEW_LABELS, min_idle_runners=0)]
    run(garm, changed)
    garm.drop_at_github(garm.by_name(old).id)
    reports = []
    for _ in range(5):
        garm.advance(240)
        reports.append(run(garm, changed))
    kept = old in garm.names()

    garm.restart()
    garm.advance(480)
    after = run(garm, changed)

    assert kept
    assert "deletes: GitHub dropped it? restart garm, or see log" in blocked_message(reports[-1])
    assert garm.names() == {live_name(changed[0])}
    assert blocked_message(after) == ""


def test_a_live_set_github_dropped_serves_on_under_its_name_after_garm_restarts():
    """Arrange: `small` converged with an idle runner; GitHub dropped its scale set.

    Act: GARM restarts; one pass.

    Assert: the same scale set (name and GARM id) has a new GitHub id; the pass is converged
    and writes nothing (no replacement under a further attempt name).
    """
    garm = MemoryGarm()
    spec = make_spec()
    converge(garm, [spec])
    live = garm.by_name(live_name(spec))
    old_github_id = live.github_scale_set_id
    garm.drop_at_github(live.id)

    garm.restart()
    report = run(garm, [spec])

    again = garm.by_name(live_name(spec))
    assert (again.id, again.name) == (live.id, live.name)
    assert again.github_scale_set_id not in (0, old_github_id)
    assert report.converged
    assert report.writes == 0
