"""One notion of capacity with busy runners present (ADR 0038): runners online and idle.

The hand-over gate, the surge budget and the rolling refresh's "never below min idle" all count
a runner when it is up, registered at GitHub and idle; a busy runner serves its job, not the
next one. Each is checked against the in-memory GARM (or the pure refresh step) with busy
runners beside idle ones.
"""

from __future__ import annotations

import dataclasses
import datetime

from doubles.memory_garm import MemoryGarm
from garm_api.models import Instance
from scaleset_reconciler import Phase
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.refresh import plan_step
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

NEW = ("x64", "linux", "gpu")
T0 = datetime.datetime(2026, 12, 2, 12, 0, tzinfo=datetime.UTC)


def test_a_replacement_whose_only_runner_took_a_job_does_not_take_over_yet():
    """Arrange: min idle 1, max 3; relabelled; the new set's runner came up and took a job.

    Act: a pass past the grace; then GARM boots another idle runner and a pass.
    Assert: first the old set still serves (the busy runner serves its job, not the next);
    then it is retired.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])
    changed = make_spec(labels=NEW, min_idle_runners=1)
    run(garm, [changed])
    garm.advance(61)
    garm.advance(1)  # the new runner reports idle
    new = garm.by_name(live_name(changed))
    assert garm.start_job(new.id) is not None
    # GitHub counts the assigned job in the desired runners GARM hears, as GARM keeps min
    # idle runners idle beside the busy ones.
    garm.rows[new.id].desired_runner_count += 1

    waiting = run(garm, [changed])

    assert garm.by_name(live_name(make_spec())).enabled
    assert waiting.spec("small").phase is Phase.CREATING
    garm.advance(1)  # GARM boots a runner for min idle
    garm.advance(1)  # which reports idle
    handed = run(garm, [changed])
    assert not garm.by_name(live_name(make_spec())).enabled
    assert handed.spec("small").phase is not Phase.CREATING


def test_a_replacement_full_of_busy_runners_takes_over():
    """Arrange: min idle 1, max 1; relabelled; the new set's one runner took a job.

    Act: a pass past the grace. Assert: the old set is retired: the new set serves every
    runner it may have, and waiting for one to be idle could wait as long as the job runs.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1, max_runners=1)])
    changed = make_spec(labels=NEW, min_idle_runners=1, max_runners=1)
    run(garm, [changed])
    garm.advance(61)
    garm.advance(1)
    assert garm.start_job(garm.by_name(live_name(changed)).id) is not None

    run(garm, [changed])

    assert not garm.by_name(live_name(make_spec(min_idle_runners=1, max_runners=1))).enabled


def test_busy_runners_left_on_a_retired_set_do_not_hold_the_surge_budget():
    """Arrange: 'a' and 'b' (min idle 1), budget 1; a job runs on 'a''s old set; both relabelled.

    Act: passes until 'a' has handed over (its old set drains the job), then one more.
    Assert: 'b' starts while 'a''s busy runner still drains: it is not an extra runner.
    """
    garm = MemoryGarm()
    names = ("a", "b")
    converge(garm, [make_spec(n, min_idle_runners=1) for n in names])
    garm.advance(61)
    old_a = garm.by_name(live_name(make_spec("a")))
    assert garm.start_job(old_a.id) is not None
    settings = dataclasses.replace(SETTINGS, changeover_surge=1)
    changed = [make_spec(n, NEW, min_idle_runners=1) for n in names]
    report = run(garm, changed, settings=settings)
    assert report.spec("b").phase is Phase.QUEUED
    for _ in range(6):
        garm.advance(61)
        report = run(garm, changed, settings=settings)
        if report.spec("b").phase is not Phase.QUEUED:
            break

    assert not garm.by_name(old_a.name).enabled
    assert [r.runner_status for r in garm.runners_of(old_a.name)] == ["active"]
    assert report.spec("b").phase is not Phase.QUEUED
    assert live_name(changed[1]) in garm.names()


def _runner(name: str, created: datetime.datetime, runner_status: str) -> Instance:
    return Instance(
        id=name,
        name=name,
        status="running",
        runner_status=runner_status,
        scale_set_id=1,
        pool_id="",
        provider_name="lxd",
        provider_id=name,
        agent_id=1,
        provider_fault=b"",
        created_at=created,
        updated_at=created,
    )


def test_a_refresh_never_counts_busy_runners_as_min_idle():
    """Arrange: min idle 2; 2 idle and 2 busy outdated runners, surge 2, nothing booting.

    Act: plan one refresh step. Assert: nothing removed: only the 2 idle runners serve the next
    job, and removing any would leave fewer than min idle.
    """
    before = T0 - datetime.timedelta(hours=1)
    runners = [
        _runner("i1", before, "idle"),
        _runner("i2", before, "idle"),
        _runner("b1", before, "active"),
        _runner("b2", before, "active"),
    ]

    step = plan_step(runners, T0, min_idle=2, surge=2, serving=True)

    assert step.removals == ()
    assert (step.outdated, step.busy_outdated) == (2, 2)
