"""garm_api against real HTTP, answering with bodies recorded from a running GARM.

Recordings live in tests/contract/wire/ (copied from a GARM at commit afda4e76). Where GARM's
behaviour was not recorded, the body is the one docs/reference/garm-behaviour.md states, built
from a recording.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import garm_api.client
from doubles.tls_publication import Issuer, localhost_server_context, untrusted_server_context
from garm_api import (
    EntityKind,
    GarmApiError,
    GarmBadRequest,
    GarmClient,
    GarmConflict,
    GarmNotFound,
    GarmNotInitialised,
    GarmServerError,
    GarmUnauthorized,
    GarmUnreachable,
    GarmUrlsRequired,
    InvalidRequest,
    ScaleSetCreate,
    ScaleSetUpdate,
)

WIRE = Path(__file__).resolve().parents[5] / "tests" / "contract" / "wire"
REPO_ID = "c35919a8-8f26-4fc5-ba84-a7386cbd45c8"
TOKEN = "header.payload.signature"


def recording(name: str) -> dict[str, Any]:
    """Load one recorded step."""
    return json.loads((WIRE / f"{name}.json").read_text())


def serve(server: HTTPServer, name: str, method: str, path: str) -> None:
    """Answer `method path` with the recorded status and raw body of step `name`."""
    step = recording(name)
    server.expect_request(path, method=method).respond_with_data(
        step["raw_response"], status=step["status"], content_type="application/json"
    )


def sent_json(server: HTTPServer, index: int = -1) -> Any:
    """The JSON body of a request the server received."""
    request, _ = server.log[index]
    return json.loads(request.get_data())


def get_scaleset_by_text_id(client: GarmClient, scaleset_id: str) -> object:
    """GET /scalesets/<id> through the generated operation, with an id GarmClient never sends."""
    from garm_client.api.scalesets_api import ScalesetsApi  # noqa: PLC0415

    return client._transport.send(  # pyright: ignore[reportPrivateUsage]
        "get",
        ScalesetsApi,
        lambda api: api.get_scale_set_without_preload_content(scaleset_id),
        lambda answer: answer,
    )


@pytest.fixture
def client(httpserver: HTTPServer) -> GarmClient:
    """A client logged in with a token, pointed at the test server."""
    return GarmClient(httpserver.url_for("/").rstrip("/"), token=TOKEN, read_timeout=2)


# Normalisation ------------------------------------------------------------------------------


def test_list_normalises_absent_fields(httpserver: HTTPServer, client: GarmClient):
    """Arrange: GARM's recorded per-repo list, whose second scale set is disabled with 0 idle.

    Act: list the repository's scale sets through list_scalesets' parser.
    Assert: absent `enabled`/`min_idle_runners` read as False/0, never None; fields lists omit
    are None; the entity and labels come through.
    """
    serve(httpserver, "21_6b_list_repo_scalesets", "GET", "/api/v1/scalesets")

    enabled, disabled = client.list_scalesets()

    assert enabled.enabled is True
    assert disabled.enabled is False
    assert disabled.min_idle_runners == 0
    assert disabled.max_runners == 1
    assert disabled.extra_specs is None
    assert disabled.template_name is None
    assert disabled.entity_kind is EntityKind.REPOSITORY
    assert disabled.entity_id == REPO_ID
    assert disabled.entity_name == "fake-org/fake-repo"
    assert disabled.labels == ("harness", "x64")
    assert disabled.desired_runner_count == 0
    assert disabled.extended_state == ""


def test_get_by_id_carries_template_name(httpserver: HTTPServer, client: GarmClient):
    """Arrange: a recorded GET /scalesets/8. Act: get it. Assert: the fields only GET has."""
    serve(httpserver, "18_6b_get_min0_enabled", "GET", "/api/v1/scalesets/8")

    scaleset = client.get_scaleset(8)

    assert scaleset.id == 8
    assert scaleset.template_name == "github_linux"
    assert scaleset.template_id == 2
    assert scaleset.runner_group == "Default"
    assert scaleset.created_at.year == 2026


def test_absent_max_runners_reads_zero(httpserver: HTTPServer, client: GarmClient):
    """Arrange: a retired scale set as GARM sends it after max 0 (C12: the key is absent).

    Act: get it. Assert: max_runners is 0, enabled False, min idle 0.
    """
    body = json.loads(recording("27_6c_get_after_disable")["raw_response"])
    for key in ("max_runners", "min_idle_runners", "enabled"):
        body.pop(key, None)
    httpserver.expect_request("/api/v1/scalesets/8").respond_with_json(body)

    scaleset = client.get_scaleset(8)

    assert (scaleset.enabled, scaleset.min_idle_runners, scaleset.max_runners) == (False, 0, 0)


def test_labels_compare_case_insensitively(httpserver: HTTPServer, client: GarmClient):
    """Arrange: a scale set whose tags GARM returns as `X64` and `harness`.

    Act: ask which of some wanted labels are missing.
    Assert: letter case and surrounding space do not count; a truly missing label does.
    """
    body = json.loads(recording("18_6b_get_min0_enabled")["raw_response"])
    body["tags"][0]["name"] = "X64"
    httpserver.expect_request("/api/v1/scalesets/8").respond_with_json(body)

    scaleset = client.get_scaleset(8)

    assert scaleset.missing_labels(["x64", " HARNESS "]) == frozenset()
    assert scaleset.missing_labels(["x64", "gpu"]) == frozenset({"gpu"})


def test_scaleset_without_tags_has_no_labels(httpserver: HTTPServer, client: GarmClient):
    """Arrange: a scale set created without labels (`tags` absent). Act: get. Assert: ()."""
    body = json.loads(recording("18_6b_get_min0_enabled")["raw_response"])
    del body["tags"]
    httpserver.expect_request("/api/v1/scalesets/8").respond_with_json(body)

    assert client.get_scaleset(8).labels == ()


def test_instances_decode_provider_fault(httpserver: HTTPServer, client: GarmClient):
    """Arrange: the recorded instance list, plus a faulted runner with base64 provider_fault.

    Act: list all instances. Assert: the fault is decoded bytes; absent fields are empty.
    """
    instances = json.loads(recording("31_6d_list_instances_min1")["raw_response"])
    faulted = dict(instances[0], name="garm-faulted", id="0f0f", status="error")
    faulted["provider_fault"] = base64.b64encode(b"quota exceeded").decode()
    httpserver.expect_request("/api/v1/instances").respond_with_json([*instances, faulted])

    healthy, broken = client.list_instances()

    assert healthy.provider_fault == b""
    assert healthy.scale_set_id == 10
    assert healthy.runner_status == "pending"
    assert broken.provider_fault == b"quota exceeded"


def test_a_busy_instance_names_its_job(httpserver: HTTPServer, client: GarmClient):
    """Arrange: the recorded instance list, plus a runner with the `job` object GARM adds (B48).

    Act: list all instances. Assert: its job reads `owner/repo run <id>: <name>`; none is "".
    """
    instances = json.loads(recording("31_6d_list_instances_min1")["raw_response"])
    job = {"repository_owner": "acme", "repository_name": "app", "run_id": 4211, "name": "build"}
    busy = dict(instances[0], name="garm-busy", id="0b0b", runner_status="active", job=job)
    httpserver.expect_request("/api/v1/instances").respond_with_json([*instances, busy])

    idle, active = client.list_instances()

    assert idle.job == ""
    assert active.job == "acme/app run 4211: build"


def test_empty_instance_list(httpserver: HTTPServer, client: GarmClient):
    """Arrange: recorded `[]` for an unknown scale set (C: 200 []). Act: list. Assert: []."""
    serve(httpserver, "54_6f_instances_not_found", "GET", "/api/v1/scalesets/999999/instances")

    assert client.list_scaleset_instances(999999) == []


def test_null_credentials_list_is_empty(httpserver: HTTPServer, client: GarmClient):
    """Arrange: GARM answers `null` when there are no credentials. Act: list. Assert: []."""
    httpserver.expect_request("/api/v1/github/credentials").respond_with_data(
        "null\n", content_type="application/json"
    )

    assert client.list_github_credentials() == []


def test_credentials_read_hyphenated_auth_type(httpserver: HTTPServer, client: GarmClient):
    """Arrange: credentials as embedded in a recorded org. Act: list. Assert: `auth-type` read."""
    org = json.loads(recording("111_x_create_org")["raw_response"])
    httpserver.expect_request("/api/v1/github/credentials").respond_with_json([org["credentials"]])

    (credentials,) = client.list_github_credentials()

    assert credentials.auth_type == "pat"
    assert credentials.endpoint_name == "fake-ghes"
    assert credentials.id == 1


def test_organizations_parse(httpserver: HTTPServer, client: GarmClient):
    """Arrange: a recorded organization. Act: list organizations. Assert: typed entity."""
    org = json.loads(recording("111_x_create_org")["raw_response"])
    httpserver.expect_request("/api/v1/organizations").respond_with_json([org])

    (entity,) = client.list_entities(EntityKind.ORGANIZATION)

    assert entity.kind is EntityKind.ORGANIZATION
    assert entity.name == "fake-org"
    assert entity.credentials_name == "fake-pat"
    assert entity.pool_manager_running is False


def test_template_data_is_decoded_and_null_in_lists(httpserver: HTTPServer, client: GarmClient):
    """Arrange: a template list with `data: null` and a GET with base64 data.

    Act: list, then get. Assert: None in the list, decoded bytes from the GET.
    """
    template = {
        "id": 2,
        "created_at": "2026-11-29T22:49:40.1Z",
        "updated_at": "2026-11-29T22:49:40.1Z",
        "name": "github_linux",
        "description": "Default GitHub Linux template",
        "os_type": "linux",
        "forge_type": "github",
        "owner_id": "system",
    }
    httpserver.expect_request("/api/v1/templates").respond_with_json([{**template, "data": None}])
    httpserver.expect_request("/api/v1/templates/2").respond_with_json(
        {**template, "data": base64.b64encode(b"#!/bin/bash\n").decode()}
    )

    (listed,) = client.list_templates()
    fetched = client.get_template(2)

    assert listed.data is None
    assert fetched.data == b"#!/bin/bash\n"
    assert fetched.owner_id == "system"


# Requests sent ------------------------------------------------------------------------------


def test_create_sends_github_runner_group_and_token(httpserver: HTTPServer, client: GarmClient):
    """Arrange: GARM answers a create with the recorded scale set.

    Act: create a scale set under the repository.
    Assert: the body uses `github-runner-group`, sends no nulls, and carries the bearer token.
    """
    serve(
        httpserver,
        "17_6a_create_min0_enabled",
        "POST",
        f"/api/v1/repositories/{REPO_ID}/scalesets",
    )

    created = client.create_scaleset(
        EntityKind.REPOSITORY,
        REPO_ID,
        ScaleSetCreate(
            name="acc-min0",
            provider_name="fake",
            image="ubuntu:22.04",
            flavor="small",
            labels=("harness", "x64"),
            max_runners=3,
            runner_group="Default",
        ),
    )

    request, _ = httpserver.log[-1]
    body = sent_json(httpserver)
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert body["github-runner-group"] == "Default"
    assert body["labels"] == ["harness", "x64"]
    assert body["enabled"] is True
    assert None not in body.values()
    assert created.name == "acc-min0"


def test_update_sends_runner_group_and_zero_counts(httpserver: HTTPServer, client: GarmClient):
    """Arrange: GARM answers an update with the recorded scale set.

    Act: retire it (disabled, min 0, max 0) and set the runner group.
    Assert: zeros and False are sent (not dropped), the key is `runner_group`, nothing else.
    """
    serve(httpserver, "26_6c_update_disable", "PUT", "/api/v1/scalesets/8")

    client.update_scaleset(
        8, ScaleSetUpdate(enabled=False, min_idle_runners=0, max_runners=0, runner_group="g")
    )

    assert sent_json(httpserver) == {
        "enabled": False,
        "min_idle_runners": 0,
        "max_runners": 0,
        "runner_group": "g",
    }


def test_delete_answers_none_for_empty_body(httpserver: HTTPServer, client: GarmClient):
    """Arrange: GARM's recorded 200 with an empty body (C8). Act: delete. Assert: no error."""
    serve(httpserver, "42_6e_delete_after_instances_gone", "DELETE", "/api/v1/scalesets/10")

    client.delete_scaleset(10)

    assert httpserver.log[-1][1].status_code == 200


