"""End to end: removing garm, and the teardown action, leave nothing of the charm's behind.

The machine of `test_garm_real_provider.py`: the charm's hooks in the e2e container, GARM (both
binaries, SQLite) started by its systemd, the real `garm-provider-openstack` against the fake
OpenStack, whose servers "boot" and report to GARM, and the fake GitHub.

The walk: a configurator's scale set with its idle runner on a server of the provider, and a
scale set made by hand beside it. Removing the application (the leader's stop hook, Juju
planning no unit) deletes the charm's scale set and every server the provider made for it; the
hand-made set is as it was. Then, with the scale set back and one runner busy, the teardown
action removes the idle runner, waits out `teardown-timeout` for the busy one without stopping
it, and names it with its VM; no hook brings the scale set back until `resume`.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import cast

import pytest
from ops import testing

from doubles.configurator_publication import CONFIGURATOR_ENDPOINT
from e2e.test_garm_machine import (
    OLD_LABELS,
    install_and_bootstrap,
    point_github_at_the_fake,
    start_job,
)
from e2e.test_garm_real_provider import (  # noqa: F401 (pytest fixtures)
    PROVIDER,
    ProviderWalk,
    provider_walk,
    relate_configurator,
    sqlite_case,
    wait_for_idle_runner,
)
from garm_api import ScaleSet, ScaleSetCreate
from relations.peers.lease import Lease
from scaleset_reconciler.marker import parse_marker


def test_removal_and_teardown_leave_nothing_of_the_charms_behind(
    provider_walk: ProviderWalk,  # noqa: F811 (the fixture imported above)
):
    """Arrange: the charm's scale set with a runner on the real provider; a hand-made set.

    Act: the application's removal (its relation broken, then the stop hook); then the
    relation back, a job on the scale set's runner, the teardown action with
    teardown-timeout 20s, an update-status, resume.

    Assert: after the stop hook GARM has no scale set of the charm and the fake cloud no server
    of the provider's; the hand-made set is unchanged. The teardown fails naming the busy runner
    and its server, which is not deleted; the idle runner's server is; the scale set stays
    disabled through update-status; resume enables a scale set again.
    """
    walk = provider_walk.walk
    install_and_bootstrap(walk)
    point_github_at_the_fake(walk)
    first = relate_configurator(provider_walk)
    hand_made = _hand_made_scaleset(provider_walk, first)

    relation = remove_application(provider_walk, hand_made)

    second = scaleset_back(provider_walk, relation)
    busy = start_job(walk, second)
    teardown_waits_for_the_busy_runner(provider_walk, second, busy)
    resume_brings_the_scale_set_back(provider_walk)


def _hand_made_scaleset(walker: ProviderWalk, beside: ScaleSet) -> ScaleSet:
    """An operator's scale set on the same entity and provider: no marker, no runner."""
    return walker.walk.client().create_scaleset(
        beside.entity_kind,
        beside.entity_id,
        ScaleSetCreate(
            name="by-hand",
            provider_name=PROVIDER,
            image=beside.image,
            flavor=beside.flavor,
            labels=("by-hand",),
            max_runners=1,
            enabled=False,
        ),
    )


def remove_application(walker: ProviderWalk, hand_made: ScaleSet) -> testing.RelationBase:
    """As Juju removes the application: the relation broken, then the leader's stop hook.

    Juju plans no unit any more. The charm's scale set and every server of it go; the
    relation is returned, for the walk to go on as if the application had stayed.
    """
    walk = walker.walk
    relation = next(r for r in walk.state.relations if r.endpoint == CONFIGURATOR_ENDPOINT)
    walk.state = dataclasses.replace(
        walk.state, planned_units=0, config={**walk.state.config, "teardown-timeout": "60s"}
    )
    walk.hook(walk.ctx.on.relation_broken(relation))
    walk.state = dataclasses.replace(walk.state, relations=walk.state.relations - {relation})

    walk.hook(walk.ctx.on.stop())

    listed = walk.scalesets()
    assert [s.name for s in listed] == ["by-hand"]
    (kept,) = listed
    assert (kept.id, kept.enabled, kept.extended_state) == (hand_made.id, False, "")
    created = walker.cloud.created_servers()
    assert created, "the provider made a server for the charm's runner"
    assert [server.name for server in created if not server.deleted] == []
    walk.state = dataclasses.replace(walk.state, planned_units=1)
    return relation


