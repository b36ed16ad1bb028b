"""Fixtures: a GARM simulator over real HTTP, and real GARM binaries when they are available."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contract.garm_http import Reply, call
from contract.real_garm import NEWER, V021, RealGarm, garm_version
from garm_sim import GarmSim
from must_run import cannot_run, in_ci

# The recordings were made with a provider called "fake"; replaying their bodies needs it too.
PROVIDER = "fake"
ADMIN = "admin"
# GARM refuses first-run passwords below zxcvbn score 4; this one scores 4 on both binaries.
PASSWORD = "Garm-Contract-9f3Kq!xZ"


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


# -- Targets: the same HTTP-only tests against the simulator and real GARM binaries ----------

BIN_ENV = {V021: "GARM_BIN_V021", NEWER: "GARM_BIN_NEWER"}
ALIAS_ENV = "GARM_BIN"
BIN_DIR_ENV = "GARM_BIN_DIR"
# CI lays the binaries in shared/garm/bin/ beside the checkout; tox passes it as GARM_BIN_DIR.
DEFAULT_BIN_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "garm" / "bin"
V021_BINARY_NAME = "garm-v0.2.1"
TARGETS = ("sim-v0.2.1", "sim-newer", "real-v0.2.1", "real-newer")


@functools.cache
def garm_binary(version: str) -> tuple[str | None, str]:
    """Return the GARM binary for a version (or None) and, without one, the reason.

    Looked up in order: `GARM_BIN_V021` / `GARM_BIN_NEWER`; `GARM_BIN` when its `--version`
    is that version; the binaries directory (`GARM_BIN_DIR`, default `shared/garm/bin/` beside
    the checkout): `garm-v0.2.1` for v0.2.1, any other `garm-*` for newer.
    """
    explicit = os.environ.get(BIN_ENV[version])
    if explicit:
        if _is_executable(Path(explicit)):
            return explicit, ""
        return None, f"{BIN_ENV[version]}={explicit} is not an executable file"
    alias = os.environ.get(ALIAS_ENV)
    if alias and _is_executable(Path(alias)) and garm_version(alias) == version:
        return alias, ""
    directory = Path(os.environ.get(BIN_DIR_ENV) or DEFAULT_BIN_DIR)
    for candidate in _candidates(directory, version):
        return str(candidate), ""
    return None, (
        f"real-GARM mode needs a GARM {version} server binary: set "
        f"{BIN_ENV[version]}=/path/to/garm (or {ALIAS_ENV}), or put it in {directory}"
    )


def _candidates(directory: Path, version: str) -> list[Path]:
    if not directory.is_dir():
        return []
    # The directory also holds provider binaries (garm-provider-*), which are no GARM server.
    found = [
        p
        for p in sorted(directory.glob("garm-*"))
        if _is_executable(p) and not p.name.startswith("garm-provider-")
    ]
    if version == V021:
        return [p for p in found if p.name == V021_BINARY_NAME]
    return [p for p in found if p.name != V021_BINARY_NAME]


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def target_param(name: str) -> Any:
    """Return a pytest param for a target; real ones skip (with the reason) without a binary."""
    kind, version = name.split("-", 1)
    if kind == "sim":
        return pytest.param(name, id=name)
    binary, reason = garm_binary(version)
    return pytest.param(
        name,
        id=name,
        marks=[
            pytest.mark.real_garm,
            # In CI the case runs and fails in `open_target`, naming what is missing.
            pytest.mark.skipif(binary is None and not in_ci(), reason=reason),
        ],
    )


REAL_TARGETS = [target_param(name) for name in TARGETS if name.startswith("real-")]
ALL_TARGETS = [target_param(name) for name in TARGETS]


@dataclass
class Target:
    """A GARM to test over HTTP only: the simulator or a real binary, as one GARM version.

    `wait_until` hides the difference in timing: the simulator runs worker passes at once,
    a real GARM needs seconds (runners appear about 12 s after creation).
    """

    kind: str
    version: str
    url: str
    sim: GarmSim | None = None
    real: RealGarm | None = None
    token: str | None = None
    repo_id: str = ""

    @property
    def name(self) -> str:
        """Return the target's name, e.g. `real-v0.2.1`."""
        return f"{self.kind}-{self.version}"

    @property
    def releases_url(self) -> str:
        """Return a garm-agent releases index GARM may be given (the simulator never reads it)."""
        if self.real is not None:
            return self.real.github.releases_url
        return f"{self.url}/fake-github/repos/cloudbase/garm-agent/releases"

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

    def drop_at_github(self, github_id: int) -> None:
        """Make GitHub forget a scale set (its offline deletion, garm-behaviour B33)."""
        if self.real is not None:
            self.real.github.drop_scale_set(github_id)
            return
        assert self.sim is not None
        self.sim.state.github.drop(github_id)

    def start_job(self, scaleset: dict[str, Any], runner: str) -> None:
        """GitHub hands the runner a job: its agent is busy there (GitHub refuses to remove it).

        Args:
            scaleset: the scale set's JSON as GARM answers it (`scale_set_id` is GitHub's id).
            runner: the runner's name, the scale set's only runner.
        """
        if self.real is not None:
            self.real.github.start_job(scaleset["scale_set_id"], runner)
            return
        sim = self.sim
        assert sim is not None
        started: list[str] = []

        # The simulator hands jobs only to runners that report `idle`, a pass after they run.
        def take() -> bool:
            try:
                started.append(sim.start_job(scaleset["id"]))
            except LookupError:
                return False
            return True

        assert self.wait_until(take), f"no runner of {scaleset['name']} reported idle"
        assert started == [runner], f"the simulator gave the job to {started}, not {runner}"

    def report_idle(self, runner: str) -> None:
        """The runner reports `installing`, then `idle`, as GARM's install script makes it do.

        A real GARM takes a job only for a runner that reported `idle`; the simulator's runners
        report by themselves a pass after they run.
        """
        if self.real is None:
            return
        token = self.real.instance_token(runner)
        for status in ("installing", "idle"):
            body = {"status": status, "message": "contract runner"}
            reply = call(self.url, "POST", "/callbacks/status", body, token=token)
            assert reply.status == 200, reply.raw

    def finish_job(self, runner: str) -> None:
        """The runner's job ends at GitHub (the ephemeral runner leaves its agents list)."""
        if self.real is not None:
            self.real.github.finish_job(runner)
            return
        assert self.sim is not None
        self.sim.finish_job(runner)

    def restart(self) -> None:
        """Restart GARM with its state: every scale-set worker starts again."""
        if self.real is not None:
            self.real.restart()
            return
        assert self.sim is not None
        self.sim.restart()

    def bootstrap(self) -> Target:
        """First-run, login, URLs, PAT credentials and repository fake-org/fake-repo."""
        if self.real is not None:
            self.token, self.repo_id = self.real.bootstrap(ADMIN, PASSWORD)
            return self
        assert self.sim is not None
        bootstrapped = bootstrap_over_http(self.sim)
        self.token, self.repo_id = bootstrapped.token, bootstrapped.repo_id
        return self

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
            time.sleep(0.25)
        return check()


