"""Two garm-configurators publishing the same scale-set name, through the charm.

The real configurator's publication (the relation library's own serialisation) on two
relations, `small` (the owner, served first) and `rival`, against the GARM simulator over HTTP.
Whatever the order (the owner's data invalid, its secret not granted, its relation re-added with
a higher id, a new leader), the owner's scale set stays as it is and the status names both
(docs/adr/0018-scale-set-ownership.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import ops
import pytest
from ops import testing

import charm
from doubles.configurator_publication import pkcs1_app_key, published_databag
from doubles.workload_double import RecordingWorkload
from garm_api import ScaleSet
from garm_sim import GarmSim
from scaleset_reconciler.marker import parse_marker
from unit.walks.configurators import OPENSTACK_PASSWORD, garm_secrets, sim_now

OWNER = "small"
RIVAL = "rival"


@pytest.fixture(scope="module")
def app_key() -> str:
    """A PKCS#1 key, as GitHub issues App keys."""
    return pkcs1_app_key()


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[GarmSim]:
    """A fresh GARM started with both configurators' providers; the charm reads its clock."""
    with GarmSim([f"openstack-{OWNER}", f"openstack-{RIVAL}"], frozen_clock=True) as server:
        monkeypatch.setattr(charm, "utc_now", lambda: sim_now(server))
        yield server


def publication(
    app: str, app_key: str, *, entity_owner: str = "acme", name: str = "small"
) -> tuple[testing.Relation, list[testing.Secret]]:
    """Configurator `app` publishing the scale set `name` (App 123/456), with its secrets."""
    password = testing.Secret(tracked_content={"password": OPENSTACK_PASSWORD, "app": app})
    key = testing.Secret(tracked_content={"private-key": app_key, "app": app})
    databag = published_databag(
        ("linux", "x64"), password_secret_id=password.id, private_key_secret_id=key.id
    )
    scaleset = json.loads(databag["scaleset"])
    scaleset["entity"]["owner"] = entity_owner
    scaleset["name"] = name
    databag["scaleset"] = json.dumps(scaleset)
    relation = testing.Relation("garm-configurator", remote_app_name=app, remote_app_data=databag)
    return relation, [password, key]


def leader(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    relations: list[testing.Relation],
    secrets: list[testing.Secret],
) -> testing.State:
    """A leader reaching the simulator, with these configurators related and a short grace."""
    return testing.State(
        leader=True,
        resources=resources,
        config={
            "port": sim.port,
            "external-url": "https://garm.example.com",
            "handover-grace": "1s",
        },
        relations=set(relations),
        secrets={*secrets, *garm_secrets()},
    )


def owner_served(
    sim: GarmSim, resources: frozenset[testing.Resource], app_key: str
) -> tuple[testing.Context[charm.GarmCharm], testing.State, ScaleSet]:
    """`small` publishes and is served; returns its scale set as GARM holds it."""
    ctx = testing.Context(charm.GarmCharm)
    relation, secrets = publication(OWNER, app_key)
    state = ctx.run(ctx.on.config_changed(), leader(sim, resources, [relation], secrets))
    sim.clock.advance(2)
    state = ctx.run(ctx.on.update_status(), state)
    (scaleset,) = scalesets(sim)
    return ctx, state, scaleset


def scalesets(sim: GarmSim) -> list[ScaleSet]:
    """Every scale set in GARM, as GARM lists them."""
    from garm_api import GarmClient  # noqa: PLC0415 - one client per look

    return GarmClient(sim.url, token=sim.token()).list_scalesets()


def scaleset_writes(sim: GarmSim) -> list[str]:
    """The writes GARM received to any scale set (creates included), as `METHOD /path`."""
    return [call for call in sim.write_calls() if "scalesets" in call]


def passes(
    ctx: testing.Context[charm.GarmCharm], sim: GarmSim, state: testing.State, count: int = 4
) -> testing.State:
    """Several update-status hooks, GARM's clock moving past the grace between them."""
    for _ in range(count):
        state = ctx.run(ctx.on.update_status(), state)
        sim.clock.advance(61)
    return state


