"""Deploy garm and a configurator on a real Juju model and change a scale set's labels.

Needs a Juju controller with a machine cloud (LXD is enough) whose machines the test host can
SSH to. GitHub and OpenStack are fakes served from the test host (see `fake_services`), so no
credentials are needed.

Environment (passed through by `tox -e integration`):
- GARM_CHARM, GARM_CONFIGURATOR_CHARM: the packed charms (`charmcraft pack` in each charm
  directory); the tests skip without them.
- GARM_BINARY: optional path of a `garm` executable; the test attaches it as the `garm-binary`
  tarball. Without it the charm downloads the pinned GARM release (needs egress).
- GARM_RESOURCE: optional ready `garm-linux-<arch>.tgz` instead of GARM_BINARY.
The `garm-provider-openstack` resource is always the fake provider, built by the test.
"""

from __future__ import annotations

import json
import os
import pathlib
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import jubilant
import pytest

from doubles.configurator_publication import pkcs1_app_key
from integration.fake_services import (
    FakeGitHubApp,
    RemoteForward,
    fake_provider_executable,
    tarball,
)

CONFIGURATOR = "small"
CA = "self-signed-certificates"
LABELS = "noble,x64,small"
NEW_LABELS = "noble,x64,small,gpu"
PHASES = (
    "starting new scale set",
    "handing over",
    "draining",
    "drain deadline passed",
    "deleting old scale set",
)


def _required_path(variable: str) -> pathlib.Path:
    value = os.environ.get(variable)
    if not value:
        pytest.skip(f"{variable} is not set: pack the charm and point {variable} at it")
    return pathlib.Path(value)


@pytest.fixture(scope="module")
def juju() -> Iterator[jubilant.Juju]:
    """A temporary model with frequent update-status hooks, destroyed afterwards."""
    with jubilant.temp_model(config={"update-status-hook-interval": "10s"}) as model:
        model.wait_timeout = 20 * 60
        yield model


@pytest.fixture(scope="module")
def resources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The resource files: the fake provider always, GARM when given."""
    directory = tmp_path_factory.mktemp("resources")
    files = {
        "garm-provider-openstack": str(
            tarball(directory, "garm-provider-openstack", fake_provider_executable())
        )
    }
    if os.environ.get("GARM_RESOURCE"):
        files["garm-binary"] = os.environ["GARM_RESOURCE"]
    elif os.environ.get("GARM_BINARY"):
        binary = pathlib.Path(os.environ["GARM_BINARY"]).read_bytes()
        files["garm-binary"] = str(tarball(directory, "garm", binary))
    return files


@pytest.fixture(scope="module")
def garm(juju: jubilant.Juju, resources: dict[str, str]) -> str:
    """The garm application, deployed with its resources and active."""
    juju.deploy(
        _required_path("GARM_CHARM"),
        "garm",
        resources=resources,
        config={"handover-grace": "20s"},
    )
    juju.wait(lambda status: jubilant.all_active(status, "garm"), error=jubilant.any_error)
    return "garm"


@pytest.fixture(scope="module")
def github(juju: jubilant.Juju, garm: str) -> Iterator[FakeGitHubApp]:
    """The fake GitHub, reachable from the garm machine, and GARM's endpoint pointing at it."""
    fake = FakeGitHubApp()
    with fake:
        assert juju.model is not None
        with RemoteForward(juju.model, f"{garm}/0", fake.port):
            _point_garm_at(juju, garm, fake.url)
            yield fake


def test_garm_bootstraps_and_hands_out_credentials(juju: jubilant.Juju, garm: str):
    """Arrange: garm deployed. Act: run get-credentials. Assert: admin username and URL."""
    task = juju.run(f"{garm}/0", "get-credentials")

    assert task.results["username"]
    assert task.results["url"].startswith("http")


def test_label_change_leaves_one_generation_with_the_new_labels(
    juju: jubilant.Juju, garm: str, github: FakeGitHubApp
):
    """Arrange: a configurator related to garm, its scale set serving.

    Act: change its labels. Assert: the status showed the changeover's phases in order, and
    exactly one generation remains, a new one, with the new labels.
    """
    _deploy_configurator(juju, garm)
    juju.wait(jubilant.all_active, error=jubilant.any_error)
    before = _wait_for_one_scaleset(juju, garm)
    assert sorted(before["labels"]) == sorted(LABELS.split(","))

    juju.config(CONFIGURATOR, {"labels": NEW_LABELS})
    seen: list[str] = []
    juju.wait(lambda status: _record_phase(status, garm, seen) and "changing" in seen[-1])
    juju.wait(
        lambda status: not _record_phase(status, garm, seen) and jubilant.all_active(status, garm),
        error=jubilant.any_error,
    )

    phases = [phase for phase in PHASES if any(phase in message for message in seen)]
    assert phases[:2] == ["starting new scale set", "handing over"], seen
    assert [_phase_index(m) for m in seen] == sorted(_phase_index(m) for m in seen), seen
    after = _scalesets(juju, garm)
    assert len(after) == 1, after
    assert sorted(after[0]["labels"]) == sorted(NEW_LABELS.split(","))
    assert after[0]["name"] != before["name"]
    assert after[0]["name"].startswith(f"{CONFIGURATOR}-")
    assert [s["name"] for s in github.scale_sets.values()] == [after[0]["name"]]


