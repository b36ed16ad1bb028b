"""Bootstrap gates, first-run, login, controller and errors of authentication (C10)."""

from __future__ import annotations

import pytest

from contract.conftest import ADMIN, PASSWORD, Garm
from contract.garm_http import call, recording
from garm_sim import GarmSim

INIT_REQUIRED = {"error": "init_required", "details": "Missing superuser"}
URLS_REQUIRED = {
    "error": "urls_required",
    "details": "Missing required URLs. Make sure you update the metadata and callback URLs",
}
FIRST_RUN = {"username": ADMIN, "email": "admin@example.com", "password": PASSWORD}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/controller-info"),
        ("GET", "/controller"),
        ("GET", "/scalesets"),
        ("POST", "/auth/login"),
        ("GET", "/metrics-token"),
    ],
)
def test_everything_but_first_run_answers_init_required(sim: GarmSim, method: str, path: str):
    """Arrange: a GARM without an admin. Act: call a route. Assert: 409 init_required, not 401."""
    reply = call(sim.url, method, path, {} if method == "POST" else None)

    assert (reply.status, reply.json) == (409, INIT_REQUIRED)


def test_first_run_creates_the_admin_once(sim: GarmSim):
    """Arrange: a fresh GARM. Act: first-run twice. Assert: 200 admin user, then 409 Conflict."""
    first = call(sim.url, "POST", "/first-run", FIRST_RUN)
    second = call(sim.url, "POST", "/first-run", FIRST_RUN)

    assert first.status == 200
    assert first.json["username"] == ADMIN
    assert first.json["is_admin"] is True
    assert first.json["enabled"] is True
    assert "password" not in first.json
    assert (second.status, second.json["error"]) == (409, "Conflict")


@pytest.mark.parametrize(
    ("field", "value", "details"),
    [
        ("password", "short1A", "password is too weak"),
        ("password", "aaaaaaaaaaaaaaaa", "password is too weak"),
        ("username", "ad_min", None),
        ("username", "ad-min", None),
        ("email", "", None),
    ],
)
def test_first_run_validates_user(sim: GarmSim, field: str, value: str, details: str | None):
    """Arrange: a fresh GARM. Act: first-run with one bad field. Assert: 400 and still uninit."""
    reply = call(sim.url, "POST", "/first-run", FIRST_RUN | {field: value})

    assert reply.status == 400
    assert reply.json["error"] == "Bad Request"
    if details is not None:
        assert reply.json["details"] == details
    assert call(sim.url, "GET", "/controller-info").status == 409


def test_first_run_with_bad_json_is_invalid_request(sim: GarmSim):
    """Arrange: a fresh GARM. Act: first-run with a broken body. Assert: 400 invalid request."""
    reply = call(sim.url, "POST", "/first-run", raw_body=b"{not json")

    assert (reply.status, reply.json) == (
        400,
        {"error": "Bad Request", "details": "invalid request"},
    )


def test_login_returns_a_jwt_and_refuses_a_wrong_password(sim: GarmSim):
    """Arrange: first-run done. Act: log in right and wrong. Assert: JWT; then 401 as recorded."""
    call(sim.url, "POST", "/first-run", FIRST_RUN)

    good = call(sim.url, "POST", "/auth/login", {"username": ADMIN, "password": PASSWORD})
    bad = call(sim.url, "POST", "/auth/login", {"username": ADMIN, "password": "wrong"})

    assert good.status == 200
    assert len(good.json["token"].split(".")) == 3
    wrong = recording("65_6f_login_wrong_password")
    assert (bad.status, bad.raw) == (wrong["status"], wrong["raw_response"])


