"""Measure a fleet-wide label change within the surge budget and the bound on writes per pass.

A label change on every scale set of a converged fleet at once, against the in-memory GARM of
the unit tests, in simulated time: a pass at the change (relation-changed), then one per
reconcile tick (every 60 s); GARM's worker runs every 10 s of simulated time and a runner is
idle one worker run after it boots. Each fleet runs twice: with no surge budget (every
changeover at once, the behaviour before ADR 0038) and within one. Per case it prints the
runners and scale sets before and at their peak (sampled after every worker run and every
pass) against the budget, the passes and simulated minutes until the fleet is converged, the
hand-over rounds (passes that retired an old scale set), and the most writes and the longest
wall time of one pass against `max-writes-per-pass`.

Done when (issue 37): at 100 scale sets, min idle 2 and a budget of 20 extra runners, the peak
stays at or under 220 runners and the change takes about ceil(200 / 20) = 10 hand-over rounds.
That case's bounds are checked: the script exits non-zero when they are not met. So is, for
every fleet within a budget, the peak of scale sets: at most one new set per changeover the
budget lets fly, as empty retired sets are deleted within the write bound (ADR 0038; before,
they waited for the last create: 300 sets peaked at 598, 1,000 at 1,996).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Callable

from doubles.memory_garm import WRITE_OPERATIONS, MemoryGarm  # pyright: ignore[reportMissingImports]
from garm_api.models import EntityKind  # pyright: ignore[reportMissingImports]
from scaleset_reconciler import (  # pyright: ignore[reportMissingImports]
    ReconcileReport,
    ReconcileSettings,
    reconcile,
)
from scaleset_reconciler.spec import EntityRef, ScalesetSpec  # pyright: ignore[reportMissingImports]

OLD = ("x64", "linux")
NEW = ("x64", "linux", "fleet-2")
# (scale sets, min idle, surge budget): the fleets, and 1,000 sets.
FLEETS = ((10, 2, 40), (100, 2, 20), (300, 1, 40), (1000, 1, 40))
MAX_WRITES = 50
WORKER_S = 10
TICK_S = 60
MAX_PASSES = 400
DONE_WHEN = (100, 2, 20)
DELETING = frozenset({"pending_delete", "deleting", "pending_force_delete"})


@dataclasses.dataclass
class Result:
    """What one fleet-wide change cost."""

    runners_before: int = 0
    runners_peak: int = 0
    sets_before: int = 0
    sets_peak: int = 0
    passes: int = 0
    minutes: float = 0.0
    rounds: int = 0
    most_writes: int = 0
    longest_pass_s: float = 0.0
    converged: bool = False


def main() -> int:
    """Run every fleet with and without the budget; print; check the done-when case."""
    ok = True
    for size, min_idle, budget in FLEETS:
        for surge in (0, budget):
            result = change_fleet(size, min_idle, surge)
            what = f"budget {surge:>3} extra runners" if surge else "no budget          "
            print(
                f"{size:>5} sets, min idle {min_idle}, {what}: runners "
                f"{result.runners_before} -> peak {result.runners_peak}, scale sets "
                f"{result.sets_before} -> peak {result.sets_peak}; "
                f"{'converged' if result.converged else 'NOT converged'} after "
                f"{result.passes} passes ({result.minutes:.0f} simulated min), "
                f"{result.rounds} hand-over rounds; per pass at most {result.most_writes} "
                f"writes (bound {MAX_WRITES}), {result.longest_pass_s * 1000:.0f} ms wall"
            )
            if (size, min_idle, surge) == DONE_WHEN:
                rounds = math.ceil(size * min_idle / surge)
                good = (
                    result.converged
                    and result.runners_peak <= size * min_idle + surge
                    and result.rounds <= rounds + 2
                )
                print(
                    f"  done when: peak {result.runners_peak} <= {size * min_idle + surge}, "
                    f"{result.rounds} rounds ~ ceil({size * min_idle} / {surge}) = {rounds}: "
                    f"{'met' if good else 'NOT met'}"
                )
                ok &= good
            if surge:
                sets = size + math.ceil(surge / min_idle)
                good = result.sets_peak <= sets
                verdict = "met" if good else "NOT met"
                print(f"  scale sets: peak {result.sets_peak} <= {sets}: {verdict}")
                ok &= good
            ok &= result.most_writes <= MAX_WRITES
    return 0 if ok else 1


def change_fleet(size: int, min_idle: int, surge: int) -> Result:
    """Converge `size` sets, change every one's labels, pass until converged again."""
    garm = MemoryGarm()
    settings = ReconcileSettings(changeover_surge=surge, max_writes=MAX_WRITES)
    old = [_spec(i, OLD, min_idle) for i in range(size)]
    for _ in range(MAX_PASSES):
        if _pass(garm, old, settings)[0].converged and _idle(garm) == size * min_idle:
            break
        _minute(garm, lambda: None)
    result = Result(runners_before=_runners(garm), sets_before=len(garm.rows))
    new = [_spec(i, NEW, min_idle) for i in range(size)]
    start = garm.now

    def sample() -> None:
        result.runners_peak = max(result.runners_peak, _runners(garm))
        result.sets_peak = max(result.sets_peak, len(garm.rows))

    for _ in range(MAX_PASSES):
        enabled = {row.id for row in garm.rows.values() if row.enabled}
        report, writes, wall = _pass(garm, new, settings)
        sample()
        result.passes += 1
        result.most_writes = max(result.most_writes, writes)
        result.longest_pass_s = max(result.longest_pass_s, wall)
        if any(i in garm.rows and not garm.rows[i].enabled for i in enabled):
            result.rounds += 1
        if report.converged:
            result.converged = True
            break
        _minute(garm, sample)
    result.minutes = (garm.now - start).total_seconds() / 60
    return result


def _pass(
    garm: MemoryGarm, specs: list[ScalesetSpec], settings: ReconcileSettings
) -> tuple[ReconcileReport, int, float]:
    calls = len(garm.log)
    started = time.perf_counter()
    report = reconcile(garm, specs, now=garm.now, settings=settings, sweep_orphans=True)
    wall = time.perf_counter() - started
    writes = sum(1 for call in garm.log[calls:] if call.operation in WRITE_OPERATIONS)
    return report, writes, wall


def _minute(garm: MemoryGarm, sample: Callable[[], None]) -> None:
    for _ in range(TICK_S // WORKER_S):
        garm.advance(WORKER_S)
        sample()


def _runners(garm: MemoryGarm) -> int:
    return sum(1 for runner in garm.runners.values() if runner.status not in DELETING)


def _idle(garm: MemoryGarm) -> int:
    return sum(1 for runner in garm.runners.values() if runner.runner_status == "idle")


def _spec(index: int, labels: tuple[str, ...], min_idle: int) -> ScalesetSpec:
    return ScalesetSpec(
        name=f"set-{index}",
        entity=EntityRef(EntityKind.REPOSITORY, "fake-org/fake-repo"),
        provider_name="lxd",
        labels=labels,
        image="ubuntu:22.04",
        flavor="small",
        max_runners=min_idle + 2,
        min_idle_runners=min_idle,
    )


if __name__ == "__main__":
    sys.exit(main())