def test_force_delete_instance_sends_both_flags(httpserver: HTTPServer, client: GarmClient):
    """Arrange: GARM answers 200 empty. Act: force-remove a runner. Assert: both query flags."""
    httpserver.expect_request("/api/v1/instances/garm-abc", method="DELETE").respond_with_data(
        "", content_type="application/json"
    )

    client.delete_instance("garm-abc")

    request, _ = httpserver.log[-1]
    assert request.args["forceRemove"] == "true"
    assert request.args["bypassGHUnauthorized"] == "true"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"max_runners": 0}, "max_runners must be at least 1"),
        ({"min_idle_runners": 3, "max_runners": 2}, "min_idle_runners must not exceed"),
        ({"provider_name": ""}, "provider_name is empty"),
        ({"name": " "}, "name is empty"),
        ({"os_type": ""}, "os_type must be linux or windows"),
    ],
)
def test_create_refuses_late_validation_before_calling(
    httpserver: HTTPServer, client: GarmClient, change: dict[str, Any], problem: str
):
    """Arrange: a create GARM would answer with 500 after touching GitHub (C11).

    Act: create. Assert: InvalidRequest naming the problem, and no request reached the server.
    """
    params: dict[str, Any] = {
        "name": "s",
        "provider_name": "openstack",
        "image": "i",
        "flavor": "f",
        "labels": ("x",),
        "max_runners": 2,
    }

    with pytest.raises(InvalidRequest, match=problem):
        client.create_scaleset(EntityKind.REPOSITORY, REPO_ID, ScaleSetCreate(**params | change))

    assert httpserver.log == []