def test_marker_names_the_publishing_application(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: a fresh GARM. Act: `small` publishes, config-changed and update-status.

    Assert: GARM's scale set carries a marker naming the application `small`.
    """
    _, _, scaleset = owner_served(sim, resources, app_key)

    marker = parse_marker(scaleset.extended_state)
    assert marker is not None
    assert (marker.application, marker.logical) == (OWNER, "small")


def test_a_rival_publishing_the_same_name_blocks_both_and_changes_nothing(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` is served; `rival` relates and publishes `small` for another org.

    Act: relation-changed for the rival, then more hooks past the grace.
    Assert: no scale-set write reached GARM; the owner's scale set is as it was; Blocked
    naming both.
    """
    ctx, state, before = owner_served(sim, resources, app_key)
    relation, secrets = publication(RIVAL, app_key, entity_owner="evil")
    state = dataclasses.replace(
        state, relations={*state.relations, relation}, secrets={*state.secrets, *secrets}
    )
    sim.reset_log()

    out = passes(ctx, sim, ctx.run(ctx.on.relation_changed(relation), state))

    assert scaleset_writes(sim) == []
    assert scalesets(sim) == [before]
    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert f"'{RIVAL}' and '{OWNER}'" in out.unit_status.message


@pytest.mark.parametrize("breakage", ["invalid data", "secret not granted"])
def test_the_owners_unreadable_publication_never_hands_its_set_to_the_rival(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
    breakage: str,
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: `small` is served; its publication becomes unreadable; `rival` publishes `small`.

    Act: hooks past the grace and the drain timeout's first minutes.
    Assert: GARM's scale sets are unchanged (no write: the owner's set is neither retired nor
    replaced, the rival creates nothing); Blocked naming the owner's relation first (what to
    fix), the rest counted; the log says the rival takes nothing of the owner's set.
    """
    ctx, state, before = owner_served(sim, resources, app_key)
    (owned,) = state.relations
    assert isinstance(owned, testing.Relation)
    if breakage == "invalid data":
        owned = dataclasses.replace(
            owned, remote_app_data={**owned.remote_app_data, "version": "99"}
        )
        kept_secrets = state.secrets
    else:
        kept_secrets = {s for s in state.secrets if s.tracked_content.get("app") != OWNER}
    relation, secrets = publication(RIVAL, app_key, entity_owner="evil")
    state = dataclasses.replace(
        state, relations={owned, relation}, secrets={*kept_secrets, *secrets}
    )
    sim.reset_log()

    out = passes(ctx, sim, ctx.run(ctx.on.relation_changed(relation), state))

    assert scaleset_writes(sim) == []
    assert scalesets(sim) == [before]
    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert out.unit_status.message.startswith(f"relation garm-configurator:{owned.id} ({OWNER})")
    assert out.unit_status.message.endswith("+1 more")
    assert f"belongs to {OWNER}, whose publication cannot be read now; {RIVAL}" in caplog.text


def test_the_owners_relation_readded_with_a_higher_id_changes_nothing(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: the owner's set is served; its relation is re-added (a higher id than the rival's).

    A new leader runs (no state but GARM's).
    Act: hooks on that leader past the grace.
    Assert: no scale-set write reached GARM; Blocked naming both.
    """
    ctx, served, before = owner_served(sim, resources, app_key)
    rival, rival_secrets = publication(RIVAL, app_key, entity_owner="evil")
    owner, owner_secrets = publication(OWNER, app_key)
    assert owner.id > rival.id
    garms_own = {s for s in served.secrets if "app" not in s.tracked_content}
    new_leader = dataclasses.replace(
        served,
        relations={rival, owner},
        secrets={*garms_own, *rival_secrets, *owner_secrets},
    )
    sim.reset_log()

    out = passes(ctx, sim, new_leader)

    assert scaleset_writes(sim) == []
    assert scalesets(sim) == [before]
    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert f"'{RIVAL}' and '{OWNER}'" in out.unit_status.message


@pytest.mark.parametrize("owner_readable", [True, False])
def test_a_rival_with_another_key_for_the_same_app_never_overwrites_the_owners(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
    owner_readable: bool,
):
    """Arrange: `small` is served through App 123/456; then `rival` relates.

    `rival` publishes its own scale set and org through App 123/456 with another key; the
    owner's publication is readable or not.

    Act: hooks past the grace.
    Assert: GARM's credentials are as they were (the owner's key); with both readable the
    status names both configurators.
    """
    ctx, state, _ = owner_served(sim, resources, app_key)
    (before,) = credentials(sim)
    (owned,) = state.relations
    assert isinstance(owned, testing.Relation)
    if not owner_readable:
        owned = dataclasses.replace(
            owned, remote_app_data={**owned.remote_app_data, "version": "99"}
        )
    relation, secrets = publication(RIVAL, pkcs1_app_key(), entity_owner="evil", name="other")
    state = dataclasses.replace(
        state, relations={owned, relation}, secrets={*state.secrets, *secrets}
    )

    out = passes(ctx, sim, ctx.run(ctx.on.relation_changed(relation), state))

    assert credentials(sim) == [before]
    assert isinstance(out.unit_status, ops.BlockedStatus)
    if owner_readable:
        assert f"{RIVAL} and {OWNER}" in out.unit_status.message


def credentials(sim: GarmSim) -> list[object]:
    """GARM's GitHub credentials, as GARM lists them."""
    from garm_api import GarmClient  # noqa: PLC0415 - one client per look

    return list(GarmClient(sim.url, token=sim.token()).list_github_credentials())
