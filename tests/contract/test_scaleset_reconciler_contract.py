"""The scale-set reconciler with the real `GarmClient` against the GARM simulator over HTTP."""

from __future__ import annotations

import datetime

import pytest

from contract.conftest import PROVIDER, Garm
from garm_api import EntityKind, GarmClient, GarmUnreachable
from garm_sim import GarmSim
from scaleset_reconciler import (
    Phase,
    ReconcileReport,
    ReconcileSettings,
    reconcile,
    status_message,
)
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import EntityRef, ScalesetSpec

REPO = EntityRef(EntityKind.REPOSITORY, "fake-org/fake-repo")
OLD_LABELS = ("harness", "x64")
NEW_LABELS = ("harness", "x64", "gpu")
SETTINGS = ReconcileSettings(
    handover_grace=datetime.timedelta(seconds=60), drain_timeout=datetime.timedelta(hours=7)
)


@pytest.fixture
def client(garm: Garm) -> GarmClient:
    """A garm_api client logged in to the bootstrapped simulator."""
    return GarmClient(garm.url, garm.token, connect_timeout=2, read_timeout=5)


def make_spec(
    name: str = "small", labels: tuple[str, ...] = OLD_LABELS, **kw: object
) -> ScalesetSpec:
    """A spec for the simulator's repository and provider, one idle runner."""
    values: dict[str, object] = {
        "name": name,
        "entity": REPO,
        "provider_name": PROVIDER,
        "labels": labels,
        "image": "ubuntu:22.04",
        "flavor": "small",
        "max_runners": 3,
        "min_idle_runners": 1,
    }
    return ScalesetSpec(**(values | kw))  # type: ignore[arg-type]


def sim_now(sim: GarmSim) -> datetime.datetime:
    """GARM's clock (the simulator's), which the charm shares on the same machine."""
    return datetime.datetime.fromtimestamp(sim.clock.now(), datetime.UTC)


def run(client: GarmClient, sim: GarmSim, specs: list[ScalesetSpec]) -> ReconcileReport:
    """One reconcile pass at the simulator's time."""
    return reconcile(client, specs, now=sim_now(sim), settings=SETTINGS, sweep_orphans=True)


def names(sim: GarmSim) -> set[str]:
    """The names of all scale sets in the simulator."""
    return {s.name for s in sim.state.scalesets.values()}


def converge(client: GarmClient, sim: GarmSim, specs: list[ScalesetSpec]) -> ReconcileReport:
    """Run passes a minute apart until converged (at most 6)."""
    report = run(client, sim, specs)
    for _ in range(6):
        if report.converged:
            break
        sim.advance(61)
        report = run(client, sim, specs)
    assert report.converged, report
    return report


def test_label_change_with_a_running_job_finishes_it_on_the_old_generation(
    garm: Garm, client: GarmClient
):
    """Arrange: `small` converged with a job running on its runner.

    Act: change the labels; passes a minute apart while the job runs; finish the job; passes
    until GARM's consolidation (5 minutes) has noticed the ephemeral runner is gone.
    Assert: the new generation is created and serves; the old one is retired (disabled, 0/0)
    but kept while the job runs, with the job's runner untouched; it still drains until GARM
    notices the end of the job (a disabled set has no listener to hear it), then it is deleted
    and confirmed gone.
    """
    sim = garm.sim
    converge(client, sim, [make_spec()])
    old, new = live_name(make_spec()), live_name(make_spec(labels=NEW_LABELS))
    runner = sim.start_job(old)

    run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(61)
    handover = run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(60)
    draining = run(client, sim, [make_spec(labels=NEW_LABELS)])

    assert handover.spec("small").phase is Phase.HANDING_OVER
    retired = sim.scaleset(old)
    assert (retired.enabled, retired.min_idle_runners, retired.max_runners) == (False, 0, 0)
    assert sim.scaleset(new).enabled
    assert draining.spec("small").phase is Phase.DRAINING
    assert [i.name for i in sim.instances(old)] == [runner]
    assert status_message(draining).startswith("'small' labels changing: draining 1 runner (")

    sim.finish_job(runner)
    sim.advance(1)
    unseen = run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(300)
    run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(1)
    done = run(client, sim, [make_spec(labels=NEW_LABELS)])

    assert unseen.spec("small").phase is Phase.DRAINING
    assert names(sim) == {new}
    assert done.converged


