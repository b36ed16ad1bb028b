"""The simulator's own controls: faults, refused connections, counters, clock, start-up."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from contract.conftest import Garm
from contract.garm_http import call
from doubles.tls_publication import untrusted_server_context
from garm_sim import GarmSim

TESTS_DIR = Path(__file__).parent.parent


def test_simulator_starts_in_under_half_a_second():
    """Arrange: nothing. Act: start a simulator and make one call. Assert: under 0.5 s."""
    started = time.perf_counter()
    with GarmSim() as sim:
        reply = call(sim.url, "GET", "/controller-info")
        elapsed = time.perf_counter() - started

    assert reply.status == 409
    assert elapsed < 0.5


def test_status_fault_answers_and_then_expires(garm: Garm):
    """Arrange: a 503 fault on GET /scalesets for one request. Act: list twice.

    Assert: 503 first, then the normal 200.
    """
    garm.sim.fault(method="GET", path="/api/v1/scalesets", status=503, times=1)

    first = garm.call("GET", "/scalesets")
    second = garm.call("GET", "/scalesets")

    assert first.status == 503
    assert second.status == 200


def test_fault_matches_route_templates(garm: Garm):
    """Arrange: a 500 fault on PUT of any scale set. Act: update one, then read it.

    Assert: the PUT fails and changes nothing; the GET (other method) is served.
    """
    created = garm.create_scaleset("faulted")
    garm.sim.fault(method="PUT", path="/api/v1/scalesets/{id}")

    put = garm.call("PUT", f"/scalesets/{created['id']}", {"max_runners": 5})
    get = garm.call("GET", f"/scalesets/{created['id']}")

    assert put.status == 500
    assert get.json["max_runners"] == 2


def test_reset_fault_resets_the_connection(garm: Garm):
    """Arrange: a reset fault on every route. Act: call. Assert: the client sees a reset."""
    garm.sim.fault("reset")

    with pytest.raises((ConnectionResetError, urllib.error.URLError)) as caught:
        garm.call("GET", "/scalesets")

    reason = getattr(caught.value, "reason", caught.value)
    assert isinstance(reason, ConnectionResetError)


def test_drop_fault_closes_without_answer(garm: Garm):
    """Arrange: a drop fault. Act: call. Assert: the server closes without answering."""
    garm.sim.fault("drop", path="/api/v1/scalesets")

    with pytest.raises(http.client.RemoteDisconnected):
        garm.call("GET", "/scalesets")


def test_latency_fault_delays_but_serves(garm: Garm):
    """Arrange: 0.2 s latency on GET /scalesets. Act: call. Assert: 200 after at least 0.2 s."""
    garm.sim.fault("latency", path="/api/v1/scalesets", delay=0.2)

    started = time.perf_counter()
    reply = garm.call("GET", "/scalesets")

    assert reply.status == 200
    assert time.perf_counter() - started >= 0.2


def test_refused_connections_keep_state(garm: Garm):
    """Arrange: a scale set. Act: call while the simulator refuses connections, then after.

    Assert: connection refused inside the block; afterwards the scale set is still there.
    """
    garm.create_scaleset("survivor")

    with garm.sim.refusing_connections(), pytest.raises(urllib.error.URLError) as caught:
        garm.call("GET", "/scalesets")

    assert isinstance(caught.value.reason, ConnectionRefusedError)
    assert [s["name"] for s in garm.call("GET", "/scalesets").json] == ["survivor"]


def test_counters_count_by_method_and_template(garm: Garm):
    """Arrange: a fresh log. Act: create one scale set, read it twice, update it once.

    Assert: counts per method and template, and three writes in total (login excluded).
    """
    created = garm.create_scaleset("counted")
    garm.call("GET", f"/scalesets/{created['id']}")
    garm.call("GET", f"/scalesets/{created['id']}")
    garm.call("PUT", f"/scalesets/{created['id']}", {"max_runners": 3})
    garm.call("POST", "/auth/login", {"username": "admin", "password": "x"})

    assert garm.sim.count("GET", "/api/v1/scalesets/{id}") == 2
    assert garm.sim.count(path=f"/api/v1/scalesets/{created['id']}") == 3
    assert garm.sim.count("POST") == 2
    assert garm.sim.write_count() == 2
    assert garm.sim.requests[-1].status == 401


def test_clock_drives_timestamps(garm: Garm):
    """Arrange: a frozen-clock simulator. Act: advance 1 hour between two creates.

    Assert: the second `created_at` is an hour after the first.
    """
    with GarmSim(["fake"], frozen_clock=True) as sim:
        token = sim.bootstrap()
        repo = sim.seed_entity()
        body = {"provider_name": "fake", "image": "i", "flavor": "f", "os_type": "linux"}
        body |= {"max_runners": 1}
        path = f"/repositories/{repo}/scalesets"
        first = call(sim.url, "POST", path, body | {"name": "a"}, token=token).json
        sim.clock.advance(3600)
        second = call(sim.url, "POST", path, body | {"name": "b"}, token=token).json

    assert first["created_at"][:13] != second["created_at"][:13]
    assert first["created_at"][14:19] == second["created_at"][14:19]


@pytest.mark.parametrize(
    ("option", "version"), [((), "v0.2.1"), (("--garm-version", "newer"), "newer")]
)
def test_standalone_prints_url_and_credentials(option: tuple[str, ...], version: str):
    """Arrange: nothing. Act: run `python -m garm_sim --port 0 [--garm-version V]` from tests/.

    Assert: it prints its URL, the version it answers as (v0.2.1 by default) and the admin
    password; the URL answers, with the controller info of that version.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "garm_sim", "--port", "0", *option],
        cwd=TESTS_DIR,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        process.stdout.readline()
        password_line = process.stdout.readline()
        url = first.split()[4]
        password = password_line.split(": ", 1)[1].strip()
        login = call(url, "POST", "/auth/login", {"username": "admin", "password": password})
        info = call(url, "GET", "/controller-info", token=login.json["token"]).json
    finally:
        process.terminate()
        process.wait(timeout=5)

    assert first.startswith("GARM simulator listening on http://127.0.0.1:")
    assert first.rstrip().endswith(f"answering as GARM {version}")
    assert login.status == 200
    assert ("garm_agent_version" in info) is (version == "newer")