def test_pkcs8_key_is_refused_before_calling(httpserver: HTTPServer, client: GarmClient):
    """Arrange: a PKCS#8 App key, which GARM answers with 500 (C16).

    Act: create App credentials. Assert: InvalidRequest that says how to convert; no request.
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )

    with pytest.raises(InvalidRequest, match="PKCS#1"):
        client.create_github_app_credentials(
            "app", endpoint="github.com", app_id=1, installation_id=2, private_key_pem=pkcs8
        )

    assert httpserver.log == []


def test_app_key_is_sent_base64(httpserver: HTTPServer, client: GarmClient):
    """Arrange: a PKCS#1 key; GARM answers with App credentials.

    Act: create App credentials. Assert: `private_key_bytes` is the base64 of the PEM.
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    org = json.loads(recording("111_x_create_org")["raw_response"])
    answer = dict(org["credentials"], **{"auth-type": "app", "name": "app"})
    httpserver.expect_request("/api/v1/github/credentials", method="POST").respond_with_json(
        answer
    )

    created = client.create_github_app_credentials(
        "app", endpoint="fake-ghes", app_id=1, installation_id=2, private_key_pem=pem
    )

    body = sent_json(httpserver)
    assert body["auth_type"] == "app"
    assert base64.b64decode(body["app"]["private_key_bytes"]) == pem
    assert created.auth_type == "app"


# Errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "method", "path", "kind", "details"),
    [
        ("34_6e_delete_with_instance_enabled", "DELETE", "/api/v1/scalesets/10", GarmBadRequest,
         "scale set has runners"),
        ("52_6f_get_bad_id", "GET", "/api/v1/scalesets/abc", GarmBadRequest, "invalid request"),
        ("51_6f_get_not_found", "GET", "/api/v1/scalesets/999999", GarmNotFound,
         "error fetching scale set"),
        ("64_6f_bad_token", "GET", "/api/v1/scalesets", GarmUnauthorized, ""),
        ("15_6a_create_dup_second", "GET", "/api/v1/scalesets", GarmConflict,
         "error creating runner scale set"),
        ("56_6f_create_missing_provider", "GET", "/api/v1/scalesets", GarmServerError, ""),
    ],
)  # fmt: skip
def test_error_statuses_map_to_types(
    httpserver: HTTPServer,
    client: GarmClient,
    name: str,
    method: str,
    path: str,
    kind: type[GarmApiError],
    details: str,
):
    """Arrange: a recorded error answer. Act: make the call. Assert: the type, status, details."""
    serve(httpserver, name, method, path)
    call = {
        "/api/v1/scalesets/10": lambda: client.delete_scaleset(10),
        "/api/v1/scalesets/abc": lambda: get_scaleset_by_text_id(client, "abc"),
        "/api/v1/scalesets/999999": lambda: client.get_scaleset(999999),
        "/api/v1/scalesets": client.list_scalesets,
    }[path]

    with pytest.raises(kind) as raised:
        call()

    assert raised.value.status == recording(name)["status"]
    assert raised.value.details.startswith(details)
    assert not isinstance(raised.value, GarmUnreachable)


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"error": "init_required", "details": "Missing superuser"}, GarmNotInitialised),
        (
            {
                "error": "urls_required",
                "details": "Missing required URLs. Make sure you update the metadata and "
                "callback URLs",
            },
            GarmUrlsRequired,
        ),
        ({"error": "Conflict", "details": "already initialized"}, GarmConflict),
    ],
)
def test_409_gates_are_distinct(
    httpserver: HTTPServer, client: GarmClient, body: dict[str, str], kind: type[GarmApiError]
):
    """Arrange: GARM's 409 bodies (garm-behaviour B8). Act: controller-info. Assert: exact type."""
    httpserver.expect_request("/api/v1/controller-info").respond_with_json(body, status=409)

    with pytest.raises(kind) as raised:
        client.controller_info()

    assert type(raised.value) is kind
    if kind is GarmConflict:
        assert not isinstance(raised.value, garm_api.GarmNotReady)


