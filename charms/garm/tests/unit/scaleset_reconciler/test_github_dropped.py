"""Scale sets GitHub dropped (its offline deletion, garm-behaviour B33), on the in-memory GARM.

GARM keeps a retired set GitHub dropped through every delete, and creates any dropped set again
at GitHub, under the same name, only when it restarts; its API shows nothing meanwhile. The
charm asks GitHub itself (ADR 0029): a live set GitHub no longer has is created again under a
further attempt name, which takes over as any attempt does; a retired one whose delete GARM kept
is named for a restart of GARM, after which its delete goes through.
"""

from __future__ import annotations

from doubles.memory_garm import MemoryGarm
from scaleset_reconciler import (
    Phase,
    ReconcileReport,
    blocked_message,
    dropped_and_kept,
    reconcile,
    status_message,
)
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

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


def asking(garm: MemoryGarm, specs: list[ScalesetSpec]) -> ReconcileReport:
    """One pass that also asks GitHub whether it still has the scale sets."""
    return reconcile(
        garm,
        specs,
        now=garm.now,
        settings=SETTINGS,
        sweep_orphans=True,
        missing_at_github=garm.ask_github_about_scalesets(),
    )


def test_a_live_set_github_dropped_is_replaced_under_a_new_name_and_then_deleted():
    """Arrange: `small` converged with an idle runner; GitHub dropped its scale set.

    Act: a pass that asks GitHub; passes a minute apart until the old set's delete was kept;
    a pass that asks GitHub; GARM restarts (as the charm restarts it); passes.

    Assert: the first pass creates the next attempt and says why; the new set takes over and
    the old one is retired; GARM keeps the old one through its delete; asked again, GitHub's
    answer names it for a restart; after the restart only the new set remains, converged.
    """
    garm = MemoryGarm()
    spec = make_spec(min_idle_runners=1)
    converge(garm, [spec])
    old = live_name(spec)
    garm.drop_at_github(garm.by_name(old).id)

    first = asking(garm, [spec])
    created = garm.names()
    for _ in range(4):
        garm.advance(61)
        run(garm, [spec])
    kept = asking(garm, [spec])
    retired = garm.by_name(old)
    garm.restart()
    garm.advance(3600)
    after = run(garm, [spec])

    new = live_name(spec, attempt=1)
    assert first.spec("small").missing_at_github
    assert first.spec("small").phase is Phase.CREATING
    assert status_message(first) == "'small': GitHub dropped its scale set; creating a new one"
    assert created == {old, new}
    assert not retired.enabled
    assert dropped_and_kept(kept) == [old]
    assert garm.names() == {new}
    assert after.converged


def test_a_live_set_github_still_has_is_left_alone():
    """Arrange: `small` converged. Act: a pass that asks GitHub.

    Assert: GitHub was asked about the live set; nothing is written and nothing is named.
    """
    garm = MemoryGarm()
    spec = make_spec(min_idle_runners=1)
    converge(garm, [spec])

    report = asking(garm, [spec])

    assert ("github scale sets", (live_name(spec),)) in garm.calls
    assert report.writes == 0
    assert not report.spec("small").missing_at_github
    assert dropped_and_kept(report) == []


def test_a_retired_set_is_asked_about_only_once_garm_kept_its_delete():
    """Arrange: a label change while the old set runs a job; GitHub dropped the old set.

    Act: a pass that asks GitHub while the old set drains; the job ends; passes until its
    delete was kept; a pass that asks.

    Assert: the first question names only the live set; the last names the kept one too.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])
    old = live_name(make_spec())
    job = garm.start_job_when_ready(garm.by_name(old).id)
    changed = [make_spec(labels=NEW_LABELS, min_idle_runners=1)]
    new = live_name(changed[0])
    for _ in range(3):
        run(garm, changed)
        garm.advance(61)
    garm.drop_at_github(garm.by_name(old).id)
    asking(garm, changed)
    assert job is not None
    garm.finish_job(job)
    for _ in range(3):
        garm.advance(301)
        run(garm, changed)
    asking(garm, changed)

    asked = [call for call in garm.calls if call[0] == "github scale sets"]
    assert asked == [("github scale sets", (new,)), ("github scale sets", (new, old))]