def test_flip_back_during_the_drain_reenables_the_old_generation(garm: Garm, client: GarmClient):
    """Arrange: labels changed and handed over, a job draining on the old generation.

    Act: change the labels back; passes past the grace.
    Assert: no third scale set; the old generation is enabled again with its counts and no
    retired-at; the newer one is retired and deleted once an idle runner of the old one is
    online (its busy runner serves its job, not the next one); the job kept running throughout.
    """
    sim = garm.sim
    converge(client, sim, [make_spec()])
    old = live_name(make_spec())
    # GitHub counts the running job as assigned to the old scale set (the simulator raises its
    # desired count): once it is enabled again, GARM aims for min idle plus that job, so an idle
    # runner boots beside the busy one.
    runner = sim.start_job(old)
    run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(61)
    run(client, sim, [make_spec(labels=NEW_LABELS)])
    creates_before = sim.count("POST", "/api/v1/repositories/{id}/scalesets")

    back = run(client, sim, [make_spec()])

    restored = sim.scaleset(old)
    assert (restored.enabled, restored.min_idle_runners, restored.max_runners) == (True, 1, 3)
    marker = parse_marker(restored.extended_state)
    assert marker is not None
    assert marker.retired_at is None
    assert back.spec("small").phase is Phase.CREATING
    sim.advance(61)
    run(client, sim, [make_spec()])
    final = back
    for _ in range(12):
        sim.advance(10)
        final = run(client, sim, [make_spec()])
        if final.converged:
            break
    assert names(sim) == {old}
    assert [i.runner_status for i in sim.instances(old)].count("idle") == 1
    assert final.converged
    assert sim.count("POST", "/api/v1/repositories/{id}/scalesets") == creates_before
    assert runner in {i.name for i in sim.instances(old)}


def test_drain_deadline_force_removes_the_runner_and_says_so(garm: Garm, client: GarmClient):
    """Arrange: a job runs on the old generation, which is retired.

    Act: a pass just before the drain deadline, one after it, then passes.
    Assert: nothing removed before; after it the runner is force-removed (the report counts
    the stopped job and the status says so); then the old generation is deleted.
    """
    sim = garm.sim
    converge(client, sim, [make_spec()])
    old, new = live_name(make_spec()), live_name(make_spec(labels=NEW_LABELS))
    runner = sim.start_job(old)
    run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(61)
    run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(7 * 3600 - 10)

    before = run(client, sim, [make_spec(labels=NEW_LABELS)])
    assert before.spec("small").phase is Phase.DRAINING
    assert sim.count("DELETE", "/api/v1/instances/{name}") == 0
    sim.advance(11)
    forcing = run(client, sim, [make_spec(labels=NEW_LABELS)])

    assert forcing.spec("small").phase is Phase.FORCING
    assert forcing.spec("small").jobs_stopped == 1
    assert "stopping 1 runner and its job" in status_message(forcing)
    assert sim.count("DELETE", "/api/v1/instances/{name}") == 1
    done = forcing
    for _ in range(3):
        sim.advance(1)
        done = run(client, sim, [make_spec(labels=NEW_LABELS)])
    assert runner not in {i.name for i in sim.instances()}
    assert names(sim) == {new}
    assert done.converged


def test_outage_mid_changeover_stops_the_pass_and_the_next_one_resumes(
    garm: Garm, client: GarmClient
):
    """Arrange: a changeover handed over. Act: a pass while GARM refuses connections, then passes.

    Assert: the pass raises GarmUnreachable and changes nothing; afterwards the changeover
    resumes from what GARM shows and completes.
    """
    sim = garm.sim
    converge(client, sim, [make_spec()])
    new = live_name(make_spec(labels=NEW_LABELS))
    run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(61)
    writes = sim.write_count()

    with sim.refusing_connections(), pytest.raises(GarmUnreachable):
        run(client, sim, [make_spec(labels=NEW_LABELS)])

    assert sim.write_count() == writes
    report = None
    for _ in range(4):
        sim.advance(61)
        report = run(client, sim, [make_spec(labels=NEW_LABELS)])
    assert names(sim) == {new}
    assert report is not None
    assert report.converged


def test_server_error_on_one_spec_is_reported_and_the_rest_proceed(garm: Garm, client: GarmClient):
    """Arrange: two new specs; the simulator answers 500 to the first create.

    Act: a pass. Assert: one spec errors with the 500 reported; the other is created.
    """
    sim = garm.sim
    sim.fault("status", method="POST", path="/api/v1/repositories/{id}/scalesets", times=1)

    report = run(client, sim, [make_spec("a"), make_spec("b")])

    assert report.spec("a").phase is Phase.ERROR
    assert "500" in report.spec("a").errors[0]
    assert report.spec("b").phase is Phase.CREATING
    assert names(sim) == {live_name(make_spec("b"))}


def test_delete_kept_by_github_is_reported_and_retried(garm: Garm, client: GarmClient):
    """Arrange: a retired, empty old generation; GitHub answers 500 to deletes (C9).

    Act: a pass; then GitHub recovers and another pass.
    Assert: the first reports that GARM kept it; the retry a minute later deletes it for good.
    """
    sim = garm.sim
    converge(client, sim, [make_spec(min_idle_runners=0)])
    old = live_name(make_spec())
    run(client, sim, [make_spec(labels=NEW_LABELS, min_idle_runners=0)])
    sim.advance(61)
    run(client, sim, [make_spec(labels=NEW_LABELS, min_idle_runners=0)])
    sim.github.delete_status = 500

    kept = run(client, sim, [make_spec(labels=NEW_LABELS, min_idle_runners=0)])

    assert "kept it" in kept.spec("small").errors[0]
    assert old in names(sim)
    sim.github.delete_status = 204
    sim.advance(60)  # a kept delete is retried a minute later, then 2, 4... minutes
    run(client, sim, [make_spec(labels=NEW_LABELS, min_idle_runners=0)])
    assert old not in names(sim)


