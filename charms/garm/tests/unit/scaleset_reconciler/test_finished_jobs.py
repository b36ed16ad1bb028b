"""A retired scale set's finished job, noticed through GitHub instead of GARM (ADR 0015)."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence

import pytest

from doubles.memory_garm import MemoryGarm
from fake_github import FakeGitHub
from garm_api.models import EntityKind
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github_objects import GithubApp
from scaleset_reconciler import (
    SETTLE_LIMIT,
    BusyRunner,
    Phase,
    ReconcileReport,
    reconcile,
)
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.needs import entity_key
from scaleset_reconciler.report import Failure
from unit.walks.finished_jobs import (
    NEW_LABELS,
    changeover_started,
    drain,
    drain_with_jobs,
    endpoint,
    removals,
)
from unit.walks.scalesets import SETTINGS, converge, make_spec, run
from workload.config import ProxyConfig


def test_runner_github_no_longer_lists_is_removed_and_its_set_deleted_in_the_same_pass():
    """Arrange: the retired set's only runner finished its job; GARM has not noticed.

    Act: one pass that asks GitHub.
    Assert: GitHub was asked about that runner only; it is removed and, once GARM has removed
    it, the emptied set is deleted in the same pass; the spec is active again.
    """
    garm = MemoryGarm()
    _, new, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)

    report = drain(garm, garm.ask_github())

    assert ("github", (job,)) in garm.calls
    assert removals(garm) == [job]
    assert garm.names() == {new}
    assert report.spec("small").phase is Phase.ACTIVE
    assert report.errors == []


def test_without_waiting_the_next_pass_deletes_the_emptied_set():
    """Arrange: the retired set's job finished. Act: a pass that may not wait, then another.

    Assert: the first removes the runner and keeps the set (GARM still holds the runner);
    the next deletes it without asking GitHub again.
    """
    garm = MemoryGarm()
    old, new, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)

    first = drain(garm, garm.ask_github(), settle=False)
    kept = garm.names()
    garm.advance(60)
    asked = len([c for c in garm.calls if c[0] == "github"])
    second = drain(garm, garm.ask_github(), settle=False)

    assert removals(garm) == [job]
    assert first.spec("small").phase is Phase.DRAINING
    assert kept == {old, new}
    assert garm.names() == {new}
    assert second.spec("small").phase is Phase.ACTIVE
    assert len([c for c in garm.calls if c[0] == "github"]) == asked


def test_runner_github_still_lists_is_kept():
    """Arrange: a job still runs on the retired set. Act: a pass that asks GitHub.

    Assert: nothing removed, the set still drains with its runner.
    """
    garm = MemoryGarm()
    old, _, (job,) = drain_with_jobs(garm)

    report = drain(garm, garm.ask_github())

    assert ("github", (job,)) in garm.calls
    assert removals(garm) == []
    assert old in garm.names()
    assert [(p.name, p.runners) for p in report.spec("small").predecessors] == [(old, 1)]


def test_github_unreachable_changes_nothing():
    """Arrange: the job finished, but GitHub (the App's API) does not answer.

    Act: a pass with the charm's real GitHub check. Assert: no removal, the set drains on,
    no error in the report (GARM's consolidation removes the runner in time).
    """
    garm = MemoryGarm()
    old, _, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)
    with FakeGitHub() as github:
        dead = github.url
    check = RunnerCheck(
        lambda: endpoint(f"{dead}/api/v3/"),
        {entity_key(EntityKind.REPOSITORY, "fake-org/fake-repo"): APP},
        ProxyConfig(),
    )

    report = drain(garm, check)

    assert removals(garm) == []
    assert old in garm.names()
    assert report.spec("small").phase is Phase.DRAINING
    assert report.all_errors() == []


def test_github_is_not_asked_without_busy_runners_on_retired_sets():
    """Arrange: a converged spec and a changeover without jobs. Act: passes asking GitHub.

    Assert: GitHub is never asked (idle runners are GARM's to remove).
    """
    garm = MemoryGarm()
    _, new = changeover_started(garm)
    for _ in range(4):
        garm.advance(61)
        drain(garm, garm.ask_github())

    assert [c for c in garm.calls if c[0] == "github"] == []
    assert garm.names() == {new}


def test_of_two_busy_runners_only_the_one_github_dropped_is_removed():
    """Arrange: two jobs on the retired set; one finished. Act: a pass asking GitHub.

    Assert: GitHub was asked about both; only the finished one is removed; the set keeps
    draining with the other (no delete attempted, no waiting for GARM).
    """
    garm = MemoryGarm()
    old, _, (done, running) = drain_with_jobs(garm, jobs=2)
    garm.finish_job(done)
    started = garm.now

    report = drain(garm, garm.ask_github())

    assert ("github", (done, running)) in garm.calls or ("github", (running, done)) in garm.calls
    assert removals(garm) == [done]
    assert garm.now == started
    assert old in garm.names()
    assert garm.deletes_refused_with_runners == []
    assert report.spec("small").phase is Phase.DRAINING


APP = GithubApp(app_id=1, installation_id=2, private_key_pem=b"not a key")


def test_only_busy_runners_of_retired_sets_are_removed_whatever_github_names():
    """Arrange: a job on the retired set and one on the live set; GitHub names every runner.

    Act: a pass. Assert: GitHub was asked about the retired set's busy runner alone; the live
    set's busy runner is untouched; only the retired set's runner is removed.
    """
    garm = MemoryGarm()
    _, new, (job,) = drain_with_jobs(garm)
    live_job = garm.start_job_when_ready(garm.by_name(new).id)
    live_runners = [r.name for r in garm.runners_of(new)]
    asked: list[str] = []

    def everything(busy: Sequence[BusyRunner]) -> frozenset[str]:
        asked.extend(runner.name for runner in busy)
        return frozenset(garm.runners)

    drain(garm, everything)

    assert asked == [job]
    assert live_job in live_runners
    assert removals(garm) == [job]
    assert [r.name for r in garm.runners_of(new)] == live_runners


# The edges of the finished-job path: waiting for GARM, who is asked, refusals -----------------


class Waits:
    """A `sleep` for the pass: GARM's clock moves, its worker runs from the `removes_at`-th wait.

    Before that GARM is still removing the runners (its worker has not run). A pass that waits
    more than `SETTLE_LIMIT` allows would wait forever: it fails the test instead.
    """

    def __init__(self, garm: MemoryGarm, removes_at: int | None = 1) -> None:
        self.garm = garm
        self.removes_at = removes_at
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        """Wait `seconds` of GARM's time."""
        self.seconds.append(seconds)
        assert len(self.seconds) <= SETTLE_LIMIT, "the pass keeps waiting"
        if self.removes_at is not None and len(self.seconds) >= self.removes_at:
            self.garm.advance(seconds)
        else:
            self.garm.now += datetime.timedelta(seconds=seconds)


def drain_waiting(garm: MemoryGarm, waits: Waits) -> ReconcileReport:
    """One pass with the new labels asking GARM's GitHub, waiting through `waits`."""
    return reconcile(
        garm,
        [make_spec(labels=NEW_LABELS)],
        now=garm.now,
        settings=SETTINGS,
        sweep_orphans=True,
        finished_at_github=garm.ask_github(),
        sleep=waits,
    )


def infos(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The reconciler's log lines."""
    return [r.getMessage() for r in caplog.records if r.name == "scaleset_reconciler.executor"]


def test_a_removal_garm_completes_at_once_costs_one_wait_and_is_logged(
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: the retired set's only job finished; a job runs on the live set.

    Act: a pass that asks GitHub and waits. Assert: one 2 s wait (the live set's runner is
    not waited for), the set deleted, and the removal and the wait logged word for word.
    """
    garm = MemoryGarm()
    old, new, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)
    assert garm.start_job_when_ready(garm.by_name(new).id) is not None
    waits = Waits(garm)
    caplog.set_level(logging.INFO, logger="scaleset_reconciler")

    drain_waiting(garm, waits)

    assert waits.seconds == [2.0]
    assert garm.names() == {new}
    logged = infos(caplog)
    removed = (
        f"scale sets: removed runner {job!r} of {old!r}: GitHub no longer lists it (job ended)"
    )
    assert removed in logged
    assert "scale sets: GARM removed the runners within 2 s" in logged
    assert logged.index(removed) < logged.index("scale sets: GARM removed the runners within 2 s")


def test_the_pass_waits_in_steps_until_garm_has_removed_the_runner(
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: the retired set's job finished; GARM removes the runner only at the third wait.

    Act: a pass that waits. Assert: three 2 s waits, the time logged, the set deleted in it.
    """
    garm = MemoryGarm()
    _, new, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)
    waits = Waits(garm, removes_at=3)
    caplog.set_level(logging.INFO, logger="scaleset_reconciler")

    report = drain_waiting(garm, waits)

    assert waits.seconds == [2.0, 2.0, 2.0]
    assert "scale sets: GARM removed the runners within 6 s" in infos(caplog)
    assert garm.names() == {new}
    assert report.spec("small").phase is Phase.ACTIVE


def test_the_pass_stops_waiting_after_20_s_and_the_next_pass_deletes_the_set(
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: the retired set's job finished; GARM does not remove the runner while waited on.

    Act: a pass that waits, then (GARM's worker having run) another. Assert: ten 2 s waits,
    the give-up logged, the set kept and draining, the runner removed once; the next pass
    deletes the set without asking GitHub again.
    """
    garm = MemoryGarm()
    old, new, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)
    waits = Waits(garm, removes_at=None)
    caplog.set_level(logging.INFO, logger="scaleset_reconciler")

    first = drain_waiting(garm, waits)
    kept = garm.names()
    asked = len([c for c in garm.calls if c[0] == "github"])
    garm.advance(60)
    second = drain_waiting(garm, Waits(garm))

    assert waits.seconds == [2.0] * 10
    assert "scale sets: GARM is still removing runners; the next pass deletes their sets" in infos(
        caplog
    )
    assert kept == {old, new}
    assert first.spec("small").phase is Phase.DRAINING
    assert removals(garm) == [job]
    assert asked == 1
    assert len([c for c in garm.calls if c[0] == "github"]) == asked
    assert garm.names() == {new}
    assert second.spec("small").phase is Phase.ACTIVE


def test_github_is_asked_only_about_running_active_runners_with_a_github_id():
    """Arrange: three jobs on the retired set, none ended at GitHub.

    One runner GARM is already deleting (its consolidation noticed the end), one without a
    GitHub id, one with GitHub id 1.
    Act: a pass asking GitHub. Assert: GitHub was asked about the last one only, with its id
    and its scale set's entity.
    """
    garm = MemoryGarm()
    _, _, (deleting, unknown, first) = drain_with_jobs(garm, jobs=3)
    garm.finish_job(deleting)
    garm.advance(300)  # GARM's consolidation: the runner is pending_delete, still listed
    assert garm.runners[deleting].status == "pending_delete"
    garm.runners[unknown].agent_id = 0
    garm.runners[first].agent_id = 1
    asked: list[BusyRunner] = []

    def nothing_ended(busy: Sequence[BusyRunner]) -> frozenset[str]:
        asked.extend(busy)
        return frozenset()

    drain(garm, nothing_ended)

    assert asked == [BusyRunner(first, 1, EntityKind.REPOSITORY, "fake-org/fake-repo")]


def test_github_is_not_asked_about_a_busy_runner_of_a_set_not_retired_yet():
    """Arrange: a spec keeping an idle runner changes labels; a job runs on the old set.

    The old set still serves in the hand-over; the pass lists runners to see the new set's
    come online.
    Act: a pass asking GitHub. Assert: runners were listed, GitHub was not asked; the old set
    keeps its runner.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])
    changed = make_spec(labels=NEW_LABELS, min_idle_runners=1)
    run(garm, [changed])
    old = live_name(make_spec(min_idle_runners=1))
    job = garm.start_job_when_ready(garm.by_name(old).id)
    assert job is not None
    listed = len([c for c in garm.calls if c[0] == "list_instances"])

    reconcile(
        garm,
        [changed],
        now=garm.now,
        settings=SETTINGS,
        sweep_orphans=True,
        finished_at_github=garm.ask_github(),
    )

    assert len([c for c in garm.calls if c[0] == "list_instances"]) == listed + 1
    assert [c for c in garm.calls if c[0] == "github"] == []
    assert job in [r.name for r in garm.runners_of(old)]


def test_a_refused_removal_of_a_finished_runner_is_the_specs_error_and_nothing_waits():
    """Arrange: the retired set's job finished; GARM refuses to remove the runner (400).

    Act: a pass asking GitHub. Assert: the refusal is the spec's, as a failure to remove a
    runner; no wait, the set kept with its runner.
    """
    garm = MemoryGarm()
    old, _, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)
    garm.refuse("delete_instance", 400)
    waits = Waits(garm)

    report = drain_waiting(garm, waits)

    assert report.failures == [Failure("small", "remove a runner of", 400, retry=False)]
    refused = "delete_instance: HTTP 400 refused: fault injected by the test"
    assert report.spec("small").errors == [f"removing runner {job!r} of {old!r}: {refused}"]
    assert report.errors == []
    assert waits.seconds == []
    assert job in [r.name for r in garm.runners_of(old)]