def test_urls_gate_comes_before_authentication(sim: GarmSim):
    """Arrange: admin exists, URLs unset. Act: call resources and /controller.

    Assert: resources and /controller-info answer 409 urls_required with or without a token;
    /controller is exempt (401 without a token, 200 with one, URL fields absent).
    """
    call(sim.url, "POST", "/first-run", FIRST_RUN)
    token = call(sim.url, "POST", "/auth/login", FIRST_RUN).json["token"]

    info_anonymous = call(sim.url, "GET", "/controller-info")
    info_with_token = call(sim.url, "GET", "/controller-info", token=token)
    scalesets_anonymous = call(sim.url, "GET", "/scalesets")
    controller_anonymous = call(sim.url, "GET", "/controller")
    controller = call(sim.url, "GET", "/controller", token=token)

    assert (info_anonymous.status, info_anonymous.json) == (409, URLS_REQUIRED)
    assert (info_with_token.status, info_with_token.json) == (409, URLS_REQUIRED)
    assert (scalesets_anonymous.status, scalesets_anonymous.json) == (409, URLS_REQUIRED)
    assert controller_anonymous.status == 401
    assert controller.status == 200
    assert "metadata_url" not in controller.json
    assert "callback_url" not in controller.json


def test_setting_urls_opens_the_api(sim: GarmSim):
    """Arrange: admin, no URLs. Act: PUT /controller with URLs. Assert: controller-info 200."""
    call(sim.url, "POST", "/first-run", FIRST_RUN)
    token = call(sim.url, "POST", "/auth/login", FIRST_RUN).json["token"]
    urls = {
        "metadata_url": "http://10.0.0.1/api/v1/metadata",
        "callback_url": "http://10.0.0.1/cb",
    }

    put = call(sim.url, "PUT", "/controller", urls, token=token)
    info = call(sim.url, "GET", "/controller-info", token=token)

    assert put.status == 200
    assert info.status == 200
    assert info.json["metadata_url"] == urls["metadata_url"]
    assert info.json["callback_url"] == urls["callback_url"]
    assert info.json["agent_url"] == "http://10.0.0.1"
    assert info.json["controller_id"] == put.json["controller_id"]


def test_controller_refuses_urls_without_scheme_or_host(garm: Garm):
    """Arrange: bootstrapped GARM. Act: PUT a URL without scheme. Assert: 400, URLs unchanged."""
    before = garm.call("GET", "/controller-info").json

    reply = garm.call("PUT", "/controller", {"metadata_url": "not-a-url"})

    assert reply.status == 400
    assert garm.call("GET", "/controller-info").json == before


@pytest.mark.parametrize(
    ("token", "name"), [(None, "63_6f_no_token"), ("not-a-jwt", "64_6f_bad_token")]
)
def test_missing_or_bad_token_is_authentication_failed(garm: Garm, token: str | None, name: str):
    """Arrange: bootstrapped GARM. Act: list scale sets with a bad token. Assert: as recorded."""
    reply = call(garm.url, "GET", "/scalesets", token=token)

    recorded = recording(name)
    assert (reply.status, reply.raw) == (recorded["status"], recorded["raw_response"])


def test_forged_and_metrics_tokens_are_refused_by_the_api(garm: Garm):
    """Arrange: a metrics token and a token with a forged signature. Act: list scale sets.

    Assert: both 401 Authentication failed; the metrics token itself is issued (200).
    """
    metrics = garm.call("GET", "/metrics-token")
    header, payload, _ = garm.token.split(".")

    with_metrics = call(garm.url, "GET", "/scalesets", token=metrics.json["token"])
    forged = call(garm.url, "GET", "/scalesets", token=f"{header}.{payload}.AAAA")

    assert metrics.status == 200
    assert with_metrics.status == 401
    assert forged.json == {"error": "Authentication failed", "details": ""}


def test_providers_come_from_the_configuration():
    """Arrange: a simulator configured with two providers. Act: list providers.

    Assert: both, each with the key `type` (not `provider_type`).
    """
    with GarmSim(["lxd", "openstack"]) as sim:
        token = sim.bootstrap()
        reply = call(sim.url, "GET", "/providers", token=token)

    assert reply.status == 200
    assert sorted(p["name"] for p in reply.json) == ["lxd", "openstack"]
    assert all(p["type"] == "external" for p in reply.json)


def test_unknown_route_is_not_found(garm: Garm):
    """Arrange: bootstrapped GARM. Act: GET an unknown path. Assert: GARM's lower-case 404."""
    reply = garm.call("GET", "/no-such-thing")

    assert (reply.status, reply.json) == (
        404,
        {"error": "Not found", "details": "Resource not found"},
    )
