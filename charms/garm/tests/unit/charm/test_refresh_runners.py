"""The refresh-runners action: the request lands in GARM's marker and the reconcile starts it."""

from __future__ import annotations

import pytest
from ops import testing

from contract.garm_http import call
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from scaleset_reconciler.marker import Marker, parse_marker
from unit.walks.charm import Ctx, Resources, bootstrap_secrets, bootstrapped


def _charms_scaleset(garm: GarmSim, logical: str) -> int:
    """A scale set this charm made (its marker in extended_state), enabled, in the simulator."""
    token = garm.token()
    repo = garm.seed_entity("repository", "fake-repo", "fake-org")
    body = {
        "name": f"{logical}-0123abcd",
        "provider_name": "fake",
        "image": "ubuntu:22.04",
        "flavor": "small",
        "os_type": "linux",
        "labels": ["x64"],
        "max_runners": 2,
        "enabled": True,
    }
    created = call(garm.url, "POST", f"/repositories/{repo}/scalesets", body, token=token)
    assert created.status == 200, created.raw
    marker = {"extended_state": Marker(logical=logical).render()}
    scaleset_id = created.json["id"]
    call(garm.url, "PUT", f"/scalesets/{scaleset_id}", marker, token=token)
    return scaleset_id


def test_refresh_runners_marks_the_scale_set_in_garm(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: dict[str, str | int],
):
    """Arrange: a bootstrapped leader; GARM holds the charm's scale set `small`.

    Act: refresh-runners scaleset=small.

    Assert: the result names `small`; its marker in GARM carries `refresh-from`.
    """
    bootstrapped(garm)
    scaleset_id = _charms_scaleset(garm, "small")
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    ctx.run(ctx.on.action("refresh-runners", params={"scaleset": "small"}), state)

    assert ctx.action_results == {"scalesets": "small", "count": 1}
    marker = parse_marker(garm.scaleset(scaleset_id).extended_state)
    assert marker is not None
    assert marker.refresh_from is not None


def test_refresh_runners_of_an_unknown_scale_set_fails_naming_it(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, config: dict[str, str | int]
):
    """Arrange: a bootstrapped leader; no scale set `nope`. Act: refresh-runners scaleset=nope.

    Assert: the action fails naming `nope` and pointing at list-scalesets.
    """
    bootstrapped(garm)
    state = testing.State(leader=True, config=config, secrets=bootstrap_secrets())

    with pytest.raises(testing.ActionFailed, match=r"'nope'.*list-scalesets"):
        ctx.run(ctx.on.action("refresh-runners", params={"scaleset": "nope"}), state)


def test_refresh_runners_on_non_leader_fails(ctx: Ctx, workload: RecordingWorkload):
    """Arrange: a non-leader. Act: refresh-runners. Assert: fails naming the leader."""
    with pytest.raises(testing.ActionFailed, match="garm/leader refresh-runners"):
        ctx.run(ctx.on.action("refresh-runners"), testing.State(secrets=bootstrap_secrets()))
