"""Endpoints, credentials, repositories, organizations and templates (C15-C17)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from contract.conftest import Garm, bootstrap_over_http, scaleset_body
from contract.garm_http import assert_same_shape, recorded_body, recording
from garm_sim import GarmSim


def _app_key(encoding: serialization.PrivateFormat) -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, encoding, serialization.NoEncryption())
    return base64.b64encode(pem).decode()


def _app_credentials(name: str, key: str) -> dict[str, Any]:
    return {
        "name": name,
        "endpoint": "github.com",
        "auth_type": "app",
        "app": {"app_id": 1, "installation_id": 2, "private_key_bytes": key},
    }


def test_credentials_list_is_null_when_empty(garm: Garm):
    """Arrange: the only credentials deleted with their repository. Act: list credentials.

    Assert: the body is JSON `null`, not `[]`; the delete answered 204.
    """
    garm.call("DELETE", f"/repositories/{garm.repo_id}")

    deleted = garm.call("DELETE", "/github/credentials/1")
    listed = garm.call("GET", "/github/credentials")

    assert deleted.status == 204
    assert (listed.status, listed.json) == (200, None)


def test_pkcs1_app_key_is_accepted_and_pkcs8_is_a_server_error(garm: Garm):
    """Arrange: the same kind of RSA key in PKCS#1 and PKCS#8 form. Act: create App creds (C16).

    Assert: PKCS#1 answers 200 with `auth-type: app`; PKCS#8 answers 500 with empty details.
    """
    pkcs1 = _app_key(serialization.PrivateFormat.TraditionalOpenSSL)
    pkcs8 = _app_key(serialization.PrivateFormat.PKCS8)

    accepted = garm.call("POST", "/github/credentials", _app_credentials("app1", pkcs1))
    refused = garm.call("POST", "/github/credentials", _app_credentials("app8", pkcs8))

    assert accepted.status == 200
    assert accepted.json["auth-type"] == "app"
    assert "private_key_bytes" not in accepted.raw
    assert (refused.status, refused.json) == (500, {"error": "Server error", "details": ""})


def test_credentials_have_the_recorded_shape_and_refuse_duplicates(garm: Garm):
    """Arrange: PAT credentials `fake-pat` exist. Act: create `FAKE-PAT` and list credentials.

    Assert: 409 for the duplicate; the existing credentials have the recorded shape (`auth-type`)
    followed by GitHub's `rate_limit` (limit, remaining, reset; `used` omitted while 0).
    """
    pat = {"oauth2_token": "t"}
    duplicate = garm.call(
        "POST",
        "/github/credentials",
        {"name": "FAKE-PAT", "endpoint": "github.com", "auth_type": "pat", "pat": pat},
    )
    existing = garm.call("GET", "/github/credentials").json[0]

    assert duplicate.status == 409
    recorded = recording("111_x_create_org")["json"]["credentials"]
    rate_limit = {"limit": 5000, "remaining": 5000, "reset": 1}
    assert_same_shape(existing, recorded | {"rate_limit": rate_limit})
    assert existing["auth-type"] == "pat"


@pytest.mark.parametrize(
    ("garm_version", "answer"),
    [
        ("v0.2.1", (500, {"error": "Server error", "details": ""})),
        (
            "newer",
            (400, {"error": "Bad Request", "details": "error validating params: missing secret"}),
        ),
    ],
)
def test_repository_needs_a_webhook_secret(garm_version: str, answer: tuple[int, Any]):
    """Arrange: a simulator of one GARM version with credentials.

    Act: create a repository without a webhook secret.

    Assert: v0.2.1 answers 500 without details, the newer GARM 400 `missing secret`; no new
    repository either way.
    """
    with GarmSim(["fake"], garm_version=garm_version) as sim:
        garm = bootstrap_over_http(sim)
        body = {"owner": "o", "name": "r", "credentials_name": "fake-pat"}

        reply = garm.call("POST", "/repositories", body)

        assert (reply.status, reply.json) == answer
        assert len(garm.call("GET", "/repositories").json) == 1


def test_repository_lookup_is_case_sensitive_but_duplicates_are_not(garm: Garm):
    """Arrange: repository fake-org/fake-repo.

    Act: filter by exact and other case; create `Fake-Org/Fake-Repo` (C17).

    Assert: exact filter finds it, other case finds nothing; the create answers 409.
    """
    exact = garm.call("GET", "/repositories?owner=fake-org&name=fake-repo").json
    other_case = garm.call("GET", "/repositories?owner=Fake-Org&name=Fake-Repo").json
    duplicate = garm.call(
        "POST",
        "/repositories",
        {
            "owner": "Fake-Org",
            "name": "Fake-Repo",
            "credentials_name": "fake-pat",
            "webhook_secret": "s",
        },
    )

    assert [repo["id"] for repo in exact] == [garm.repo_id]
    assert other_case == []
    assert duplicate.status == 409


def test_organization_scalesets_follow_the_recordings(garm: Garm):
    """Arrange: an organization as recorded and a GitHub group `fake-group`.

    Act: create a scale set in that group, one in an unknown group, list the org's sets, delete
    (C17).

    Assert: recorded shapes and answers; the org delete is refused (400) while a scale set
    exists and answers 200 once it is gone.
    """
    garm.sim.github.runner_groups.add("fake-group")
    org = garm.call("POST", "/organizations", recorded_body("111_x_create_org"))
    org_id = org.json["id"]
    base = f"/organizations/{org_id}/scalesets"

    created = garm.call("POST", base, recorded_body("112_x_org_create_group_fake_group"))
    unknown = garm.call("POST", base, recorded_body("113_x_org_create_group_unknown"))
    listed = garm.call("GET", base)
    refused = garm.call("DELETE", f"/organizations/{org_id}")
    garm.call("DELETE", f"/scalesets/{created.json['id']}")
    deleted = garm.call("DELETE", f"/organizations/{org_id}")

    assert_same_shape(org.json, recording("111_x_create_org")["json"])
    assert_same_shape(created.json, recording("112_x_org_create_group_fake_group")["json"])
    assert created.json["github-runner-group"] == "fake-group"
    assert (unknown.status, unknown.json["error"]) == (404, "Not Found")
    assert "runner group no-such-group not found" in unknown.json["details"]
    assert_same_shape(listed.json, recording("114_x_org_list_scalesets")["json"])
    assert refused.status == 400
    assert (deleted.status, deleted.raw) == (200, recording("116_x_delete_org")["raw_response"])


def test_repository_delete_is_refused_while_scalesets_exist(garm: Garm):
    """Arrange: a repository with a scale set. Act: delete the repository (C17).

    Assert: 400; the repository remains.
    """
    garm.create_scaleset("pinned")

    reply = garm.call("DELETE", f"/repositories/{garm.repo_id}")

    assert reply.status == 400
    assert garm.call("GET", f"/repositories/{garm.repo_id}").status == 200


def test_system_templates_are_seeded(garm: Garm):
    """Arrange: a fresh GARM. Act: list templates (C15).

    Assert: the four system templates owned by `system`, listed with `data: null`.
    """
    reply = garm.call("GET", "/templates")

    names = {t["name"]: t for t in reply.json}
    assert set(names) == {"github_linux", "github_windows", "gitea_linux", "gitea_windows"}
    assert all(t["owner_id"] == "system" and t["data"] is None for t in reply.json)


def test_template_lifecycle(garm: Garm):
    """Arrange: nothing.

    Act: create a template, create it again, update its data, delete it (C15).

    Assert: owned by the admin; duplicate 409; update answers the new base64 data; delete 200
    and a later GET 404.
    """
    data = base64.b64encode(b"#!/bin/bash\necho {{ .RunnerName }}\n").decode()
    new_data = base64.b64encode(b"#!/bin/bash\necho changed\n").decode()
    body = {"name": "mine", "os_type": "linux", "forge_type": "github", "data": data}

    created = garm.call("POST", "/templates", body)
    duplicate = garm.call("POST", "/templates", body)
    path = f"/templates/{created.json['id']}"
    updated = garm.call("PUT", path, {"data": new_data})
    deleted = garm.call("DELETE", path)

    assert created.json["owner_id"] == "admin"
    assert created.json["data"] == data
    assert duplicate.status == 409
    assert updated.json["data"] == new_data
    assert (deleted.status, deleted.raw) == (200, "")
    assert garm.call("GET", path).status == 404


def test_scaleset_can_use_its_own_template(garm: Garm):
    """Arrange: a linux template. Act: create scale sets with it and with a wrong OS.

    Assert: the first carries the template id and name; the second is 400.
    """
    data = base64.b64encode(b"#!/bin/bash\n").decode()
    template = garm.call(
        "POST",
        "/templates",
        {"name": "custom", "os_type": "linux", "forge_type": "github", "data": data},
    ).json

    created = garm.create_scaleset("custom-tpl", template_id=template["id"])
    wrong_os = garm.call(
        "POST",
        f"/repositories/{garm.repo_id}/scalesets",
        scaleset_body("win", os_type="windows", template_id=template["id"]),
    )

    assert (created["template_id"], created["template_name"]) == (template["id"], "custom")
    assert wrong_os.status == 400


@pytest.mark.parametrize("path", ["/github/endpoints", "/github/endpoints/GitHub.com"])
def test_github_com_endpoint_is_seeded(garm: Garm, path: str):
    """Arrange: a fresh GARM. Act: list endpoints or get `GitHub.com`. Assert: github.com."""
    reply = garm.call("GET", path)

    found = reply.json if isinstance(reply.json, list) else [reply.json]
    assert [e["name"] for e in found] == ["github.com"]
    assert found[0]["endpoint_type"] == "github"