@pytest.mark.parametrize(
    ("option", "statuses"), [((), {"idle"}), (("--no-runners-report",), {"pending"})]
)
def test_standalone_runners_report_unless_told_not_to(option: tuple[str, ...], statuses: set[str]):
    """Arrange: `python -m garm_sim --port 0 [--no-runners-report]` with a repository.

    Act: create an enabled scale set with min idle 1 and read its runner after a few requests.

    Assert: by default the runner reports `idle` by itself; with `--no-runners-report` it stays
    `pending` (as on a real GARM whose provider boots nothing) until a runner posts to the
    callback URL.
    """
    runners: list[dict[str, object]] = []
    process = subprocess.Popen(
        [sys.executable, "-m", "garm_sim", "--port", "0", "--provider", "fake", *option],
        cwd=TESTS_DIR,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[4]
        process.stdout.readline()
        password = process.stdout.readline().split(": ", 1)[1].strip()
        login = call(url, "POST", "/auth/login", {"username": "admin", "password": password})
        token = login.json["token"]
        creds = {"name": "pat", "endpoint": "github.com", "auth_type": "pat"}
        creds |= {"pat": {"oauth2_token": "t"}}
        call(url, "POST", "/github/credentials", creds, token=token)
        repo = {"owner": "o", "name": "r", "credentials_name": "pat", "webhook_secret": "s" * 16}
        repo_id = call(url, "POST", "/repositories", repo, token=token).json["id"]
        body = {"name": "set", "provider_name": "fake", "image": "i", "flavor": "f"}
        body |= {"os_type": "linux", "os_arch": "amd64", "max_runners": 1}
        body |= {"min_idle_runners": 1, "enabled": True}
        created = call(url, "POST", f"/repositories/{repo_id}/scalesets", body, token=token).json
        for _ in range(3):
            runners = call(url, "GET", f"/scalesets/{created['id']}/instances", token=token).json
    finally:
        process.terminate()
        process.wait(timeout=5)

    assert {runner["runner_status"] for runner in runners} == statuses


def test_concurrent_requests_are_all_answered(garm: Garm):
    """Arrange: a scale set. Act: 40 concurrent GETs and PUTs from 8 threads.

    Assert: every request answered 200 and all of them were counted.
    """
    created = garm.create_scaleset("busy-api")
    path = f"/scalesets/{created['id']}"
    garm.sim.reset_log()

    def one(index: int) -> int:
        if index % 2:
            return garm.call("PUT", path, {"extended_state": str(index)}).status
        return garm.call("GET", path).status

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(one, range(40)))

    assert statuses == [200] * 40
    assert garm.sim.count(path="/api/v1/scalesets/{id}") == 40


