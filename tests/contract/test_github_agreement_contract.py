"""Configurators sharing a GitHub App installation or an entity (docs/adr/0018), over HTTP.

`reconcile.github_objects` through `garm_api` against the GARM simulator: configurators that
disagree are all refused by name and nothing is written for what they share; while one is
unreadable, existing credentials keep their key and entities their App.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from garm_api import EntityKind, GarmClient
from garm_sim import GarmSim
from reconcile.github_agreement import apps_by_entity
from reconcile.github_objects import EntityBinding, GithubApp, reconcile_github
from scaleset_reconciler.spec import EntityRef

ORG = EntityRef(EntityKind.ORGANIZATION, "acme")
REPO = EntityRef(EntityKind.REPOSITORY, "acme/widgets")


def pem_key() -> bytes:
    """A fresh PKCS#1 RSA key, as GitHub issues App keys."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


@pytest.fixture(scope="module")
def keys() -> tuple[bytes, bytes]:
    """Two keys for the module (generating keys is slow)."""
    return pem_key(), pem_key()


@pytest.fixture
def sim() -> Iterator[GarmSim]:
    """A bootstrapped simulator."""
    with GarmSim(["openstack"]) as server:
        server.bootstrap()
        yield server


@pytest.fixture
def client(sim: GarmSim) -> GarmClient:
    """A garm_api client logged in as the admin."""
    client = GarmClient(sim.url, read_timeout=5)
    client.login("admin", sim.admin_password)
    return client


def test_two_keys_for_one_installation_block_both_and_overwrite_nothing(
    sim: GarmSim, client: GarmClient, keys: tuple[bytes, bytes]
):
    """Arrange: `a` is served through App 11/22; `b` then publishes 11/22 with another key.

    Act: reconcile both, in both orders.
    Assert: the credentials keep a's key (description unchanged, no write); the problem names
    both configurators.
    """
    key_a, key_b = keys
    binding_a = EntityBinding(ORG, GithubApp(11, 22, key_a), application="a")
    binding_b = EntityBinding(REPO, GithubApp(11, 22, key_b), application="b")
    reconcile_github(client, [binding_a])
    (before,) = client.list_github_credentials()

    for order in ([binding_a, binding_b], [binding_b, binding_a]):
        writes = sim.write_count()
        report = reconcile_github(client, order)

        assert client.list_github_credentials() == [before]
        assert sim.write_count() == writes
        assert "a and b" in report.problems["garm-app-11-22"]


def test_two_apps_for_one_entity_block_both_and_change_nothing(
    sim: GarmSim, client: GarmClient, keys: tuple[bytes, bytes]
):
    """Arrange: two configurators name the same org (spelled differently) with different Apps.

    Act: reconcile. Assert: the org is not created; the problem names both; the GitHub check
    has no App for it.
    """
    key_a, key_b = keys
    bindings = [
        EntityBinding(ORG, GithubApp(11, 22, key_a), application="a"),
        EntityBinding(EntityRef(ORG.kind, "Acme"), GithubApp(33, 44, key_b), application="b"),
    ]

    report = reconcile_github(client, bindings)

    assert client.list_entities(EntityKind.ORGANIZATION) == []
    assert "a and b" in report.problems["acme"]
    assert apps_by_entity(bindings) == {}


def test_an_unreadable_configurator_keeps_its_key_and_its_entitys_app(
    sim: GarmSim, client: GarmClient, keys: tuple[bytes, bytes]
):
    """Arrange: `a` serves org acme through App 11/22; then a's publication becomes unreadable.

    Act: `b` publishes App 11/22 with another key, and org acme through App 33/44.
    Assert: neither the credentials' key nor the org's credentials change; b's new App's
    credentials (missing so far) are created.
    """
    key_a, key_b = keys
    reconcile_github(client, [EntityBinding(ORG, GithubApp(11, 22, key_a), application="a")])
    (credentials_before,) = client.list_github_credentials()

    reconcile_github(
        client,
        [
            EntityBinding(REPO, GithubApp(11, 22, key_b), application="b"),
            EntityBinding(ORG, GithubApp(33, 44, key_b), application="b"),
        ],
        complete=False,
    )

    credentials = {c.name: c for c in client.list_github_credentials()}
    assert credentials["garm-app-11-22"] == credentials_before
    assert "garm-app-33-44" in credentials
    (org,) = client.list_entities(EntityKind.ORGANIZATION)
    assert org.credentials_name == "garm-app-11-22"