def test_dropped_labels_block_and_keep_the_old_generation_serving(garm: Garm, client: GarmClient):
    """Arrange: GitHub drops the `gpu` label. Act: change labels to include it; passes.

    Assert: blocked naming `gpu`; the old generation stays enabled with its counts.
    """
    sim = garm.sim
    converge(client, sim, [make_spec()])
    sim.github.dropped_labels = {"gpu"}

    run(client, sim, [make_spec(labels=NEW_LABELS)])
    sim.advance(120)
    report = run(client, sim, [make_spec(labels=NEW_LABELS)])

    assert report.spec("small").phase is Phase.BLOCKED
    assert "gpu" in report.spec("small").message
    old = sim.scaleset(live_name(make_spec()))
    assert old.enabled
    assert old.max_runners == 3


def test_forty_converged_scale_sets_cost_at_most_five_requests_and_no_writes(
    garm: Garm, client: GarmClient
):
    """Arrange: 40 specs converged. Act: one more pass.

    Assert: at most 5 requests reach GARM, none of them writes.
    """
    sim = garm.sim
    specs = [make_spec(f"set-{i}", min_idle_runners=0) for i in range(40)]
    converge(client, sim, specs)
    sim.reset_log()

    report = run(client, sim, specs)

    assert len(sim.requests) <= 5
    assert sim.write_count() == 0
    assert report.writes == 0
    assert report.converged


def test_image_change_rolls_every_idle_runner_over_http(garm: Garm, client: GarmClient):
    """Arrange: `small` converged with min idle 2 and two idle runners; then the image changes.

    Act: reconcile passes a minute apart through `GarmClient` (the simulator's worker between).

    Assert: idle runners never below 2; every old runner replaced by unforced deletes; the scale
    set back at min 2 / max 3 with the new image and no `refresh-from`; status said refreshing.
    """
    spec = make_spec(min_idle_runners=2)
    converge(client, garm.sim, [spec])
    garm.sim.advance(61)
    old = {i.name for i in garm.sim.instances(live_name(spec))}
    changed = make_spec(min_idle_runners=2, image="ubuntu:24.04")
    idle: list[int] = []
    texts: set[str] = set()
    forced: list[bool] = []
    sent = client.delete_instance

    def delete_instance(name: str, *, force: bool = True) -> None:
        forced.append(force)
        sent(name, force=force)

    client.delete_instance = delete_instance  # type: ignore[method-assign]
    for _ in range(12):
        report = run(client, garm.sim, [changed])
        texts.add(status_message(report))
        garm.sim.advance(61)
        idle.append(sum(i.runner_status == "idle" for i in garm.sim.instances(live_name(spec))))
        if report.spec("small").phase is Phase.ACTIVE:
            break

    scaleset = garm.sim.scaleset(live_name(spec))
    marker = parse_marker(scaleset.extended_state)
    assert len(old) == 2
    assert min(idle) >= 2
    assert not {i.name for i in garm.sim.instances(live_name(spec))} & old
    assert (scaleset.min_idle_runners, scaleset.max_runners, scaleset.image) == (
        2,
        3,
        "ubuntu:24.04",
    )
    assert marker is not None
    assert marker.refresh_from is None
    assert "'small': refreshing 2 outdated runners" in texts
    assert forced == [False, False]


def test_refresh_never_removes_a_runner_with_a_job_over_http(garm: Garm, client: GarmClient):
    """Arrange: `small` converged (min idle 1); its runner takes a job; the image changes.

    Act: reconcile passes a minute apart.

    Assert: the busy runner is never asked to go (no DELETE of it); it still runs its job; the
    refresh ends with the counts back.
    """
    spec = make_spec()
    converge(client, garm.sim, [spec])
    garm.sim.advance(61)
    busy = garm.sim.start_job(live_name(spec))
    changed = make_spec(image="ubuntu:24.04")
    for _ in range(12):
        report = run(client, garm.sim, [changed])
        garm.sim.advance(61)
        if report.spec("small").phase is Phase.ACTIVE:
            break

    running = {i.name: i.runner_status for i in garm.sim.instances(live_name(spec))}
    assert running[busy] == "active"
    assert not [c for c in garm.sim.calls() if c.startswith("DELETE") and busy in c]
    assert garm.sim.scaleset(live_name(spec)).min_idle_runners == 1