def test_status_fault_with_a_body_answers_it_raw(garm: Garm):
    """Arrange: a fault answering 200 with a body that is not JSON (a proxy's page).

    Act: list scale sets. Assert: exactly that status and body; the log records the answer.
    """
    garm.sim.fault(method="GET", path="/api/v1/scalesets", status=200, body="<html>proxy</html>")

    reply = garm.call("GET", "/scalesets")

    assert (reply.status, reply.raw) == (200, "<html>proxy</html>")
    assert garm.sim.requests[-1].answer == b"<html>proxy</html>"


def test_before_fault_lands_another_change_first(sim: GarmSim):
    """Arrange: another client's first-run lands just before ours (a `before` fault).

    Act: first-run. Assert: GARM answers 409 already initialized; the other admin stays.
    """
    sim.fault(
        "before",
        method="POST",
        path="/api/v1/first-run",
        times=1,
        action=lambda: sim.bootstrap("other", "Other-admin-pw-9fK2mQ-x", set_urls=False),
    )
    body = {"username": "admin", "email": "a@example.com", "password": "Sim-9fK2mQ-lRt5-long"}

    reply = call(sim.url, "POST", "/first-run", body)

    assert reply.status == 409
    assert reply.json == {"error": "Conflict", "details": "already initialized"}
    assert sim.admin_credentials == ("other", "Other-admin-pw-9fK2mQ-x")
    assert sim.calls() == ["POST /api/v1/first-run"]
    assert sim.write_calls() == ["POST /api/v1/first-run"]


def test_restart_with_tls_serves_https_and_keeps_state(garm: Garm, tmp_path: Path):
    """Arrange: a bootstrapped simulator. Act: restart it with a TLS context.

    Assert: the URL is https on the same port; a plain request fails; the state is kept.
    """
    port = garm.sim.port

    garm.sim.restart(tls=untrusted_server_context(tmp_path))

    assert garm.url == f"https://127.0.0.1:{port}"
    client = ssl.create_default_context()
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(  # noqa: S310 - loopback https
        f"{garm.url}/api/v1/controller-info", headers={"Authorization": f"Bearer {garm.token}"}
    )
    with urllib.request.urlopen(request, context=client, timeout=5) as answer:  # noqa: S310
        assert answer.status == 200
    with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
        call(f"http://127.0.0.1:{port}", "GET", "/controller-info")


def test_tokens_are_signed_with_the_jwt_secret_for_its_lifetime(garm: Garm):
    """Arrange: restart with a known JWT secret and time to live. Act: get a metrics token.

    Assert: it is an HS256 JWT with that secret, `read_metrics`, and `exp` = now + the lifetime.
    """
    garm.sim.restart(jwt_secret="known-secret", token_ttl=3600)

    assert not garm.sim.authenticates(garm.token)  # signed with the old secret
    token = garm.call("GET", "/metrics-token", token=garm.sim.token()).json["token"]

    header, payload, signature = token.split(".")
    digest = hmac.new(b"known-secret", f"{header}.{payload}".encode(), hashlib.sha256).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == signature
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["read_metrics"] is True
    assert abs(claims["exp"] - (garm.sim.clock.now() + 3600)) < 5


def test_admin_password_reset_ends_the_old_tokens(garm: Garm):
    """Arrange: a token of the admin. Act: reset the admin's password (garm admin).

    Assert: the old token no longer authenticates; logging in takes the new password only.
    """
    assert garm.sim.authenticates(garm.token)

    garm.sim.reset_admin_password("admin", "New-admin-pw-9fK2mQ-x")

    assert not garm.sim.authenticates(garm.token)
    assert garm.sim.admin_credentials == ("admin", "New-admin-pw-9fK2mQ-x")
    new = {"username": "admin", "password": "New-admin-pw-9fK2mQ-x"}
    assert call(garm.url, "POST", "/auth/login", new).status == 200
