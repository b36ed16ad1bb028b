"""The simulator's own controls: faults, refused connections, counters, clock, start-up."""

from __future__ import annotations

import http.client
import subprocess
import sys
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from contract.conftest import Garm
from contract.garm_http import call
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
