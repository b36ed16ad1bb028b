"""A pass bounded in writes stays bounded in wall time, against the simulator over HTTP.

GARM registers a new scale set at GitHub before it answers the create, so a create waits on
GitHub; the simulator injects that wait (`CREATE_S`) and GARM's own (`OTHER_S`, on every other
request). A fleet created at once with `max_writes` (ADR 0038) makes at most that many writes
per pass, so a pass takes at most `max_writes` creates' worth of waiting plus its reads'; without
the bound the same pass waits on every create.
"""

from __future__ import annotations

import datetime
import time

from garm_api import EntityKind, GarmClient
from garm_sim import GarmSim
from scaleset_reconciler import ReconcileSettings, reconcile
from scaleset_reconciler.spec import EntityRef, ScalesetSpec

PROVIDER = "openstack-bench"
CREATE_S = 0.3
OTHER_S = 0.01
SETS = 20
MAX_WRITES = 6
# A pass reads at most: scale sets (twice, with a confirming list), providers, entities,
# templates, instances.
READS = 6
# The simulator's and the client's own time per request, on a loaded machine.
SLACK_S = 1.0


def _specs() -> list[ScalesetSpec]:
    return [
        ScalesetSpec(
            name=f"set-{i}",
            entity=EntityRef(EntityKind.REPOSITORY, "bench/repo"),
            provider_name=PROVIDER,
            labels=("linux", "x64"),
            image="ubuntu:24.04",
            flavor="small",
            max_runners=2,
        )
        for i in range(SETS)
    ]


def _timed_pass(max_writes: int) -> tuple[float, int, int]:
    """One pass over `SETS` new specs with GitHub's and GARM's latencies; (wall, writes, sets)."""
    with GarmSim([PROVIDER]) as sim:
        client = GarmClient(sim.url, sim.bootstrap())
        sim.seed_entity("repository", name="repo", owner="bench")
        create = "/api/v1/repositories/*/scalesets"
        sim.fault("latency", method="POST", path=create, delay=CREATE_S)
        sim.fault("latency", delay=OTHER_S)
        sim.reset_log()
        settings = ReconcileSettings(max_writes=max_writes)
        started = time.perf_counter()
        reconcile(
            client,
            _specs(),
            now=datetime.datetime.now(datetime.UTC),
            settings=settings,
            sweep_orphans=True,
        )
        wall = time.perf_counter() - started
        return wall, sim.write_count(), len(client.list_scalesets())


def test_a_bounded_pass_stays_within_its_writes_wall_time():
    """Arrange: the simulator; creates wait 0.15 s on GitHub, other calls 0.01 s; 20 new specs.

    Act: one pass with at most 6 writes. Assert: 6 writes (3 creates and their markers), 3
    scale sets, and a wall time under 6 creates' and 6 reads' waiting plus 0.5 s.
    """
    wall, writes, created = _timed_pass(MAX_WRITES)

    bound = MAX_WRITES * CREATE_S + READS * OTHER_S + SLACK_S
    assert (writes, created) == (MAX_WRITES, MAX_WRITES // 2)
    assert wall < bound, f"{wall:.2f} s >= {bound:.2f} s"


def test_without_the_bound_the_same_pass_waits_on_every_create():
    """Arrange: as above. Act: one pass without a bound.

    Assert: every set created (40 writes), and the pass took longer than the bounded pass's
    bound: what the bound saves is real.
    """
    wall, writes, created = _timed_pass(0)

    assert (writes, created) == (2 * SETS, SETS)
    assert wall > MAX_WRITES * CREATE_S + READS * OTHER_S + SLACK_S
