"""Measure a rolling refresh of 40 idle runners against its bound (ADR 0022).

A scale set with min idle 40 (max 45) settles with 40 idle runners in the GARM simulator
(real HTTP, frozen clock: runners boot in `BOOT` seconds of its clock). Its image changes;
reconcile passes run once per reconcile tick (`TICK`) through `GarmClient`, the simulator's
worker in between, until no runner made before the change is left and the pass is converged.
The time taken, in the simulator's clock, is compared with (40 / surge) x (runner boot + one
tick) for surge 1, 2 and 5, and the fewest idle runners seen with min idle (40).

Prints one line per surge; exits non-zero when a refresh takes longer than its bound, leaves an
outdated runner, or lets idle runners drop below min idle. About 2 s of CPU.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import sys
import time
from typing import Any

from contract.conftest import PROVIDER, bootstrap_over_http  # pyright: ignore[reportMissingImports]
from garm_api import GarmClient  # pyright: ignore[reportMissingImports]
from garm_api.models import EntityKind  # pyright: ignore[reportMissingImports]
from garm_sim import GarmSim  # pyright: ignore[reportMissingImports]
from scaleset_reconciler import Phase, ReconcileSettings, reconcile  # pyright: ignore[reportMissingImports]
from scaleset_reconciler.spec import EntityRef, ScalesetSpec  # pyright: ignore[reportMissingImports]

RUNNERS = 40
BOOT = 90.0
TICK = 63.0  # the reconcile tick: every 60 s plus its average jitter
SURGES = (1, 2, 5)
NEW_IMAGE = "ubuntu:24.04-patched"


def main() -> int:
    """Refresh 40 idle runners at each surge; print time against the bound."""
    ok = True
    for surge in SURGES:
        started = time.process_time()
        took, lowest, left = refresh(surge)
        cpu = time.process_time() - started
        bound = math.ceil(RUNNERS / surge) * (BOOT + TICK)
        fits = took <= bound and lowest >= RUNNERS and left == 0
        ok &= fits
        print(
            f"refresh of {RUNNERS} idle runners, surge {surge}: {took:6.0f} s "
            f"(bound (40/{surge}) x ({BOOT:.0f} s boot + {TICK:.0f} s tick) = {bound:6.0f} s), "
            f"idle never below {lowest}, {left} outdated left, {cpu:4.1f} s CPU"
            f"{'' if fits else '  <- OVER'}"
        )
    return 0 if ok else 1


def refresh(surge: int) -> tuple[float, int, int]:
    """One refresh at `surge`: (seconds of GARM time, fewest idle runners seen, outdated left)."""
    settings = ReconcileSettings(refresh_surge=surge)
    with GarmSim([PROVIDER], frozen_clock=True, boot_seconds=BOOT) as sim:
        garm = bootstrap_over_http(sim)
        client = GarmClient(garm.url, garm.token, connect_timeout=2, read_timeout=30)
        spec = _spec("ubuntu:22.04")
        for _ in range(10):
            _pass(client, sim, spec, settings)
            sim.advance(TICK)
        assert _idle(client) == RUNNERS, "the scale set did not settle"
        changed = dataclasses.replace(spec, image=NEW_IMAGE)
        changed_at = _now(sim)
        lowest = RUNNERS
        for _ in range(4 * RUNNERS):
            report = _pass(client, sim, changed, settings)
            lowest = min(lowest, _idle(client))
            if report.spec(spec.name).phase is Phase.ACTIVE and not _outdated(client, changed_at):
                break
            sim.advance(TICK)
            lowest = min(lowest, _idle(client))
        took = (_now(sim) - changed_at).total_seconds()
        return took, lowest, _outdated(client, changed_at)


def _spec(image: str) -> Any:
    return ScalesetSpec(
        name="big",
        entity=EntityRef(EntityKind.REPOSITORY, "fake-org/fake-repo"),
        provider_name=PROVIDER,
        labels=("x64", "linux"),
        image=image,
        flavor="small",
        max_runners=RUNNERS + 5,
        min_idle_runners=RUNNERS,
    )


def _pass(client: Any, sim: Any, spec: Any, settings: Any) -> Any:
    return reconcile(client, [spec], now=_now(sim), settings=settings, sweep_orphans=True)


def _now(sim: Any) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(sim.clock.now(), datetime.UTC)


def _idle(client: Any) -> int:
    return sum(1 for i in client.list_instances() if i.runner_status == "idle")


def _outdated(client: Any, changed_at: datetime.datetime) -> int:
    return sum(1 for i in client.list_instances() if i.created_at < changed_at)


if __name__ == "__main__":
    sys.exit(main())
