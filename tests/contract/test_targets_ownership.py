"""The ownership marker (docs/adr/0018-scale-set-ownership.md) on every target, real GARM included.

GARM keeps `extended_state` as a free string (docs/reference/garm-behaviour.md, B16); these
tests prove that the marker naming the publishing application survives GARM's write and list
round trip, that a previous version's marker (no application) is stamped once by the matching
spec, and that another application's spec of the same name leaves the scale set as it is.
"""

from __future__ import annotations

import datetime

from contract.conftest import PROVIDER, Target
from garm_api import EntityKind, GarmClient, ScaleSet
from scaleset_reconciler import Phase, ReconcileReport, ReconcileSettings, reconcile
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.spec import EntityRef, ScalesetSpec

REPO = EntityRef(EntityKind.REPOSITORY, "fake-org/fake-repo")
SETTINGS = ReconcileSettings()


def spec_of(application: str) -> ScalesetSpec:
    """Configurator `application`'s spec `small` on the target's repository and provider."""
    return ScalesetSpec(
        name="small",
        entity=REPO,
        provider_name=PROVIDER,
        labels=("harness", "x64"),
        image="ubuntu:22.04",
        flavor="small",
        max_runners=2,
        application=application,
    )


def one_pass(client: GarmClient, target: Target, specs: list[ScalesetSpec], *, complete: bool):
    """One reconcile pass at the target's time (the simulator's clock, or the machine's)."""
    now = (
        datetime.datetime.fromtimestamp(target.sim.clock.now(), datetime.UTC)
        if target.sim is not None
        else datetime.datetime.now(datetime.UTC)
    )
    return reconcile(client, specs, now=now, settings=SETTINGS, sweep_orphans=complete)


def only_scaleset(client: GarmClient) -> ScaleSet:
    """The one scale set GARM lists."""
    (scaleset,) = client.list_scalesets()
    return scaleset


def test_the_marker_with_its_application_round_trips_and_guards_the_scale_set(target: Target):
    """Arrange: a bootstrapped GARM (simulator or real binary) and the admin's client.

    Act: a pass of the previous version's spec (no application), one of `cfg-a`'s spec, then
    one of `cfg-b`'s spec of the same name while a publication is unreadable.
    Assert: GARM returns the marker as written: no application, then `cfg-a` on the same scale
    set (adopted once, nothing created); cfg-b's pass leaves it exactly as it was and is Blocked.
    """
    client = GarmClient(target.url, target.token, connect_timeout=5, read_timeout=30)

    one_pass(client, target, [spec_of("")], complete=True)
    legacy = only_scaleset(client)
    adopted_report = one_pass(client, target, [spec_of("cfg-a")], complete=True)
    adopted = only_scaleset(client)
    rival_report: ReconcileReport = one_pass(client, target, [spec_of("cfg-b")], complete=False)
    after_rival = only_scaleset(client)

    legacy_marker = parse_marker(legacy.extended_state)
    assert legacy_marker is not None
    assert legacy_marker.application == ""
    adopted_marker = parse_marker(adopted.extended_state)
    assert adopted_marker is not None
    assert (adopted.id, adopted_marker.application) == (legacy.id, "cfg-a")
    assert adopted_report.writes == 1
    assert rival_report.writes == 0
    assert after_rival.extended_state == adopted.extended_state
    assert after_rival.enabled
    assert [spec.phase for spec in rival_report.specs] == [Phase.BLOCKED]
