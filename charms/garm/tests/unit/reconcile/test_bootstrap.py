"""reconcile.bootstrap against the GARM simulator over real HTTP, and the secret store contract."""

from __future__ import annotations

import socket
from collections.abc import Mapping

import pytest

from garm_api import GarmClient
from garm_sim import GarmSim
from reconcile.bootstrap import (
    ADMIN_LABEL,
    DB_PASSPHRASE_LABEL,
    JWT_SECRET_LABEL,
    BootstrapError,
    BootstrapSecrets,
    ControllerUrls,
    bootstrap,
    ensure_secrets,
    new_passphrase,
    read_secrets,
    wait_until_serving,
)

CREDS = BootstrapSecrets(
    jwt_secret="jwt", db_passphrase="p" * 32, admin_username="admin", admin_password="pw-9fK2mQ"
)
URLS = ControllerUrls.from_base("https://garm.example.com")


class MemoryStore:
    """An in-memory SecretStore."""

    def __init__(self) -> None:
        self.secrets: dict[str, dict[str, str]] = {}

    def get(self, label: str) -> Mapping[str, str] | None:
        """The content, or None."""
        return self.secrets.get(label)

    def create(self, label: str, content: Mapping[str, str]) -> None:
        """Store the content; creating twice is a bug."""
        assert label not in self.secrets
        self.secrets[label] = dict(content)


@pytest.fixture
def client(garm: GarmSim) -> GarmClient:
    """A client for the simulator."""
    return GarmClient(garm.url, read_timeout=2)


def test_ensure_secrets_creates_once_and_never_regenerates():
    """Arrange: an empty store. Act: ensure three times (three hooks).

    Assert: the first creates three secrets and returns None (never used in the hook that
    created them); the next ones return the same values, creating nothing.
    """
    store = MemoryStore()

    first = ensure_secrets(store)
    created = dict(store.secrets)
    second = ensure_secrets(store)
    third = ensure_secrets(store)

    assert first is None
    assert set(created) == {JWT_SECRET_LABEL, DB_PASSPHRASE_LABEL, ADMIN_LABEL}
    assert store.secrets == created
    assert second is not None
    assert second == third == read_secrets(store)


def test_ensure_secrets_completes_a_partial_set_without_using_it():
    """Arrange: only the JWT secret survived an earlier hook. Act: ensure.

    Assert: the two missing ones are created, the JWT secret kept; None until a later hook.
    """
    store = MemoryStore()
    store.create(JWT_SECRET_LABEL, {"secret": "kept"})

    assert ensure_secrets(store) is None
    assert store.secrets[JWT_SECRET_LABEL] == {"secret": "kept"}
    assert set(store.secrets) == {JWT_SECRET_LABEL, DB_PASSPHRASE_LABEL, ADMIN_LABEL}


def test_read_secrets_is_none_until_all_exist():
    """Arrange: only the JWT secret exists. Act: read. Assert: None."""
    store = MemoryStore()
    store.create(JWT_SECRET_LABEL, {"secret": "x"})

    assert read_secrets(store) is None


def test_passphrase_is_32_characters_and_varied():
    """Arrange: nothing. Act: make 50 passphrases. Assert: 32 chars each, all different."""
    passphrases = {new_passphrase() for _ in range(50)}

    assert len(passphrases) == 50
    assert all(len(passphrase) == 32 for passphrase in passphrases)


def test_secrets_stay_out_of_repr():
    """Arrange: bootstrap secrets. Act: repr. Assert: no secret value in it."""
    text = repr(CREDS)

    assert "pw-9fK2mQ" not in text
    assert "jwt" not in text.replace("jwt_secret", "")


def test_fresh_garm_is_initialised_and_gets_urls(client: GarmClient, garm: GarmSim):
    """Arrange: GARM before first-run. Act: bootstrap.

    Assert: first-run with the admin, login, all four URLs set; the client is logged in.
    """
    report = bootstrap(client, CREDS, URLS)

    assert report.initialised
    assert report.urls_updated
    assert garm.admin_credentials == ("admin", "pw-9fK2mQ")
    assert garm.controller_urls()["agent_url"] == "https://garm.example.com/agent"
    assert garm.authenticates(client.token or "")


def test_converged_garm_gets_no_write(client: GarmClient, garm: GarmSim):
    """Arrange: GARM initialised with the URLs. Act: bootstrap. Assert: only the login."""
    bootstrap(client, CREDS, URLS)
    garm.reset_log()

    report = bootstrap(client, CREDS, URLS)

    assert not report.initialised
    assert not report.urls_updated
    assert garm.write_calls() == ["POST /api/v1/auth/login"]


def test_changed_external_url_updates_urls(client: GarmClient, garm: GarmSim):
    """Arrange: bootstrapped. Act: bootstrap with another base URL. Assert: one PUT."""
    bootstrap(client, CREDS, URLS)
    garm.reset_log()

    report = bootstrap(client, CREDS, ControllerUrls.from_base("http://10.0.0.9:9997"))

    assert report.urls_updated
    assert garm.controller_urls()["callback_url"] == "http://10.0.0.9:9997/api/v1/callbacks"
    assert garm.write_calls().count("PUT /api/v1/controller") == 1


def test_expired_token_triggers_one_relogin(client: GarmClient, garm: GarmSim):
    """Arrange: bootstrapped; the next token GARM hands out has expired when it is first used.

    Act: bootstrap. Assert: the 401 on controller-info leads to exactly one more login.
    """
    bootstrap(client, CREDS, URLS)
    garm.reset_log()
    garm.fault(
        "before",
        method="GET",
        path="/api/v1/controller-info",
        times=1,
        action=lambda: garm.clock.advance(garm.signer.time_to_live + 1),
    )

    bootstrap(client, CREDS, URLS)

    assert garm.calls().count("POST /api/v1/auth/login") == 2
    assert garm.calls().count("GET /api/v1/controller-info") == 2


def test_wrong_password_is_a_bootstrap_error_without_the_password(
    client: GarmClient, garm: GarmSim
):
    """Arrange: GARM initialised with another password. Act: bootstrap.

    Assert: BootstrapError whose text holds no password.
    """
    garm.bootstrap("admin", "another-password", set_urls=False)

    with pytest.raises(BootstrapError) as caught:
        bootstrap(client, CREDS, URLS)

    assert "pw-9fK2mQ" not in str(caught.value)
    assert "another-password" not in str(caught.value)


def test_wait_until_serving_returns_at_the_first_answer(client: GarmClient, garm: GarmSim):
    """Arrange: a GARM before first-run (it answers 409). Act: wait.

    Assert: True after one probe: a refusal proves GARM is listening.
    """
    sleeps: list[float] = []

    assert wait_until_serving(client, 5.0, sleep=sleeps.append) is True
    assert garm.calls() == ["GET /api/v1/controller-info"]
    assert sleeps == []


def test_wait_until_serving_gives_up_at_the_timeout():
    """Arrange: nobody listens on the port; a clock that moves 1 s per probe. Act: wait 3 s.

    Assert: False, after probing until the deadline and sleeping between probes.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ticks = iter(range(100))
    sleeps: list[float] = []

    started = wait_until_serving(
        GarmClient(f"http://127.0.0.1:{port}"),
        3.0,
        clock=lambda: float(next(ticks)),
        sleep=sleeps.append,
    )

    assert started is False
    assert len(sleeps) == 2
