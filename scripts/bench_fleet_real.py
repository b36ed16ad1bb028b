"""Measure a fleet-wide label change on a real GARM v0.2.1 binary at 50 scale sets.

The real binary runs as a plain process on loopback with SQLite, the fake GitHub and the
contract suite's fake provider (`tests/contract/real_garm.py`). The charm's scale-set pass
(`scaleset_reconciler.reconcile` through `GarmClient`, with the settings the charm derives
from its default config: the surge budget `changeover-surge` and `max-writes-per-pass`)
converges 50 scale sets of min idle 1, then every set's labels change at once and passes run
until the fleet is converged again. The script acts as each runner GARM boots: it reports
`installing`, then `idle`, through GARM's callback URL with the instance's token, as GARM's
install script does on a VM.

Time: GARM's own is real (its worker scales every few seconds). Between passes the script
waits until GARM's runners match what each scale set asks for, then moves the charm's clock on
by one reconcile tick (60 s), so the hand-over grace (60 s) passes in a few seconds of wall
time, as in `tests/contract/test_targets_short_names.py`.

Printed: runners (GARM's runners not being deleted) and scale sets before and at their peak,
sampled after every pass and while GARM settles, against the budget; passes, charm-clock
minutes and wall time until converged; the most writes and the longest wall time of one pass
against `max-writes-per-pass`. Exits non-zero when the change does not converge, a pass writes
more than the bound, or the peak exceeds the fleet plus the budget. Without the GARM v0.2.1
binary (`GARM_BIN_V021`, or `garm-v0.2.1` in `GARM_BIN_DIR`) it says so and exits 0.
"""

from __future__ import annotations

import dataclasses
import datetime
import fcntl
import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

from charm_config import CharmConfig  # pyright: ignore[reportMissingImports]
from charm_reconcile import reconcile_settings  # pyright: ignore[reportMissingImports]
from contract.garm_http import call  # pyright: ignore[reportMissingImports]
from contract.real_garm import V021, RealGarm  # pyright: ignore[reportMissingImports]
from garm_api import EntityKind, GarmClient, Instance, ScaleSet  # pyright: ignore[reportMissingImports]
from scaleset_reconciler import (  # pyright: ignore[reportMissingImports]
    ReconcileReport,
    ReconcileSettings,
    reconcile,
)
from scaleset_reconciler.spec import EntityRef, ScalesetSpec  # pyright: ignore[reportMissingImports]

SETS = 50
MIN_IDLE = 1
PROVIDER = "fake"
ADMIN = "admin"
OLD = ("harness", "x64")
NEW = ("fleet-2", "harness", "x64")
TICK = datetime.timedelta(seconds=60)
MAX_PASSES = 40
# How long GARM may take to match what a pass asked for (runners booted, reported, removed).
SETTLE_S = 45.0
DELETING = frozenset({"pending_delete", "deleting", "pending_force_delete"})
# Where CI lays the binaries: shared/garm/bin beside the checkout (tox passes GARM_BIN_DIR).
DEFAULT_BIN_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "garm" / "bin"


@dataclasses.dataclass
class Result:
    """What one phase (converging, or the change) cost."""

    runners_before: int = 0
    runners_peak: int = 0
    sets_before: int = 0
    sets_peak: int = 0
    passes: int = 0
    minutes: float = 0.0
    wall_s: float = 0.0
    most_writes: int = 0
    longest_pass_s: float = 0.0
    converged: bool = False
    # Each pass's (writes, wall seconds), in order.
    per_pass: list[tuple[int, float]] = dataclasses.field(default_factory=lambda: [])


def main() -> int:
    """Run the change on the real binary, or say why not and exit 0."""
    binary, reason = garm_v021()
    if binary is None:
        print(f"bench_fleet_real: skipped, {reason}")
        return 0
    settings = reconcile_settings(CharmConfig())
    with tempfile.TemporaryDirectory(prefix="bench-fleet-real-") as tmp:
        garm = RealGarm(binary, Path(tmp), PROVIDER, version=V021)
        garm.start()
        try:
            fleet = Fleet(garm, settings)
            built = fleet.drive([spec(i, OLD) for i in range(SETS)])
            changed = fleet.drive([spec(i, NEW) for i in range(SETS)])
        finally:
            garm.stop()
    return report(binary, settings, built, changed)


def garm_v021() -> tuple[str | None, str]:
    """Return GARM v0.2.1's binary, or None and why there is none."""
    explicit = os.environ.get("GARM_BIN_V021")
    directory = Path(os.environ.get("GARM_BIN_DIR") or DEFAULT_BIN_DIR)
    candidate = Path(explicit) if explicit else directory / "garm-v0.2.1"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate), ""
    where = f"GARM_BIN_V021={explicit}" if explicit else f"{directory}/garm-v0.2.1"
    return None, (
        f"no GARM v0.2.1 binary ({where} is not an executable file): set GARM_BIN_V021 "
        "or GARM_BIN_DIR to run the 50-set change on a real GARM"
    )


