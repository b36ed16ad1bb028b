"""Fixtures: a GARM simulator over real HTTP (and, with GARM_BIN, a real GARM binary)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from contract.garm_http import Reply, call
from garm_sim import GarmSim

# The recordings were made with a provider called "fake"; replaying their bodies needs it too.
PROVIDER = "fake"
ADMIN = "admin"
PASSWORD = "Contract-Suite-Pa55word!"


@dataclass
class Garm:
    """A bootstrapped GARM with one repository, and a token to call it with."""

    sim: GarmSim
    token: str
    repo_id: str

    @property
    def url(self) -> str:
        """Return the base URL."""
        return self.sim.url

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Reply:
        """Call the API as the admin."""
        kwargs.setdefault("token", self.token)
        return call(self.url, method, path, body, **kwargs)

    def create_scaleset(self, name: str, **fields: Any) -> dict[str, Any]:
        """Create a scale set under the repository; return its JSON (fails the test otherwise)."""
        body = scaleset_body(name, **fields)
        reply = self.call("POST", f"/repositories/{self.repo_id}/scalesets", body)
        assert reply.status == 200, reply.raw
        return reply.json


def scaleset_body(name: str, **fields: Any) -> dict[str, Any]:
    """Return a valid create body like the recordings' (disabled, min 0, max 2)."""
    body: dict[str, Any] = {
        "name": name,
        "provider_name": PROVIDER,
        "image": "ubuntu:22.04",
        "flavor": "small",
        "os_type": "linux",
        "os_arch": "amd64",
        "labels": ["harness", "x64"],
        "min_idle_runners": 0,
        "max_runners": 2,
        "enabled": False,
    }
    return body | fields


@pytest.fixture
def sim() -> Iterator[GarmSim]:
    """A fresh, uninitialised simulator (no admin, no controller URLs)."""
    with GarmSim([PROVIDER]) as server:
        yield server


@pytest.fixture
def garm(sim: GarmSim) -> Garm:
    """A simulator bootstrapped over HTTP (first-run, login, URLs) with PAT creds and a repo."""
    first_run = {"username": ADMIN, "email": "admin@example.com", "password": PASSWORD}
    assert call(sim.url, "POST", "/first-run", first_run).status == 200
    login = call(sim.url, "POST", "/auth/login", {"username": ADMIN, "password": PASSWORD})
    token = login.json["token"]
    urls = {"metadata_url": f"{sim.url}/api/v1/metadata", "callback_url": f"{sim.url}/cb"}
    assert call(sim.url, "PUT", "/controller", urls, token=token).status == 200
    creds = {
        "name": "fake-pat",
        "description": "PAT for fake GitHub",
        "endpoint": "github.com",
        "auth_type": "pat",
        "pat": {"oauth2_token": "fake-pat-token"},
    }
    assert call(sim.url, "POST", "/github/credentials", creds, token=token).status == 200
    repo = {
        "owner": "fake-org",
        "name": "fake-repo",
        "credentials_name": "fake-pat",
        "webhook_secret": "harness-secret",
    }
    reply = call(sim.url, "POST", "/repositories", repo, token=token)
    assert reply.status == 200, reply.raw
    sim.reset_log()
    return Garm(sim, token, reply.json["id"])
