"""Bottom-up cleanup of the charm's GitHub objects through garm_api, against the simulator.

Scale sets first (drained), then organizations and repositories, then credentials; GARM's 400
while something still uses an object is retried on a later pass; hand-made objects stay.
"""

from __future__ import annotations

import datetime

import pytest

from contract import test_github_reconciler_contract as reconciler_contract
from contract.test_github_reconciler_contract import ORG, REPO, pem_key
from garm_api import EntityKind, GarmClient
from garm_sim import GarmSim
from reconcile.desired_state import DesiredState
from reconcile.garm_objects import ObjectsOutcome, reconcile_objects
from reconcile.github_cleanup import remove_unused_github_objects
from reconcile.github_objects import EntityBinding, GithubApp, reconcile_github
from scaleset_reconciler import ReconcileSettings
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import EntityRef, ScalesetSpec

# The GitHub reconciler's fixtures: a bootstrapped simulator and a client logged in to it.
sim = reconciler_contract.sim
client = reconciler_contract.client
SETTINGS = ReconcileSettings(
    handover_grace=datetime.timedelta(seconds=60), drain_timeout=datetime.timedelta(hours=7)
)


@pytest.fixture(scope="module")
def app() -> GithubApp:
    """One App installation (generating keys is slow)."""
    return GithubApp(app_id=11, installation_id=22, private_key_pem=pem_key())


def spec(entity: EntityRef = ORG) -> ScalesetSpec:
    """A scale set `small` for the entity, one idle runner."""
    return ScalesetSpec(
        name="small",
        entity=entity,
        provider_name="openstack",
        labels=("linux",),
        image="noble",
        flavor="m1.small",
        max_runners=2,
        min_idle_runners=1,
    )


def pass_(sim: GarmSim, client: GarmClient, desired: DesiredState) -> ObjectsOutcome:
    """One pass over every object at the simulator's time, then a minute goes by."""
    now = datetime.datetime.fromtimestamp(sim.clock.now(), datetime.UTC)
    outcome = reconcile_objects(client, desired, now=now, settings=SETTINGS)
    sim.advance(61)
    return outcome


def objects(client: GarmClient) -> set[str]:
    """Every credentials object and entity GARM holds."""
    names = {f"credentials {c.name}" for c in client.list_github_credentials()}
    for kind in (EntityKind.REPOSITORY, EntityKind.ORGANIZATION):
        names |= {f"{kind.value} {e.name}" for e in client.list_entities(kind)}
    return names


def test_a_removed_configurator_s_objects_go_after_its_scale_set(
    sim: GarmSim, client: GarmClient, app: GithubApp
):
    """Arrange: the org served by a scale set with a job running; then nothing is wanted.

    Act: passes while the job runs; finish the job; passes.
    Assert: the org and credentials stay while the scale set drains; after it is gone the org
    and then the credentials are deleted.
    """
    wanted = DesiredState(specs=(spec(),), bindings=(EntityBinding(ORG, app),))
    pass_(sim, client, wanted)
    pass_(sim, client, wanted)
    runner = sim.start_job(live_name(spec()))

    for _ in range(3):
        pass_(sim, client, DesiredState())
    draining = objects(client)
    sim.finish_job(runner)
    sim.advance(300)  # a disabled set: GARM hears of it at its 5-minute consolidation
    for _ in range(4):
        pass_(sim, client, DesiredState())

    assert draining == {"credentials garm-app-11-22", "organizations acme"}
    assert sim.state.scalesets == {}
    assert objects(client) == set()


def test_shared_credentials_stay_while_another_entity_uses_them(
    sim: GarmSim, client: GarmClient, app: GithubApp
):
    """Arrange: the org and a repo through one App; then only the repo is wanted.

    Act: one cleanup. Assert: the org is deleted; the credentials and the repo stay.
    """
    reconcile_github(client, [EntityBinding(ORG, app), EntityBinding(REPO, app)])

    report = remove_unused_github_objects(client, [EntityBinding(REPO, app)])

    assert report.deleted == ("organization acme",)
    assert objects(client) == {"credentials garm-app-11-22", "repositories acme/widgets"}


def test_a_refusal_is_retried_on_the_next_pass(sim: GarmSim, client: GarmClient, app: GithubApp):
    """Arrange: an unwanted org; GARM refuses its first delete with 400.

    Act: two cleanups. Assert: kept after the first, org and credentials gone after the second.
    """
    reconcile_github(client, [EntityBinding(ORG, app)])
    sim.fault(method="DELETE", path="/api/v1/organizations/*", status=400, times=1)

    first = remove_unused_github_objects(client, [])
    second = remove_unused_github_objects(client, [])

    assert first.kept == ("organization acme", "credentials garm-app-11-22")
    assert first.problems == {}
    assert second.deleted == ("organization acme", "credentials garm-app-11-22")


def test_hand_made_objects_are_never_touched(sim: GarmSim, client: GarmClient, app: GithubApp):
    """Arrange: hand-made credentials (one named like the charm's) and an org using them.

    Act: a cleanup with nothing wanted. Assert: nothing deleted, not even a DELETE sent.
    """
    client.create_github_app_credentials(
        "garm-app-1-2",
        endpoint="github.com",
        app_id=1,
        installation_id=2,
        private_key_pem=app.private_key_pem,
        description="made by hand",
    )
    client.create_organization("handmade", credentials_name="garm-app-1-2", webhook_secret="s")
    sim.reset_log()

    report = remove_unused_github_objects(client, [])

    assert report.deleted == ()
    assert objects(client) == {"credentials garm-app-1-2", "organizations handmade"}
    assert sim.count("DELETE") == 0