@contextmanager
def open_target(
    name: str, workdir: Path, *, metrics_period: str | None = None
) -> Iterator[Target]:
    """Start a fresh, uninitialised GARM for a target name; stop it afterwards.

    A real GARM's log is checked on the way out: a DNS lookup or a secret in it fails the test.

    Args:
        name: the target, e.g. `real-v0.2.1`.
        workdir: where a real GARM keeps its files.
        metrics_period: a real GARM's /metrics on, unauthenticated, refreshed this often
            (e.g. "1s"); None leaves it off. The simulator has no /metrics.
    """
    kind, version = name.split("-", 1)
    if kind == "sim":
        with GarmSim([PROVIDER], garm_version=version) as server:
            yield Target(kind, version, server.url, sim=server)
        return
    binary, reason = garm_binary(version)
    if binary is None:
        cannot_run(reason)
    workdir.mkdir(parents=True, exist_ok=True)
    real = RealGarm(binary, workdir, PROVIDER, version=version, metrics_period=metrics_period)
    try:
        real.start()
        yield Target(kind, version, real.url, real=real)
    finally:
        real.stop()
    real.assert_no_dns_lookup()
    assert real.leaked_secrets() == [], f"secrets in GARM's log {real.log_path}"


@pytest.fixture(params=ALL_TARGETS)
def target_name(request: pytest.FixtureRequest) -> str:
    """The name of one of the four targets (real ones skip without their binary)."""
    return request.param


@pytest.fixture
def bare_target(target_name: str, tmp_path: Path) -> Iterator[Target]:
    """A fresh GARM, not bootstrapped."""
    with open_target(target_name, tmp_path / "garm") as fresh:
        yield fresh


@pytest.fixture
def target(bare_target: Target) -> Target:
    """A bootstrapped GARM with PAT credentials and one repository (fake-org/fake-repo)."""
    return bare_target.bootstrap()