def report(binary: str, settings: ReconcileSettings, built: Result, changed: Result) -> int:
    """Print both phases; return 0 when the change met its bounds."""
    budget = settings.changeover_surge
    bound = settings.max_writes
    print(
        f"real GARM {binary}: {SETS} sets, min idle {MIN_IDLE}, budget {budget} extra runners, "
        f"max {bound} writes per pass (the charm's defaults)"
    )
    for what, result in (("converge", built), ("change", changed)):
        print(
            f"  {what:<8}: runners {result.runners_before} -> peak {result.runners_peak}, "
            f"scale sets {result.sets_before} -> peak {result.sets_peak}; "
            f"{'converged' if result.converged else 'NOT converged'} after {result.passes} "
            f"passes ({result.minutes:.0f} charm-clock min, {result.wall_s:.0f} s wall); per "
            f"pass at most {result.most_writes} writes (bound {bound}), "
            f"{result.longest_pass_s:.2f} s wall"
        )
        passes = ", ".join(f"{writes} w {wall:.2f} s" for writes, wall in result.per_pass)
        print(f"            passes: {passes}")
    ceiling = SETS * MIN_IDLE + budget
    good = (
        built.converged
        and changed.converged
        and changed.runners_peak <= ceiling
        and max(built.most_writes, changed.most_writes) <= bound
    )
    print(
        f"  bounds: peak runners {changed.runners_peak} <= {SETS * MIN_IDLE} + {budget} = "
        f"{ceiling}, writes <= {bound}: {'met' if good else 'NOT met'}"
    )
    return 0 if good else 1


def spec(index: int, labels: tuple[str, ...]) -> ScalesetSpec:
    """Scale set `index` on the fake GitHub's repository, with one idle runner."""
    return ScalesetSpec(
        name=f"s{index}",
        entity=EntityRef(EntityKind.REPOSITORY, "fake-org/fake-repo"),
        provider_name=PROVIDER,
        labels=labels,
        image="ubuntu:22.04",
        flavor="small",
        max_runners=MIN_IDLE + 1,
        min_idle_runners=MIN_IDLE,
    )


class Fleet:
    """The real GARM, the charm's clock and pass, and the runners the script plays."""

    def __init__(self, garm: RealGarm, settings: ReconcileSettings) -> None:
        self.garm = garm
        self.settings = settings
        # Random, so GARM's zxcvbn check (score 4) accepts it.
        token, _ = garm.bootstrap(ADMIN, f"Bench-{secrets.token_urlsafe(24)}")
        self.client = GarmClient(garm.url, token, connect_timeout=5, read_timeout=60)
        self.reported: set[str] = set()
        # The charm's clock runs ahead of GARM's by the ticks the script skipped.
        self.ahead = datetime.timedelta()
        self.result = Result()

    def drive(self, specs: list[ScalesetSpec]) -> Result:
        """Pass, let GARM settle, tick; until converged with every runner idle."""
        self.result = result = Result()
        sets, runners = self.sample()
        result.runners_before, result.sets_before = runners, sets
        started = time.monotonic()
        for _ in range(MAX_PASSES):
            report, wall = self.one_pass(specs)
            settled = self.settle()
            result.passes += 1
            result.most_writes = max(result.most_writes, report.writes)
            result.longest_pass_s = max(result.longest_pass_s, wall)
            result.per_pass.append((report.writes, wall))
            if report.converged and settled:
                result.converged = True
                break
            self.ahead += TICK
        result.minutes = result.passes - 1 if result.converged else result.passes
        result.wall_s = time.monotonic() - started
        return result

    def one_pass(self, specs: list[ScalesetSpec]) -> tuple[ReconcileReport, float]:
        """One reconcile at the charm's clock; (its report, its wall time)."""
        now = datetime.datetime.now(datetime.UTC) + self.ahead
        began = time.perf_counter()
        report = reconcile(self.client, specs, now=now, settings=self.settings, sweep_orphans=True)
        wall = time.perf_counter() - began
        self.sample()
        return report, wall

    def settle(self) -> bool:
        """Play the runners until GARM shows what every set asks for; False after `SETTLE_S`."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            scalesets = self.client.list_scalesets()
            instances = self.client.list_instances()
            self.report_booted(instances)
            self.sample(scalesets, instances)
            if matches(scalesets, instances):
                return True
            time.sleep(0.5)
        return False

    def report_booted(self, instances: list[Instance]) -> None:
        """Report `installing` then `idle` for each runner the fake provider booted."""
        booted = [i for i in instances if i.status == "running" and i.runner_status == "pending"]
        fresh = [i.name for i in booted if i.name not in self.reported]
        if not fresh:
            return
        state = self.provider_state()
        for name in fresh:
            token = str(state[name]["instance_token"])
            for status in ("installing", "idle"):
                body = {"status": status, "message": "bench runner"}
                call(self.garm.url, "POST", "/callbacks/status", body, token=token)
            self.reported.add(name)

    def provider_state(self) -> dict[str, dict[str, str]]:
        """The fake provider's instances, read under its lock (GARM runs it concurrently)."""
        path = self.garm.workdir / "instances.json"
        with path.with_suffix(".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return json.loads(path.read_text())

    def sample(
        self,
        scalesets: list[ScaleSet] | None = None,
        instances: list[Instance] | None = None,
    ) -> tuple[int, int]:
        """Count scale sets and live runners; keep the peaks; return (sets, runners)."""
        scalesets = self.client.list_scalesets() if scalesets is None else scalesets
        instances = self.client.list_instances() if instances is None else instances
        runners = sum(1 for i in instances if i.status not in DELETING)
        self.result.sets_peak = max(self.result.sets_peak, len(scalesets))
        self.result.runners_peak = max(self.result.runners_peak, runners)
        return len(scalesets), runners


def matches(scalesets: list[ScaleSet], instances: list[Instance]) -> bool:
    """Whether every set holds what GARM aims for, each runner idle, none being removed."""
    by_set: dict[int, list[Instance]] = {}
    for instance in instances:
        by_set.setdefault(instance.scale_set_id, []).append(instance)
    for scaleset in scalesets:
        mine = by_set.get(scaleset.id, [])
        target = min(
            scaleset.min_idle_runners + scaleset.desired_runner_count, scaleset.max_runners
        )
        wanted = target if scaleset.enabled else 0
        if len(mine) != wanted or any(i.runner_status != "idle" for i in mine):
            return False
    return True


if __name__ == "__main__":
    sys.exit(main())