def test_wrong_password_is_unauthorized_without_the_password(httpserver: HTTPServer):
    """Arrange: GARM's recorded 401 for a wrong password.

    Act: log in. Assert: GarmUnauthorized whose text does not contain the password.
    """
    serve(httpserver, "65_6f_login_wrong_password", "POST", "/api/v1/auth/login")
    client = GarmClient(httpserver.url_for("/").rstrip("/"))

    with pytest.raises(GarmUnauthorized) as raised:
        client.login("admin", "S3cret-Pa55word-never-logged")

    assert "S3cret" not in str(raised.value)
    assert raised.value.error == "Not Authorized"


def test_login_keeps_the_token(httpserver: HTTPServer):
    """Arrange: a login answer, then a list. Act: log in and list. Assert: the token is sent."""
    httpserver.expect_request("/api/v1/auth/login", method="POST").respond_with_json(
        {"token": "new.jwt.token"}
    )
    serve(httpserver, "21_6b_list_repo_scalesets", "GET", "/api/v1/scalesets")
    client = GarmClient(httpserver.url_for("/").rstrip("/"))

    client.login("admin", "pw")
    client.list_scalesets()

    assert httpserver.log[-1][0].headers["Authorization"] == "Bearer new.jwt.token"


def test_non_json_error_body_is_kept_as_title(httpserver: HTTPServer, client: GarmClient):
    """Arrange: GARM's plain-text 401 for a non-admin user. Act: list. Assert: title kept."""
    httpserver.expect_request("/api/v1/scalesets").respond_with_data("Unauthorized", status=401)

    with pytest.raises(GarmUnauthorized, match="Unauthorized"):
        client.list_scalesets()


# Outages --------------------------------------------------------------------------------------


def test_refused_connection_is_an_outage_not_a_refusal():
    """Arrange: a port nobody listens on. Act: list. Assert: GarmUnreachable, not GarmApiError."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = GarmClient(f"http://127.0.0.1:{port}", token=TOKEN)

    def list_handling_refusals() -> None:
        try:
            client.list_scalesets()
        except GarmApiError:  # a handler for refusals must not see the outage
            pytest.fail("an outage reached a handler for API refusals")

    with pytest.raises(GarmUnreachable) as raised:
        list_handling_refusals()

    assert "list scale sets" in str(raised.value)


def test_timeout_is_an_outage(httpserver: HTTPServer):
    """Arrange: GARM that does not answer until the test lets it. Act: list.

    Assert: GarmUnreachable naming a read timeout: GARM was held until after the call ended,
    so only the client's timeout can have ended it (no wall-clock bound).
    """
    release = threading.Event()

    def held(_: Request) -> Response:
        release.wait(10)
        return Response("[]", content_type="application/json")

    httpserver.expect_request("/api/v1/scalesets").respond_with_handler(held)
    client = GarmClient(httpserver.url_for("/").rstrip("/"), token=TOKEN, read_timeout=0.2)

    try:
        with pytest.raises(GarmUnreachable) as raised:
            client.list_scalesets()
    finally:
        release.set()

    assert "list scale sets" in str(raised.value)
    assert "timeout" in str(raised.value).lower() or "timed out" in str(raised.value).lower()


@pytest.fixture
def resetting_server() -> Iterator[str]:
    """A TCP server that accepts one connection and resets it without answering."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(5)

        def reset_one() -> None:
            connection, _ = listener.accept()
            # SO_LINGER on, 0 seconds: close() sends RST instead of FIN.
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.recv(65536)
            connection.close()

        worker = threading.Thread(target=reset_one, daemon=True)
        worker.start()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
        worker.join(timeout=5)


def test_reset_connection_is_an_outage(resetting_server: str):
    """Arrange: a server that resets the connection. Act: list. Assert: GarmUnreachable."""
    client = GarmClient(resetting_server, token=TOKEN)

    with pytest.raises(GarmUnreachable):
        client.list_scalesets()