def scaleset_back(walker: ProviderWalk, relation: testing.RelationBase) -> ScaleSet:
    """The application stays after all: related again, the charm creates the scale set again."""
    walk = walker.walk
    walk.state = dataclasses.replace(walk.state, relations={*walk.state.relations, relation})
    walker.publish(OLD_LABELS)
    walk.update_status_until(
        lambda: any(parse_marker(s.extended_state) for s in walk.scalesets()),
        "the configurator's scale set created again",
    )
    (scaleset,) = [s for s in walk.scalesets() if parse_marker(s.extended_state)]
    wait_for_idle_runner(walker, scaleset)
    return scaleset


def teardown_waits_for_the_busy_runner(
    walker: ProviderWalk, scaleset: ScaleSet, busy: str
) -> None:
    """The idle runner goes; the busy one stays, running, and is named with its server."""
    walk = walker.walk
    api = walk.client()
    walk.update_status_until(
        # Its server id too: the runner can report idle before GARM records the provider's id.
        lambda: any(
            i.runner_status == "idle" and i.provider_id
            for i in api.list_scaleset_instances(scaleset.id)
        ),
        "GARM makes a new idle runner beside the busy one",
    )
    runners = {i.name: i for i in api.list_scaleset_instances(scaleset.id)}
    (idle,) = [name for name in runners if name != busy]
    # The peer relation the action keeps the teardown in, with this leader's lease (ADR 0019).
    lease = Lease("garm/0", datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1))
    peers = testing.PeerRelation("garm-peers", local_app_data=lease.as_app_data())
    walk.state = dataclasses.replace(
        walk.state,
        config={**walk.state.config, "teardown-timeout": "20s"},
        relations={*walk.state.relations, peers},
    )

    with pytest.raises(testing.ActionFailed, match="1 runners remain in 1 scale sets") as failed:
        walk.hook(walk.ctx.on.action("teardown"))
    assert failed.value.state is not None
    # ops types it as its own harness's State; the container's hook server sends a testing one.
    walk.state = cast("testing.State", failed.value.state)

    results = walk.ctx.action_results or {}
    (left,) = json.loads(results["remaining"])
    assert (left["runner"], left["vm"]) == (busy, runners[busy].provider_id)
    assert left["status"] == "running/active"
    # GARM records the job it gave the runner (the fake GitHub's repository and run).
    assert left["job"].startswith("fake-org/fake-repo run ")
    servers = {server.id: server for server in walker.cloud.created_servers()}
    assert servers[runners[idle].provider_id].deleted
    assert not servers[runners[busy].provider_id].deleted
    assert [i.name for i in api.list_scaleset_instances(scaleset.id)] == [busy]
    # The teardown holds: no hook enables or re-creates the charm's scale set.
    walk.hook(walk.ctx.on.update_status())
    charms = [s for s in walk.scalesets() if parse_marker(s.extended_state)]
    assert [(s.id, s.enabled) for s in charms] == [(scaleset.id, False)]
    assert walk.statuses[-1].startswith("maintenance: tearing down: 1 scale sets, 1 runners")


def resume_brings_the_scale_set_back(walker: ProviderWalk) -> None:
    """`resume` ends the teardown: the configurator's scale set serves again."""
    walk = walker.walk
    walk.hook(walk.ctx.on.action("resume"))
    walk.update_status_until(
        lambda: any(s.enabled and parse_marker(s.extended_state) for s in walk.scalesets()),
        "a scale set of the charm enabled again",
    )
