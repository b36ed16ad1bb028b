"""The integration tests' test-host services (`tests/integration/fake_services`), without Juju."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tarfile
import time
import urllib.request

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request

from fake_github import FakeGitHub
from integration.fake_services import RemoteForward, fake_provider_executable, tarball


def test_fake_github_exchanges_an_app_jwt_for_the_accepted_token():
    """Arrange: the fake GitHub. Act: App token exchange with a JWT, then a REST call.

    Assert: the exchange answers 201 with a token the REST API then accepts.
    """
    with FakeGitHub() as github:
        exchange = urllib.request.Request(  # noqa: S310 (loopback)
            f"{github.url}/api/v3/app/installations/2/access_tokens", data=b"{}", method="POST"
        )
        exchange.add_header("Authorization", "Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig")
        with urllib.request.urlopen(exchange, timeout=10) as answer:  # noqa: S310 (loopback)
            assert answer.status == 201
            token = json.loads(answer.read())["token"]
        limits = urllib.request.Request(f"{github.url}/api/v3/rate_limit")  # noqa: S310 (loopback)
        limits.add_header("Authorization", f"token {token}")
        with urllib.request.urlopen(limits, timeout=10) as answer:  # noqa: S310 (loopback)
            assert answer.status == 200


def test_provider_creates_an_instance_whose_runner_reports_idle(
    tmp_path: pathlib.Path, httpserver: HTTPServer
):
    """Arrange: the provider tarball's script, its state in a temporary directory; a callback URL.

    Act: create an instance with GARM's bootstrap parameters, then list.
    Assert: one executable at the top level; the instance is listed as running; its runner
    posted `installing`, then `idle`, to the callback URL with the instance token.
    """
    httpserver.expect_request("/api/v1/callbacks/status", method="POST").respond_with_data("")
    script = fake_provider_executable(state_dir=str(tmp_path), python=sys.executable)
    path = tarball(tmp_path, "garm-provider-openstack", script)
    bootstrap = {
        "name": "garm-abc",
        "callback-url": httpserver.url_for("/api/v1/callbacks"),
        "instance-token": "instance-token-1",
    }

    created = _provider(tmp_path, path, "CreateInstance", json.dumps(bootstrap))
    listed = _provider(tmp_path, path, "ListInstances")

    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["status"] == "running"
    assert [i["name"] for i in json.loads(listed.stdout)] == ["garm-abc"]
    posted = _wait_for_requests(httpserver, 2)
    assert [json.loads(r.data)["status"] for r in posted] == ["installing", "idle"]
    assert {r.headers["Authorization"] for r in posted} == {"Bearer instance-token-1"}


def _provider(
    tmp_path: pathlib.Path, path: pathlib.Path, command: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run the tarball's executable as GARM would: one command, a clean environment."""
    executable = tmp_path / "provider"
    if not executable.exists():
        with tarfile.open(path) as archive:
            assert [m.name for m in archive.getmembers()] == ["garm-provider-openstack"]
            member = archive.getmember("garm-provider-openstack")
            assert member.mode & 0o111
            extracted = archive.extractfile(member)
            assert extracted is not None
            executable.write_bytes(extracted.read())
        executable.chmod(0o755)
    environment = {"GARM_POOL_ID": "pool-1", "GARM_CONTROLLER_ID": "c", "GARM_COMMAND": command}
    return subprocess.run(
        [str(executable)], input=stdin, capture_output=True, text=True, env=environment,
        check=False, timeout=30,
    )  # fmt: skip


def _wait_for_requests(server: HTTPServer, count: int) -> list[Request]:
    deadline = time.monotonic() + 15
    while len(server.log) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return [request for request, _ in server.log]


# The tunnel, with a `juju` stand-in ---------------------------------------------------------

FAKE_JUJU = """#!/bin/sh
# `juju ssh ... -N ...`: the tunnel, with a child standing for ssh; else the readiness probe.
state="{state}"
case " $* " in
  *" -N "*)
    [ -e "$state/tunnel-fails" ] && exit 255
    sleep 300 &
    echo $! > "$state/ssh.pid"
    wait
    ;;
  *)
    echo x >> "$state/probes"
    [ "$(wc -l < "$state/probes")" -ge {ready_at} ] && printf 401 || printf 000
    ;;
esac
"""


def _fake_juju(tmp_path: pathlib.Path, ready_at: int) -> str:
    juju = tmp_path / "juju"
    juju.write_text(FAKE_JUJU.format(state=tmp_path, ready_at=ready_at))
    juju.chmod(0o755)
    return str(juju)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return pathlib.Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"


def test_tunnel_is_ready_once_the_unit_gets_an_answer_and_stops_with_its_children(
    tmp_path: pathlib.Path,
):
    """Arrange: a `juju` whose tunnel has a child (ssh) and whose third probe gets a 401.

    Act: enter the forward, then leave it.
    Assert: entering returned after three probes; leaving ended the tunnel's child too.
    """
    forward = RemoteForward("m", "garm/0", 8000, juju=_fake_juju(tmp_path, 3), interval=0.05)

    with forward:
        probes = len((tmp_path / "probes").read_text().splitlines())
        ssh = int((tmp_path / "ssh.pid").read_text())
        assert _alive(ssh)

    assert probes == 3
    assert not _alive(ssh)


def test_tunnel_that_never_answers_fails_naming_the_probe_and_leaves_nothing(
    tmp_path: pathlib.Path,
):
    """Arrange: a `juju` whose probes never get an answer.

    Act: enter the forward. Assert: RuntimeError after the probes; the tunnel's child ended.
    """
    forward = RemoteForward(
        "m", "garm/0", 8000, juju=_fake_juju(tmp_path, 99), attempts=4, interval=0.05
    )

    with pytest.raises(RuntimeError, match=r"after 4 probes: .*curl"), forward:
        pass

    assert not _alive(int((tmp_path / "ssh.pid").read_text()))


def test_tunnel_that_exits_fails_at_once(tmp_path: pathlib.Path):
    """Arrange: a `juju` whose tunnel exits 255 (the port is taken on the unit).

    Act: enter the forward. Assert: RuntimeError naming the exit status, before all probes.
    """
    (tmp_path / "tunnel-fails").touch()
    forward = RemoteForward("m", "garm/0", 8000, juju=_fake_juju(tmp_path, 99), interval=0.2)

    with pytest.raises(RuntimeError, match=r"exited \(255\)"), forward:
        pass

    probes = tmp_path / "probes"
    assert not probes.exists() or len(probes.read_text().splitlines()) < 20


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback calls must not go through a proxy from the environment."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