@pytest.fixture
def truncating_server() -> Iterator[str]:
    """A TCP server that answers one request with a body shorter than its Content-Length."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(5)

        def truncate_one() -> None:
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b'Content-Length: 100\r\n\r\n[{"id": 1,'
                )

        worker = threading.Thread(target=truncate_one, daemon=True)
        worker.start()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
        worker.join(timeout=5)


def test_an_answer_cut_short_is_an_outage(truncating_server: str):
    """Arrange: GARM closes the connection half-way through its answer.

    Act: list scale sets (a read every hook makes). Assert: GarmUnreachable naming the call,
    no GarmApiError nor WireFormatError: GARM did not finish answering.
    """
    client = GarmClient(truncating_server, token=TOKEN)

    with pytest.raises(GarmUnreachable, match="list scale sets") as raised:
        client.list_scalesets()

    assert not isinstance(raised.value, (GarmApiError, garm_api.WireFormatError))


def test_module_import_does_not_load_the_generated_client():
    """Arrange: a fresh interpreter. Act: import garm_api. Assert: garm_client is not loaded."""
    code = "import sys, garm_api; print('garm_client' in sys.modules, 'pydantic' in sys.modules)"

    output = in_a_fresh_interpreter(code)

    assert output.split() == ["False", "False"]


def test_a_converged_hook_loads_nothing_of_the_generated_client(httpserver: HTTPServer):
    """Arrange: a login answer, a recorded scale-set list, empty lists; a fresh interpreter.

    Act: log in and make the reads of a converged hook.
    Assert: nothing of the generated client was loaded, nor urllib3, pydantic or dateutil
    (ADR 0001, amendments).
    """
    httpserver.expect_request("/api/v1/auth/login", method="POST").respond_with_json(
        {"token": "new.jwt.token"}
    )
    serve(httpserver, "21_6b_list_repo_scalesets", "GET", "/api/v1/scalesets")
    for path in ("github/credentials", "repositories", "organizations", "templates", "instances"):
        httpserver.expect_request(f"/api/v1/{path}", method="GET").respond_with_json([])
    code = (
        "import sys, garm_api\n"
        f"client = garm_api.GarmClient({httpserver.url_for('/').rstrip('/')!r})\n"
        "client.login('admin', 'pw')\n"
        "client.list_github_credentials()\n"
        "client.list_entities(garm_api.EntityKind.REPOSITORY)\n"
        "client.list_entities(garm_api.EntityKind.ORGANIZATION)\n"
        "client.list_templates(os_type='linux')\n"
        "client.list_instances()\n"
        "prefixes = ('garm_client', 'urllib3', 'pydantic', 'dateutil')\n"
        "print(len(client.list_scalesets()), [m for m in sys.modules if m.startswith(prefixes)])\n"
    )

    output = in_a_fresh_interpreter(code)

    count, loaded = output.split(" ", 1)
    assert int(count) > 0
    assert loaded.strip() == "[]"


def test_reads_send_the_generated_operations_request(httpserver: HTTPServer, client: GarmClient):
    """Arrange: answers for a template list and one template.

    Act: list linux templates, get template 7.
    Assert: the query name, path and headers the generated operations use; the bearer token.
    """
    httpserver.expect_request(
        "/api/v1/templates", method="GET", query_string="osType=linux"
    ).respond_with_json([])
    httpserver.expect_request("/api/v1/templates/7", method="GET").respond_with_json(
        {"id": 7, "name": "t", "data": "IyEvYmluL2Jhc2gK"}
    )

    client.list_templates(os_type="linux")
    template = client.get_template(7)

    assert template.data == b"#!/bin/bash\n"
    for request, _ in httpserver.log:
        assert request.headers["Accept"] == "application/json"
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"


def test_a_redirect_is_never_followed_nor_read_as_an_answer(httpserver: HTTPServer):
    """Arrange: GARM (or something in its place) answers 301 with an empty body.

    Act: list scale sets (a read over `http.client`) and delete one (a generated operation).
    Assert: both GarmUnreachable, as the generated client always did: an empty redirect must
    never read as "no scale sets".
    """
    for method, path in (("GET", "/api/v1/scalesets"), ("DELETE", "/api/v1/scalesets/1")):
        httpserver.expect_request(path, method=method).respond_with_data(
            "", status=301, headers={"Location": "http://elsewhere.invalid/"}
        )
    client = GarmClient(httpserver.url_for("/").rstrip("/"), token=TOKEN)

    with pytest.raises(GarmUnreachable, match="list scale sets"):
        client.list_scalesets()
    with pytest.raises(GarmUnreachable, match="delete scale set"):
        client.delete_scaleset(1)


@pytest.fixture
def untrusted_https_server(tmp_path: Path) -> Iterator[HTTPServer]:
    """An HTTPS server on 127.0.0.1 whose certificate no system CA vouches for."""
    context = untrusted_server_context(tmp_path)
    server = HTTPServer(host="127.0.0.1", ssl_context=context)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_an_untrusted_certificate_is_an_outage_on_both_transports(
    untrusted_https_server: HTTPServer,
):
    """Arrange: GARM over HTTPS with a certificate no system CA vouches for.

    Act: list scale sets (over `http.client`) and delete one (a generated operation).
    Assert: both GarmUnreachable, and GARM never saw a request: both transports verify alike.
    """
    for method, path in (("GET", "/api/v1/scalesets"), ("DELETE", "/api/v1/scalesets/1")):
        untrusted_https_server.expect_request(path, method=method).respond_with_json([])
    client = GarmClient(untrusted_https_server.url_for("/").rstrip("/"), token=TOKEN)

    with pytest.raises(GarmUnreachable, match="list scale sets"):
        client.list_scalesets()
    with pytest.raises(GarmUnreachable, match="delete scale set"):
        client.delete_scaleset(1)

    assert untrusted_https_server.log == []


# One transport: what every call shares -------------------------------------------------------

PKCS1 = b"-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"
SCALESET = {"id": 8, "name": "s", "repo_id": REPO_ID, "repo_name": "fake-org/fake-repo"}
CREATE = ScaleSetCreate(
    name="s", provider_name="p", image="i", flavor="f", labels=("x",), max_runners=1
)
REPO, ORG, ENTERPRISE = EntityKind.REPOSITORY, EntityKind.ORGANIZATION, EntityKind.ENTERPRISE

# Every public call of GarmClient: (method name, call, HTTP method, path, what GARM answers).
CALLS: list[tuple[str, Callable[[GarmClient], object], str, str, object]] = [
    ("first_run", lambda c: c.first_run("admin", "a@b.c", "pw"), "POST", "/first-run", {}),
    ("login", lambda c: c.login("admin", "pw"), "POST", "/auth/login", {"token": "t"}),
    ("controller_info", lambda c: c.controller_info(), "GET", "/controller-info", {}),
    (
        "update_controller",
        lambda c: c.update_controller(metadata_url="http://m", ca_cert_bundle=b""),
        "PUT",
        "/controller",
        {},
    ),
    ("metrics_token", lambda c: c.metrics_token(), "GET", "/metrics-token", {"token": "m"}),
    ("list_providers", lambda c: c.list_providers(), "GET", "/providers", []),
    ("list_github_endpoints", lambda c: c.list_github_endpoints(), "GET", "/github/endpoints", []),
    (
        "create_github_endpoint",
        lambda c: c.create_github_endpoint(
            "ghes", base_url="https://g", api_base_url="https://g/api", upload_base_url="https://u"
        ),
        "POST",
        "/github/endpoints",
        {},
    ),
    (
        "list_github_credentials",
        lambda c: c.list_github_credentials(),
        "GET",
        "/github/credentials",
        None,
    ),
    (
        "create_github_app_credentials",
        lambda c: c.create_github_app_credentials(
            "app", endpoint="github.com", app_id=1, installation_id=2, private_key_pem=PKCS1
        ),
        "POST",
        "/github/credentials",
        {},
    ),
    (
        "update_github_app_credentials",
        lambda c: c.update_github_app_credentials(
            3, app_id=1, installation_id=2, private_key_pem=PKCS1
        ),
        "PUT",
        "/github/credentials/3",
        {},
    ),
    (
        "delete_github_credentials",
        lambda c: c.delete_github_credentials(3),
        "DELETE",
        "/github/credentials/3",
        "",
    ),
    ("list_entities", lambda c: c.list_entities(REPO), "GET", "/repositories", []),
    ("list_entities", lambda c: c.list_entities(ORG), "GET", "/organizations", []),
    ("list_entities", lambda c: c.list_entities(ENTERPRISE), "GET", "/enterprises", []),
    (
        "create_repository",
        lambda c: c.create_repository("o", "r", credentials_name="c", webhook_secret="w"),
        "POST",
        "/repositories",
        {},
    ),
    (
        "create_organization",
        lambda c: c.create_organization("o", credentials_name="c", webhook_secret="w"),
        "POST",
        "/organizations",
        {},
    ),
    (
        "update_entity_credentials",
        lambda c: c.update_entity_credentials(REPO, "r1", "c"),
        "PUT",
        "/repositories/r1",
        {},
    ),
    (
        "update_entity_credentials",
        lambda c: c.update_entity_credentials(ORG, "o1", "c"),
        "PUT",
        "/organizations/o1",
        {},
    ),
    (
        "update_entity_credentials",
        lambda c: c.update_entity_credentials(ENTERPRISE, "e1", "c"),
        "PUT",
        "/enterprises/e1",
        {},
    ),
    ("delete_entity", lambda c: c.delete_entity(REPO, "r1"), "DELETE", "/repositories/r1", ""),
    ("delete_entity", lambda c: c.delete_entity(ORG, "o1"), "DELETE", "/organizations/o1", ""),
    (
        "delete_entity",
        lambda c: c.delete_entity(ENTERPRISE, "e1"),
        "DELETE",
        "/enterprises/e1",
        "",
    ),
    ("list_templates", lambda c: c.list_templates(), "GET", "/templates", []),
    ("get_template", lambda c: c.get_template(7), "GET", "/templates/7", {}),
    ("create_template", lambda c: c.create_template("t", data=b"#!"), "POST", "/templates", {}),
    ("update_template", lambda c: c.update_template(7, data=b"#!"), "PUT", "/templates/7", {}),
    ("delete_template", lambda c: c.delete_template(7), "DELETE", "/templates/7", ""),
    ("list_scalesets", lambda c: c.list_scalesets(), "GET", "/scalesets", []),
    ("get_scaleset", lambda c: c.get_scaleset(8), "GET", "/scalesets/8", SCALESET),
    (
        "create_scaleset",
        lambda c: c.create_scaleset(REPO, "r1", CREATE),
        "POST",
        "/repositories/r1/scalesets",
        SCALESET,
    ),
    (
        "create_scaleset",
        lambda c: c.create_scaleset(ORG, "o1", CREATE),
        "POST",
        "/organizations/o1/scalesets",
        SCALESET,
    ),
    (
        "create_scaleset",
        lambda c: c.create_scaleset(ENTERPRISE, "e1", CREATE),
        "POST",
        "/enterprises/e1/scalesets",
        SCALESET,
    ),
    (
        "update_scaleset",
        lambda c: c.update_scaleset(8, ScaleSetUpdate(enabled=False)),
        "PUT",
        "/scalesets/8",
        SCALESET,
    ),
    ("delete_scaleset", lambda c: c.delete_scaleset(8), "DELETE", "/scalesets/8", ""),
    (
        "list_scaleset_instances",
        lambda c: c.list_scaleset_instances(8),
        "GET",
        "/scalesets/8/instances",
        [],
    ),
    ("list_instances", lambda c: c.list_instances(), "GET", "/instances", []),
    ("delete_instance", lambda c: c.delete_instance("r-1"), "DELETE", "/instances/r-1", ""),
]


def answer_with(server: HTTPServer, method: str, path: str, answer: object) -> None:
    """Answer `method /api/v1<path>` with `answer` as JSON ("" for an empty body)."""
    handler = server.expect_request(f"/api/v1{path}", method=method)
    if answer == "":
        handler.respond_with_data("", content_type="application/json")
    else:
        handler.respond_with_json(answer)


def test_the_table_names_every_call_of_the_client():
    """Arrange: GarmClient's public methods. Act: compare with CALLS.

    Assert: every method is in the table, so a new call cannot skip the test below.
    """
    public = {
        name
        for name, member in vars(GarmClient).items()
        if callable(member) and not name.startswith("_")
    }

    assert {row[0] for row in CALLS} == public


@pytest.mark.parametrize(
    ("call", "method", "path", "answer"),
    [row[1:] for row in CALLS],
    ids=[f"{row[0]}:{row[2]} {row[3]}" for row in CALLS],
)
def test_every_call_resolves_its_operation_and_reaches_garm(
    httpserver: HTTPServer,
    client: GarmClient,
    call: Callable[[GarmClient], object],
    method: str,
    path: str,
    answer: object,
):
    """Arrange: GARM answering the call's request, and nothing else.

    Act: make the call.
    Assert: it ran (its generated API class, operation and request model resolved and accepted
    the arguments) and GARM received exactly that one request, with the token.
    """
    answer_with(httpserver, method, path, answer)

    call(client)

    (request, response), *others = httpserver.log
    assert (request.method, request.path, response.status_code) == (method, f"/api/v1{path}", 200)
    assert others == []
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.fixture
def issuer() -> Issuer:
    """A CA that GARM's certificate chains to, as the certificates relation's CA."""
    return Issuer()


@pytest.fixture
def https_garm(tmp_path: Path, issuer: Issuer) -> Iterator[HTTPServer]:
    """GARM over HTTPS on 127.0.0.1 with a certificate `issuer` signed for it."""
    server = HTTPServer(host="127.0.0.1", ssl_context=localhost_server_context(issuer, tmp_path))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_both_paths_trust_the_relations_ca(https_garm: HTTPServer, issuer: Issuer):
    """Arrange: GARM over HTTPS, its certificate signed by the relation's CA.

    Act: list scale sets (built here) and delete one (a generated operation), trusting that CA.
    Assert: both reach GARM, over HTTPS.
    """
    answer_with(https_garm, "GET", "/scalesets", [])
    answer_with(https_garm, "DELETE", "/scalesets/1", "")
    client = GarmClient(https_garm.url_for("/").rstrip("/"), token=TOKEN, ca_cert=issuer.ca_pem)

    listed = client.list_scalesets()
    client.delete_scaleset(1)

    assert listed == []
    assert [(r.method, r.scheme, r.path) for r, _ in https_garm.log] == [
        ("GET", "https", "/api/v1/scalesets"),
        ("DELETE", "https", "/api/v1/scalesets/1"),
    ]


def test_both_paths_trust_only_the_relations_ca(https_garm: HTTPServer):
    """Arrange: GARM over HTTPS; the client is given another CA than the one that signed it.

    Act: list scale sets (built here) and delete one (a generated operation).
    Assert: both GarmUnreachable naming the call, and GARM never saw a request.
    """
    answer_with(https_garm, "GET", "/scalesets", [])
    answer_with(https_garm, "DELETE", "/scalesets/1", "")
    other_ca = Issuer().ca_pem
    client = GarmClient(https_garm.url_for("/").rstrip("/"), token=TOKEN, ca_cert=other_ca)

    with pytest.raises(GarmUnreachable, match=r"list scale sets: .*CERTIFICATE_VERIFY_FAILED"):
        client.list_scalesets()
    with pytest.raises(GarmUnreachable, match=r"delete scale set: .*CERTIFICATE_VERIFY_FAILED"):
        client.delete_scaleset(1)

    assert https_garm.log == []


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (301, "", GarmUnreachable),
        (400, '{"error": "Bad Request", "details": "invalid request"}', GarmBadRequest),
        (401, "Unauthorized", GarmUnauthorized),
        (404, '{"error": "Not Found", "details": "no such scale set"}', GarmNotFound),
        (409, '{"error": "init_required", "details": "Missing superuser"}', GarmNotInitialised),
        (409, '{"error": "urls_required", "details": "Missing URLs"}', GarmUrlsRequired),
        (409, '{"error": "Conflict", "details": "duplicate"}', GarmConflict),
        (418, "", GarmApiError),
        (500, '{"error": "Internal Server Error", "details": ""}', GarmServerError),
        (502, "Bad Gateway", GarmServerError),
        (200, "<html>proxy error</html>", garm_api.WireFormatError),
    ],
)
def test_both_paths_read_every_answer_alike(
    httpserver: HTTPServer, client: GarmClient, status: int, body: str, kind: type[Exception]
):
    """Arrange: GARM answering a read built here and a generated write with the same answer.

    Act: get template 7 (built here) and delete it (a generated operation).
    Assert: the same error type, status, title and details from both, each naming its call.
    """
    for method in ("GET", "DELETE"):
        httpserver.expect_request("/api/v1/templates/7", method=method).respond_with_data(
            body, status=status, headers={"Location": "http://elsewhere.invalid/"}
        )
    raised: list[Exception] = []

    for call in (lambda: client.get_template(7), lambda: client.delete_template(7)):
        with pytest.raises(kind) as error:
            call()
        raised.append(error.value)

    read, write = raised
    assert type(read) is type(write) is kind
    fields = ("status", "error", "details")
    assert [getattr(read, f, None) for f in fields] == [getattr(write, f, None) for f in fields]
    assert str(read).startswith("get template: ")
    assert str(write).startswith("delete template: ")


def test_both_paths_wait_the_read_timeout(httpserver: HTTPServer):
    """Arrange: GARM that answers neither a read nor a write until the test lets it.

    Act: list scale sets (built here), then delete one (a generated operation).
    Assert: both GarmUnreachable naming a timeout: only the client's read timeout can have
    ended them (GARM was held until after the calls).
    """
    release = threading.Event()

    def held(_: Request) -> Response:
        release.wait(10)
        return Response("[]", content_type="application/json")

    httpserver.expect_request("/api/v1/scalesets").respond_with_handler(held)
    httpserver.expect_request("/api/v1/scalesets/1").respond_with_handler(held)
    client = GarmClient(httpserver.url_for("/").rstrip("/"), token=TOKEN, read_timeout=0.2)

    try:
        with pytest.raises(GarmUnreachable, match=r"list scale sets: .*timed out"):
            client.list_scalesets()
        with pytest.raises(GarmUnreachable, match=r"delete scale set: .*timed out"):
            client.delete_scaleset(1)
    finally:
        release.set()
        # The held requests end after the calls; wait, so they never reach the next test's log.
        deadline = time.monotonic() + 10
        while len(httpserver.log) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)


def test_a_write_after_login_carries_the_new_token(httpserver: HTTPServer):
    """Arrange: a client without a token; GARM answers login, a write and a read.

    Act: delete a scale set before logging in, log in, delete again and list.
    Assert: no Authorization before login; after it, the write and the read carry its token.
    """
    httpserver.expect_request("/api/v1/auth/login", method="POST").respond_with_json(
        {"token": "new.jwt.token"}
    )
    answer_with(httpserver, "DELETE", "/scalesets/1", "")
    answer_with(httpserver, "GET", "/scalesets", [])
    client = GarmClient(httpserver.url_for("/").rstrip("/"))

    client.delete_scaleset(1)
    client.login("admin", "pw")
    client.delete_scaleset(1)
    client.list_scalesets()

    sent = [request.headers.get("Authorization") for request, _ in httpserver.log]
    assert sent == [None, None, "Bearer new.jwt.token", "Bearer new.jwt.token"]
    assert client.token == "new.jwt.token"


@pytest.mark.parametrize(
    ("call", "method", "path", "answer", "problem"),
    [
        (lambda c: c.list_scalesets(), "GET", "/scalesets", {}, "list scale sets: expected a"),
        (lambda c: c.get_scaleset(8), "GET", "/scalesets/8", [], "get scale set: expected a"),
        (
            lambda c: c.update_scaleset(8, ScaleSetUpdate(enabled=True)),
            "PUT",
            "/scalesets/8",
            {"id": 8},
            "update scale set: scale set 8 names no repository",
        ),
        (lambda c: c.metrics_token(), "GET", "/metrics-token", {}, "metrics-token: answered"),
    ],
    ids=["read-object-for-list", "write-list-for-object", "write-no-entity", "write-no-token"],
)
def test_an_unreadable_answer_names_the_call_on_both_paths(
    httpserver: HTTPServer,
    client: GarmClient,
    call: Callable[[GarmClient], object],
    method: str,
    path: str,
    answer: object,
    problem: str,
):
    """Arrange: GARM answering 200 with a body the call cannot read.

    Act: make the call. Assert: WireFormatError whose operation is the call, once in its text.
    """
    answer_with(httpserver, method, path, answer)

    with pytest.raises(garm_api.WireFormatError) as raised:
        call(client)

    assert str(raised.value).startswith(problem)
    assert raised.value.operation == problem.split(":", maxsplit=1)[0]
    assert str(raised.value).count(raised.value.operation) == 1


def test_one_debug_line_per_call_without_bodies_or_tokens(
    httpserver: HTTPServer, caplog: pytest.LogCaptureFixture
):
    """Arrange: GARM answering login, a write carrying a secret, and a refused read.

    Act: log in, create a repository, get a scale set GARM does not have; capture every log.
    Assert: one debug line per call naming the call, method, path and status; no password,
    token or webhook secret anywhere in the log.
    """
    password, token, secret = "S3cret-Pa55word", "header.payload.sig", "webhook-S3cret"
    httpserver.expect_request("/api/v1/auth/login", method="POST").respond_with_json(
        {"token": token}
    )
    answer_with(httpserver, "POST", "/repositories", {"id": "r1", "name": "r", "owner": "o"})
    httpserver.expect_request("/api/v1/scalesets/9").respond_with_json(
        {"error": "Not Found", "details": "no such scale set"}, status=404
    )
    client = GarmClient(httpserver.url_for("/").rstrip("/"))
    caplog.set_level(logging.DEBUG)

    client.login("admin", password)
    client.create_repository("o", "r", credentials_name="c", webhook_secret=secret)
    with pytest.raises(GarmNotFound):
        client.get_scaleset(9)

    lines = [r.getMessage() for r in caplog.records if r.name.startswith("garm_api")]
    assert lines == [
        "GARM login: POST /api/v1/auth/login: HTTP 200",
        "GARM create repository: POST /api/v1/repositories: HTTP 200",
        "GARM get scale set: GET /api/v1/scalesets/9: HTTP 404",
    ]
    everything = caplog.text + "".join(r.getMessage() for r in caplog.records)
    assert not [s for s in (password, token, secret) if s in everything]


def test_a_write_loads_only_its_generated_api_class(httpserver: HTTPServer):
    """Arrange: GARM answering a scale-set delete; a fresh interpreter.

    Act: delete a scale set. Assert: of the generated API classes only `scalesets_api` was
    loaded.
    """
    answer_with(httpserver, "DELETE", "/scalesets/1", "")
    code = (
        "import sys, garm_api\n"
        f"client = garm_api.GarmClient({httpserver.url_for('/').rstrip('/')!r}, token='t')\n"
        "client.delete_scaleset(1)\n"
        "print(sorted(m for m in sys.modules if m.startswith('garm_client.api.')))\n"
    )

    output = in_a_fresh_interpreter(code)

    assert output.strip() == "['garm_client.api.scalesets_api']"


def in_a_fresh_interpreter(code: str) -> str:
    """What `code` prints when run by a new Python with the charm's src/ as its directory."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(garm_api.__file__).parents[1],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
