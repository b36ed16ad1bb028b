"""reconcile.github_objects through garm_api against the GARM simulator over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from garm_api import EntityKind, GarmClient, GarmUnreachable
from garm_sim import GarmSim
from reconcile.github_objects import EntityBinding, GithubApp, reconcile_github
from scaleset_reconciler.spec import EntityRef

ORG = EntityRef(EntityKind.ORGANIZATION, "acme")
REPO = EntityRef(EntityKind.REPOSITORY, "acme/widgets")


def pem_key(pkcs8: bool = False) -> bytes:
    """A fresh RSA key as PEM: PKCS#1 like GitHub issues, or PKCS#8 which GARM refuses."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_format = (
        serialization.PrivateFormat.PKCS8
        if pkcs8
        else serialization.PrivateFormat.TraditionalOpenSSL
    )
    return key.private_bytes(serialization.Encoding.PEM, key_format, serialization.NoEncryption())


@pytest.fixture(scope="module")
def app_key() -> bytes:
    """One PKCS#1 key for the module (generating keys is slow)."""
    return pem_key()


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


def test_creates_shared_credentials_and_entities_then_converges(
    sim: GarmSim, client: GarmClient, app_key: bytes
):
    """Arrange: an empty GARM; an org and a repo served by the same App installation.

    Act: reconcile twice.
    Assert: one credentials object, the org and the repo exist; the second pass writes nothing.
    """
    app = GithubApp(app_id=11, installation_id=22, private_key_pem=app_key)
    bindings = [EntityBinding(ORG, app), EntityBinding(REPO, app)]

    first = reconcile_github(client, bindings)
    writes_before = sim.write_count()
    second = reconcile_github(client, bindings)

    assert [c.name for c in client.list_github_credentials()] == ["garm-app-11-22"]
    assert [e.name for e in client.list_entities(EntityKind.ORGANIZATION)] == ["acme"]
    repos = client.list_entities(EntityKind.REPOSITORY)
    assert [(e.name, e.credentials_name) for e in repos] == [("acme/widgets", "garm-app-11-22")]
    assert len(first.writes) == 3
    assert first.problems == {}
    assert second.writes == []
    assert sim.write_count() == writes_before


def test_rotated_key_updates_credentials_in_place(
    sim: GarmSim, client: GarmClient, app_key: bytes
):
    """Arrange: credentials created with one key. Act: reconcile with a new key.

    Assert: the same credentials object is updated (same id), nothing is created.
    """
    reconcile_github(client, [EntityBinding(ORG, GithubApp(11, 22, app_key))])
    (before,) = client.list_github_credentials()

    report = reconcile_github(client, [EntityBinding(ORG, GithubApp(11, 22, pem_key()))])

    (after,) = client.list_github_credentials()
    assert after.id == before.id
    assert after.description != before.description
    assert report.writes == ["updated credentials garm-app-11-22"]


def test_existing_entity_is_matched_case_insensitively_and_repointed(
    sim: GarmSim, client: GarmClient, app_key: bytes
):
    """Arrange: GARM already has org `ACME` on other (hand-made PAT) credentials.

    Act: reconcile org `acme` with an App.
    Assert: no duplicate org; the existing one now uses the App's credentials.
    """
    sim.seed_entity(kind="organization", name="ACME")

    report = reconcile_github(client, [EntityBinding(ORG, GithubApp(11, 22, app_key))])

    (org,) = client.list_entities(EntityKind.ORGANIZATION)
    assert org.name == "ACME"
    assert org.credentials_name == "garm-app-11-22"
    assert report.problems == {}


def test_one_bad_key_does_not_stop_the_others(sim: GarmSim, client: GarmClient, app_key: bytes):
    """Arrange: the org's App has a PKCS#8 key (GARM would answer 500); the repo's is fine.

    Act: reconcile. Assert: the repo is served; the org reports waiting for its credentials.
    """
    bad = GithubApp(1, 2, pem_key(pkcs8=True))
    good = GithubApp(11, 22, app_key)

    report = reconcile_github(client, [EntityBinding(ORG, bad), EntityBinding(REPO, good)])

    assert "PKCS#1" in report.problems["garm-app-1-2"]
    assert report.problems["acme"] == "waiting for credentials garm-app-1-2"
    assert [e.name for e in client.list_entities(EntityKind.REPOSITORY)] == ["acme/widgets"]
    assert client.list_entities(EntityKind.ORGANIZATION) == []


def test_outage_propagates(sim: GarmSim, client: GarmClient, app_key: bytes):
    """Arrange: GARM refuses connections. Act: reconcile. Assert: GarmUnreachable, not a report."""
    with sim.refusing_connections(), pytest.raises(GarmUnreachable):
        reconcile_github(client, [EntityBinding(ORG, GithubApp(11, 22, app_key))])


def test_nothing_to_serve_makes_no_call(sim: GarmSim, client: GarmClient):
    """Arrange: no bindings. Act: reconcile. Assert: no request at all."""
    before = len(sim.requests)

    reconcile_github(client, [])

    assert len(sim.requests) == before
