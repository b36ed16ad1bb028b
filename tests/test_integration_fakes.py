"""The integration tests' test-host services (`tests/integration/fake_services`), without Juju."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tarfile
import urllib.request

import pytest

from integration.fake_services import (
    FakeGitHubApp,
    fake_provider_executable,
    tarball,
)


def test_fake_github_exchanges_an_app_jwt_for_the_accepted_token():
    """Arrange: the fake GitHub with App auth. Act: token exchange, then a REST call.

    Assert: the exchange answers 201 with a token the REST API then accepts.
    """
    with FakeGitHubApp() as github:
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


def test_provider_tarball_runs_the_fake_provider(tmp_path: pathlib.Path):
    """Arrange: the provider tarball, its state directory moved to a temporary one.

    Act: create an instance, then list. Assert: one executable at the top level, and the
    instance is listed as running.
    """
    path = tarball(tmp_path, "garm-provider-openstack", fake_provider_executable())
    with tarfile.open(path) as archive:
        assert [m.name for m in archive.getmembers()] == ["garm-provider-openstack"]
        member = archive.getmember("garm-provider-openstack")
        assert member.mode & 0o111
        extracted = archive.extractfile(member)
        assert extracted is not None
        script = extracted.read().decode()
    executable = tmp_path / "provider"
    executable.write_text(script.replace("/var/lib/garm", str(tmp_path)))
    env = {**os.environ, "GARM_POOL_ID": "pool-1", "GARM_CONTROLLER_ID": "c"}

    def call(command: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(executable)],
            input=stdin,
            capture_output=True,
            text=True,
            env={**env, "GARM_COMMAND": command},
            check=False,
        )

    created = call("CreateInstance", json.dumps({"name": "garm-abc"}))
    listed = call("ListInstances")

    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["status"] == "running"
    assert [i["name"] for i in json.loads(listed.stdout)] == ["garm-abc"]


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback calls must not go through a proxy from the environment."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
