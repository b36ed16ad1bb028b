"""Fixtures: a GARM simulator over real HTTP (and, with GARM_BIN, a real GARM binary)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contract.garm_http import Reply, call
from contract.real_garm import RealGarm
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
    return bootstrap_over_http(sim)


def bootstrap_over_http(sim: GarmSim) -> Garm:
    """First-run, login, controller URLs, PAT credentials and a repository, all over HTTP."""
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


# -- Targets: the same HTTP-only tests against the simulator and, with GARM_BIN, a real GARM ------

GARM_BIN_ENV = "GARM_BIN"
_NO_GARM_BIN = f"real-GARM mode needs a GARM server binary: set {GARM_BIN_ENV}=/path/to/garm"


@dataclass
class Target:
    """A GARM to test over HTTP only: the simulator or a real binary.

    `wait_until` hides the difference in timing: the simulator runs worker passes at once,
    a real GARM needs seconds (runners appear about 12 s after creation, REFERENCE C6).
    """

    kind: str
    url: str
    sim: GarmSim | None = None
    real: RealGarm | None = None
    token: str | None = None
    repo_id: str = ""

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Reply:
        """Call the API as the admin (once bootstrapped)."""
        kwargs.setdefault("token", self.token)
        return call(self.url, method, path, body, **kwargs)

    def create_scaleset(self, name: str, **fields: Any) -> dict[str, Any]:
        """Create a scale set under the repository; return its JSON."""
        reply = self.call(
            "POST", f"/repositories/{self.repo_id}/scalesets", scaleset_body(name, **fields)
        )
        assert reply.status == 200, reply.raw
        return reply.json

    def wait_until(self, check: Callable[[], bool], timeout: float = 60.0) -> bool:
        """Return True as soon as `check()` holds, False after `timeout` (real) or 20 passes."""
        if self.sim is not None:
            for _ in range(20):
                if check():
                    return True
                self.sim.advance(5)
            return check()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.5)
        return check()


@pytest.fixture(
    params=[
        "sim",
        pytest.param(
            "real",
            marks=[
                pytest.mark.real_garm,
                pytest.mark.skipif(not os.environ.get(GARM_BIN_ENV), reason=_NO_GARM_BIN),
            ],
        ),
    ]
)
def bare_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """A fresh GARM, not bootstrapped: the simulator, or GARM_BIN when set."""
    if request.param == "sim":
        with GarmSim([PROVIDER]) as server:
            yield Target("sim", server.url, sim=server)
        return
    real = RealGarm(os.environ[GARM_BIN_ENV], tmp_path, PROVIDER)
    try:
        real.start()
        yield Target("real", real.url, real=real)
    finally:
        real.stop()


@pytest.fixture
def target(bare_target: Target) -> Target:
    """A bootstrapped GARM with PAT credentials and one repository (fake-org/fake-repo)."""
    if bare_target.real is not None:
        bare_target.token, bare_target.repo_id = bare_target.real.bootstrap(ADMIN, PASSWORD)
        return bare_target
    assert bare_target.sim is not None
    bootstrapped = bootstrap_over_http(bare_target.sim)
    bare_target.token, bare_target.repo_id = bootstrapped.token, bootstrapped.repo_id
    return bare_target
