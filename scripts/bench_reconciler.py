"""Measure the scale-set reconciler: planning CPU, requests per pass, changeover wall time.

- Planning: `prepare` + `group` + `needs` + `plan` over N specs against a GARM listing N live
  scale sets (converged) or N live + N retired, draining predecessors (mid-changeover). Best CPU
  time of several runs (`time.process_time`). The target is well under 1 s for 1,000 specs.
- Requests: one full `reconcile` pass against the in-memory GARM of the unit tests, converged,
  for several sizes: requests and writes (target: at most 5 and 0). A converged reconcile tick
  makes exactly this pass.
- Changeover wall time: a label change with the charm's default settings (grace 60 s, drain
  7 h, min-idle 1), in simulated time, with a pass at the change (relation-changed) and then
  one per reconcile tick (every 60 s plus the average jitter of 3 s) or, without the tick, one
  per update-status (every 300 s): until only the new scale set remains, and how long the old
  one outlived its last job. GARM's worker runs every 10 s of simulated time. Each case runs
  twice: the charm relying on GARM alone, and the charm asking GitHub whether the retired set's
  busy runner still exists (ADR 0015; GitHub drops it when its job ends).

Prints results; exits non-zero only if a request budget is exceeded.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import time
from typing import Any

from doubles.memory_garm import MemoryGarm  # pyright: ignore[reportMissingImports]
from garm_api.models import EntityKind, ScaleSet  # pyright: ignore[reportMissingImports]
from scaleset_reconciler import reconcile  # pyright: ignore[reportMissingImports]
from scaleset_reconciler.grouping import group  # pyright: ignore[reportMissingImports]
from scaleset_reconciler.marker import Marker, config_hash  # pyright: ignore[reportMissingImports]
from scaleset_reconciler.naming import (  # pyright: ignore[reportMissingImports]
    live_name,
    spec_generation,
)
from scaleset_reconciler.needs import Observed, needs  # pyright: ignore[reportMissingImports]
from scaleset_reconciler.plan import plan  # pyright: ignore[reportMissingImports]
from scaleset_reconciler.prepare import prepare  # pyright: ignore[reportMissingImports]
from scaleset_reconciler.settings import ReconcileSettings  # pyright: ignore[reportMissingImports]
from scaleset_reconciler.spec import EntityRef, ScalesetSpec  # pyright: ignore[reportMissingImports]

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)
SETTINGS = ReconcileSettings()
RUNS = 5
PLAN_BUDGET_S = 1.0
REQUEST_BUDGET = 5


def main() -> int:
    """Run every measurement and print it."""
    ok = True
    for size in (100, 1000, 5000):
        converged = _best_cpu(lambda n=size: _plan(n, draining=False))
        draining = _best_cpu(lambda n=size: _plan(n, draining=True))
        print(
            f"plan {size:>5} specs: converged {converged * 1000:7.1f} ms CPU, "
            f"mid-changeover {draining * 1000:7.1f} ms CPU"
        )
        if size == 1000:
            ok &= draining < PLAN_BUDGET_S
    for size in (10, 40, 100, 200, 1000):
        requests, writes, cpu = _converged_pass(size)
        print(
            f"converged pass over {size:>4} scale sets: {requests} requests, {writes} writes, "
            f"{cpu * 1000:.1f} ms CPU"
        )
        ok &= requests <= REQUEST_BUDGET and writes == 0
    for asks, how in ((False, "GARM alone"), (True, "asking GitHub")):
        for job, seconds in JOBS.items():
            for cadence, interval in CADENCES.items():
                result = _changeover(job_seconds=seconds, interval=interval, ask_github=asks)
                print(f"label change, {how + ',':<14} {job:<25} {cadence:<25} {result}")
    return 0 if ok else 1


def _spec(index: int, labels: tuple[str, ...] = ("x64", "linux"), min_idle: int = 0) -> Any:
    return ScalesetSpec(
        name=f"set-{index}",
        entity=EntityRef(EntityKind.REPOSITORY, "fake-org/fake-repo"),
        provider_name="lxd",
        labels=labels,
        image="ubuntu:22.04",
        flavor="small",
        max_runners=3,
        min_idle_runners=min_idle,
    )


def _listed(scaleset_id: int, name: str, labels: tuple[str, ...], marker: Any) -> Any:
    body = {
        "runner_prefix": "garm",
        "created_at": "2026-11-29T22:50:07.06260339Z",
        "updated_at": "2026-11-29T22:50:07.063302244Z",
        "id": scaleset_id,
        "scale_set_id": scaleset_id,
        "name": name,
        "disable_update": False,
        "state": "pending_create",
        "provider_name": "lxd",
        "max_runners": 3,
        "image": "ubuntu:22.04",
        "flavor": "small",
        "os_type": "linux",
        "os_arch": "amd64",
        "enabled": not marker.retired,
        "enable_shell": False,
        "generation": 0,
        "endpoint": {"created_at": "0001-01-01T00:00:00Z", "updated_at": "0001-01-01T00:00:00Z"},
        "runner_bootstrap_timeout": 20,
        "github-runner-group": "Default",
        "tags": [{"id": f"t-{label}", "name": label} for label in labels],
        "status_messages": None,
        "repo_id": "c35919a8-8f26-4fc5-ba84-a7386cbd45c8",
        "repo_name": "fake-org/fake-repo",
        "template_id": 1,
        "extended_state": marker.render(),
    }
    if marker.retired:
        body.pop("max_runners")
    return ScaleSet.from_wire(body)


def _world(size: int, *, draining: bool) -> tuple[list[Any], list[Any]]:
    specs = [_spec(i) for i in range(size)]
    observed: list[Any] = []
    for i, spec in enumerate(specs):
        marker = Marker(spec.name, config_hash(spec), generation=spec_generation(spec))
        observed.append(_listed(2 * i + 1, live_name(spec), spec.labels, marker))
        if draining:
            old = _spec(i, ("x64",))
            retired = Marker(
                spec.name, config_hash(spec), retired_at=NOW, generation=spec_generation(old)
            )
            observed.append(_listed(2 * i + 2, live_name(old), old.labels, retired))
    return specs, observed


_WORLDS: dict[tuple[int, bool], tuple[list[Any], list[Any]]] = {}


def _plan(size: int, *, draining: bool) -> None:
    key = (size, draining)
    if key not in _WORLDS:
        _WORLDS[key] = _world(size, draining=draining)
    specs, observed = _WORLDS[key]
    prepared = prepare(specs, SETTINGS)
    grouping = group(prepared, observed)
    needs(prepared, grouping, sweep_orphans=True)
    instances = {s.id: () for s in observed} if draining else None
    plan(
        prepared,
        grouping,
        Observed(instances=instances),
        now=NOW,
        settings=SETTINGS,
        sweep_orphans=True,
    )


def _best_cpu(work: Any) -> float:
    samples: list[float] = []
    for _ in range(RUNS):
        start = time.process_time()
        work()
        samples.append(time.process_time() - start)
    return min(samples)


def _converged_pass(size: int) -> tuple[int, int, float]:
    garm = MemoryGarm()
    specs = [_spec(i) for i in range(size)]
    reconcile(garm, specs, now=garm.now, settings=SETTINGS, sweep_orphans=True)
    start = time.process_time()
    report = reconcile(garm, specs, now=garm.now, settings=SETTINGS, sweep_orphans=True)
    return report.requests, report.writes, time.process_time() - start


JOBS = {
    "no job:": 0,
    "a 10-minute job:": 600,
    "a job past the deadline:": 8 * 3600,
}
# Jobs end at no particular moment of the pass schedule (not on a multiple of 60 or 300 s).
JOB_END_OFFSET = 31
CADENCES = {
    "with the tick (1m):": 63,
    "without (update-status):": 300,
}
WORKER_SECONDS = 10


@dataclasses.dataclass(frozen=True)
class Changeover:
    """How one simulated label change went."""

    seconds: int
    passes: int
    after_last_job: int | None

    def __str__(self) -> str:
        """E.g. `done in 2m06s, 3 passes; old set gone 1m03s after its last job`."""
        text = f"done in {_clock(self.seconds)}, {self.passes} passes"
        if self.after_last_job is not None:
            text += f"; old set gone {_clock(self.after_last_job)} after its last job"
        return text


def _changeover(*, job_seconds: int, interval: int, ask_github: bool) -> Changeover:
    """Run one label change in simulated time: a pass at the change, then one per interval.

    Asking GitHub, a pass that removes finished runners waits (in simulated time) for GARM.
    """
    garm = MemoryGarm()
    before = [_spec(0, min_idle=1)]
    after = [_spec(0, ("x64", "gpu"), min_idle=1)]
    _settle(garm, before)
    old = next(iter(garm.rows.values()))
    job = garm.start_job_when_ready(old.id) if job_seconds else None
    start = garm.now
    job_ended: datetime.datetime | None = None
    passes = 0
    while passes < 1000:
        passes += 1
        reconcile(
            garm,
            after,
            now=garm.now,
            settings=SETTINGS,
            sweep_orphans=True,
            finished_at_github=garm.ask_github() if ask_github else None,
            sleep=garm.advance if ask_github else None,
        )
        if old.id not in garm.rows:
            gone = garm.now
            since_job = int((gone - job_ended).total_seconds()) if job_ended else None
            return Changeover(int((gone - start).total_seconds()), passes, since_job)
        for _ in range(interval // WORKER_SECONDS):
            garm.advance(WORKER_SECONDS)
            if (
                job is not None
                and (garm.now - start).total_seconds() >= job_seconds + JOB_END_OFFSET
            ):
                if job in garm.runners:
                    garm.finish_job(job)
                job, job_ended = None, garm.now
        garm.advance(interval % WORKER_SECONDS)
    raise RuntimeError("the changeover did not finish")


def _settle(garm: Any, specs: list[Any]) -> None:
    """Converge `specs` with their idle runners online."""
    for _ in range(5):
        reconcile(garm, specs, now=garm.now, settings=SETTINGS, sweep_orphans=True)
        garm.advance(WORKER_SECONDS)


def _clock(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


if __name__ == "__main__":
    sys.exit(main())
