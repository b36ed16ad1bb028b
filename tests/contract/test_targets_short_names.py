"""Scale sets of revisions before short names are replaced by the changeover, on every target.

Charm revisions before ADR 0031 named scale sets `<logical>-<8 hex>` (14 characters and more),
too long for the OpenStack provider's server tags (garm-behaviour B46), and wrote markers without
a generation. On the simulator and on each real GARM binary: such sets, as those revisions left
them (enabled, their marker naming the configurator), are replaced set by set as a label change
is: the short-named replacement first, each old set serving until its own replacement has served
for the hand-over grace, then retired and deleted; nothing else is touched.
"""

from __future__ import annotations

import datetime
import json

from contract.conftest import PROVIDER, Target
from garm_api import EntityKind, GarmClient, ScaleSet
from scaleset_reconciler import Phase, ReconcileSettings, reconcile
from scaleset_reconciler.marker import config_hash, parse_marker
from scaleset_reconciler.naming import NAME_BUDGET, live_name, spec_generation
from scaleset_reconciler.spec import EntityRef, ScalesetSpec

REPO = EntityRef(EntityKind.REPOSITORY, "fake-org/fake-repo")
SETTINGS = ReconcileSettings()
# Past the hand-over grace (60 s) from one pass to the next, with GARM's sub-second delays.
PASS_INTERVAL = datetime.timedelta(seconds=61)
# Live names as the revision before short names gave `small` and `large` these labels.
LEGACY = {"small": "small-ec32c2e5", "large": "large-3f2a9c1d"}
LABELS = {"small": ("harness", "x64"), "large": ("arm64", "harness")}


def spec_of(name: str) -> ScalesetSpec:
    """Configurator `cfg-a`'s spec `name` on the target's repository and provider."""
    return ScalesetSpec(
        name=name,
        entity=REPO,
        provider_name=PROVIDER,
        labels=LABELS[name],
        image="ubuntu:22.04",
        flavor="small",
        max_runners=2,
        application="cfg-a",
    )


def legacy_marker(spec: ScalesetSpec) -> str:
    """The marker the revision before short names wrote: no generation."""
    body = {
        "application": spec.application,
        "config": config_hash(spec),
        "logical": spec.name,
        "managed-by": "garm-charm",
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


class Clock:
    """The reconciler's clock: the target's own, moved on by passes.

    The simulator's clock is advanced; a real GARM's runs on, so the charm's runs ahead of it.
    Both read the target's time at each pass, so GARM's own delays never eat into the grace.
    """

    def __init__(self, target: Target) -> None:
        self._target = target
        self._ahead = datetime.timedelta()

    def now(self) -> datetime.datetime:
        """The target's time, plus what the passes moved on a real GARM."""
        sim = self._target.sim
        if sim is not None:
            return datetime.datetime.fromtimestamp(sim.clock.now(), datetime.UTC)
        return datetime.datetime.now(datetime.UTC) + self._ahead

    def advance(self, step: datetime.timedelta) -> None:
        """Move on by `step`."""
        if self._target.sim is not None:
            self._target.sim.advance(step.total_seconds())
        else:
            self._ahead += step


def by_name(client: GarmClient) -> dict[str, ScaleSet]:
    """Every scale set GARM lists, by name."""
    return {scaleset.name: scaleset for scaleset in client.list_scalesets()}


def test_long_named_sets_of_an_earlier_revision_are_replaced_set_by_set(target: Target):
    """Arrange: `small` and `large` served by long-named sets an earlier revision made.

    Act: reconcile passes just over the hand-over grace apart, until converged.
    Assert: the first pass creates both short-named replacements (10 characters at most, every
    label) and leaves the old sets serving; the next retires each old set; then they are
    deleted; at the end only the replacements remain, each marked with its generation.
    """
    client = GarmClient(target.url, target.token, connect_timeout=5, read_timeout=30)
    specs = [spec_of("small"), spec_of("large")]
    for spec in specs:
        created = target.create_scaleset(LEGACY[spec.name], labels=list(spec.labels), enabled=True)
        target.call("PUT", f"/scalesets/{created['id']}", {"extended_state": legacy_marker(spec)})
    clock = Clock(target)

    first = reconcile(client, specs, now=clock.now(), settings=SETTINGS, sweep_orphans=True)
    after_first = by_name(client)
    reports = [first]
    retired: dict[str, bool] = {}
    for _ in range(4):
        clock.advance(PASS_INTERVAL)
        now = clock.now()
        reports.append(reconcile(client, specs, now=now, settings=SETTINGS, sweep_orphans=True))
        if len(reports) == 2:
            listed = by_name(client)
            retired = {name: not listed[name].enabled for name in LEGACY.values()}
        if reports[-1].converged:
            break

    short = {spec.name: live_name(spec) for spec in specs}
    assert all(len(name) <= NAME_BUDGET for name in short.values())
    assert set(after_first) == set(LEGACY.values()) | set(short.values())
    assert all(after_first[name].enabled for name in LEGACY.values())
    assert [spec.phase for spec in first.specs] == [Phase.CREATING, Phase.CREATING]
    for spec in specs:
        assert after_first[short[spec.name]].normalised_labels == set(spec.labels)
    assert retired == dict.fromkeys(LEGACY.values(), True)
    assert reports[-1].converged
    final = by_name(client)
    assert set(final) == set(short.values())
    for spec in specs:
        marker = parse_marker(final[short[spec.name]].extended_state)
        assert marker is not None
        assert (marker.logical, marker.generation) == (spec.name, spec_generation(spec))