def test_certificates_relation_serves_https_and_removal_goes_back(juju: jubilant.Juju, garm: str):
    """Arrange: garm active on HTTP; a self-signed-certificates CA deployed.

    Act: relate garm:certificates to it, then remove the relation.
    Assert: with the relation, get-credentials gives an https:// URL whose certificate the CA
    verifies and GARM's /metrics answers 401 without its token; without it, http:// again.
    """
    juju.deploy("self-signed-certificates", CA)
    juju.integrate(f"{garm}:certificates", CA)
    juju.wait(lambda status: _url(juju, garm).startswith("https://"), error=jubilant.any_error)
    juju.wait(jubilant.all_active, error=jubilant.any_error)
    ca = juju.run(f"{CA}/0", "get-ca-certificate").results["ca-certificate"]

    url = _url(juju, garm)
    assert _status_of(f"{url.rstrip('/')}/metrics", ssl.create_default_context(cadata=ca)) == 401

    juju.remove_relation(f"{garm}:certificates", CA)
    juju.wait(lambda status: _url(juju, garm).startswith("http://"), error=jubilant.any_error)
    juju.wait(lambda status: jubilant.all_active(status, garm), error=jubilant.any_error)
    assert _status_of(f"{_url(juju, garm).rstrip('/')}/metrics", None) == 401


def _deploy_configurator(juju: jubilant.Juju, garm: str) -> None:
    """Deploy the configurator with every required option, its secrets granted."""
    password = juju.add_secret("openstack-password", {"password": "fake-password"})
    app_key = juju.add_secret("github-app-key", {"private-key": pkcs1_app_key()})
    juju.deploy(_required_path("GARM_CONFIGURATOR_CHARM"), CONFIGURATOR)
    juju.grant_secret("openstack-password", CONFIGURATOR)
    juju.grant_secret("github-app-key", CONFIGURATOR)
    juju.config(
        CONFIGURATOR,
        {
            "name": CONFIGURATOR,
            "labels": LABELS,
            "org": "fake-org",
            "flavor": "m1.small",
            "image": "noble",
            "min-idle-runners": 1,
            "max-runners": 2,
            "openstack-auth-url": "http://keystone.invalid:5000/v3",
            "openstack-username": "runners",
            "openstack-password": str(password),
            "openstack-project-name": "runners",
            "openstack-network": "runners-net",
            "github-app-id": 1,
            "github-app-installation-id": 2,
            "github-app-private-key": str(app_key),
        },
    )
    juju.integrate(garm, CONFIGURATOR)


def _record_phase(status: jubilant.Status, garm: str, seen: list[str]) -> bool:
    """Record a new changeover message of garm's status; return whether one is shown."""
    message = status.apps[garm].app_status.message
    changing = "changing" in message
    if changing and (not seen or seen[-1] != message):
        seen.append(message)
    return changing


def _phase_index(message: str) -> int:
    return next((i for i, phase in enumerate(PHASES) if phase in message), len(PHASES))


def _wait_for_one_scaleset(juju: jubilant.Juju, garm: str) -> dict[str, Any]:
    """The scale set GARM lists once the charm created it (GARM answers within a hook)."""
    deadline = time.monotonic() + 10 * 60
    while time.monotonic() < deadline:
        listed = _scalesets(juju, garm)
        if len(listed) == 1:
            return listed[0]
        time.sleep(10)
    raise AssertionError(f"GARM does not list exactly one scale set: {_scalesets(juju, garm)}")


def _scalesets(juju: jubilant.Juju, garm: str) -> list[dict[str, Any]]:
    results = juju.run(f"{garm}/0", "list-scalesets").results
    return json.loads(results["scalesets"])


def _point_garm_at(juju: jubilant.Juju, garm: str, github_url: str) -> None:
    """Point GARM's `github.com` endpoint at the fake (allowed while no credentials use it)."""
    credentials = juju.run(f"{garm}/0", "get-credentials").results
    api = credentials["url"].rstrip("/") + "/api/v1"
    login = {"username": credentials["username"], "password": credentials["password"]}
    token = _call(f"{api}/auth/login", "POST", login)["token"]
    endpoint = {
        "base_url": github_url,
        "api_base_url": f"{github_url}/api/v3/",
        "upload_base_url": f"{github_url}/api/uploads/",
    }
    _call(f"{api}/github/endpoints/github.com", "PUT", endpoint, token)


def _call(url: str, method: str, body: dict[str, str], token: str = "") -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310 (an http URL of the test's own model)
        url, data=json.dumps(body).encode(), method=method
    )
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        return json.loads(answer.read() or b"{}")


def _url(juju: jubilant.Juju, garm: str) -> str:
    """The URL the get-credentials action gives (https:// while GARM serves TLS)."""
    return juju.run(f"{garm}/0", "get-credentials").results["url"]


def _status_of(url: str, context: ssl.SSLContext | None) -> int:
    """The HTTP status GARM answers a GET without a token with, its certificate verified."""
    try:
        with urllib.request.urlopen(url, timeout=30, context=context) as answer:  # noqa: S310
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code
