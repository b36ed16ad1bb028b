"""What the real GARM binaries showed and the simulator must match, over the four targets.

Password strength, the status of a new runner, GitHub's rate limit on credentials, the
differences between v0.2.1 and the newer GARM a client can see, the end of old tokens after an
admin password reset (newer only), and (real targets only) that nothing leaves loopback.
"""

from __future__ import annotations

import base64
import secrets
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from contract.conftest import (
    ADMIN,
    PASSWORD,
    REAL_TARGETS,
    Target,
    open_target,
    scaleset_body,
    target_param,
)
from contract.garm_http import call
from contract.real_garm import V021

WEAK = '{"error":"Bad Request","details":"password is too weak"}\n'
REFUSED = '{"error":"Authentication failed","details":""}\n'
NEW_PASS = "New-admin-pw-9fK2mQ-x"  # zxcvbn score 4: `garm admin` refuses weaker ones too
# (password, GARM's first-run accepts it): both binaries agree on every row.
PASSWORDS = [
    ("a", False),
    ("password", False),
    ("Password1", False),
    ("P@ssw0rd!", False),
    ("qwertyuiopasdfghjkl", False),
    ("aaaaaaaaaaaaaaaaaaaaaaaa", False),
    ("abcdefghijklmnop", False),
    ("1234567890123456", False),
    ("ilovegarmrunners", False),
    ("sunshine2026!", False),
    ("hunter2hunter2", False),
    ("monkeymonkeymonkey", False),
    ("Contract-Suite-Pa55word!", False),
    ("Summer2026!Garm", False),
    ("correcthorsebatterystaple", True),
    ("correct horse battery staple", True),
    ("Tr0ub4dor&3", True),
    ("zxcvbn-garm-2026", True),
    ("kT9#mQ2$", True),
    ("j8Hq2nVx", True),
    ("xK3m9Qz7Lp", True),
    ("rT5-wQ8-zL2", True),
    ("4f8a1c9e2b7d", True),
    ("Zq8!rP2#vN5%", True),
    ("Garm-Contract-9f3Kq!xZ", True),
    ("Ab1!Ab1!Ab1!Ab1!", True),
    ("qazwsxedcrfvtgbyhn", True),
]
# Rows the simulator's rule (GARM's entropy model over the Python zxcvbn package's matchers)
# gets wrong: GARM's Go zxcvbn has other word lists. The real targets prove GARM's verdict.
SIMULATOR_MISJUDGES = {"Contract-Suite-Pa55word!", "Summer2026!Garm", "qazwsxedcrfvtgbyhn"}


def test_first_run_password_strength(target_name: str, tmp_path: Path):
    """Arrange: fresh GARMs of one target. Act: first-run with each password of the table.

    Assert: GARM's verdict on every row (the simulator: on every row but the three its rule
    misjudges), a weak password refused with GARM's exact 400, and a password made like the
    charm's (`secrets.token_urlsafe(32)`) accepted.
    """
    table = [*PASSWORDS, (secrets.token_urlsafe(32), True)]
    if target_name.startswith("sim-"):
        table = [(p, ok) for p, ok in table if p not in SIMULATOR_MISJUDGES]
    verdicts: dict[str, bool] = {}
    answers: dict[str, str] = {}
    refusals: set[str] = set()
    fresh = 0
    pending = list(table)
    while pending:
        with open_target(target_name, tmp_path / f"garm-{fresh}") as garm:
            fresh += 1
            while pending:
                password, _ = pending.pop(0)
                user = {"username": ADMIN, "email": "admin@example.com", "password": password}
                reply = call(garm.url, "POST", "/first-run", user)
                verdicts[password] = reply.status == 200
                answers[password] = f"{reply.status} {reply.raw.strip()[:80]}"
                if reply.status == 200:
                    break  # initialised: the next password needs a fresh GARM
                refusals.add(reply.raw)

    wrong = {p: (verdicts[p], answers[p]) for p, ok in table if verdicts[p] != ok}
    assert wrong == {}
    assert refusals == {WEAK}


def test_new_runner_is_pending_until_a_runner_reports(target: Target):
    """Arrange: a repository. Act: create an enabled scale set with min idle 1, poll its runner.

    Assert: the instance goes pending_create -> creating -> running (the simulator may skip
    steps), and its runner_status is `pending` all along and still after it runs.
    """
    if target.sim is not None:
        # The suite's fake provider boots no runner that could report: nor does the simulator.
        target.sim.github.runners_report = False
    created = target.create_scaleset("pending", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}/instances"
    seen: list[tuple[str, str]] = []

    def running() -> bool:
        instances = target.call("GET", path).json
        if instances:
            state = (instances[0]["status"], instances[0]["runner_status"])
            if not seen or seen[-1] != state:
                seen.append(state)
        return bool(seen) and seen[-1][0] == "running"

    assert target.wait_until(running, timeout=60)
    if target.sim is not None:
        target.sim.advance(30)
    else:
        time.sleep(2)
    later = target.call("GET", path).json[0]

    order = ["pending_create", "creating", "running"]
    statuses = [status for status, _ in seen]
    assert statuses == sorted(statuses, key=order.index)
    assert {runner_status for _, runner_status in seen} == {"pending"}
    assert (later["status"], later["runner_status"]) == ("running", "pending")


def test_credentials_carry_rate_limit(target: Target):
    """Arrange: PAT credentials. Act: create more, then read them back (one, and the list).

    Assert: the create answer has no `rate_limit`; reads carry GitHub's limit, remaining and a
    future reset (`used` omitted while 0).
    """
    body = {
        "name": "second-pat",
        "description": "x",
        "endpoint": target.call("GET", "/github/credentials").json[0]["endpoint"]["name"],
        "auth_type": "pat",
        "pat": {"oauth2_token": "fake-pat-token"},
    }

    created = target.call("POST", "/github/credentials", body).json
    # Until GARM's first rate-limit fetch (up to 30 s) it shows {"reset": -62135596800}.
    target.wait_until(
        lambda: "limit" in target.call("GET", "/github/credentials/1").json.get("rate_limit", {})
    )
    one = target.call("GET", "/github/credentials/1").json
    listed = target.call("GET", "/github/credentials").json[0]

    assert "rate_limit" not in created
    for answer in (one, listed):
        rate_limit = answer["rate_limit"]
        assert sorted(rate_limit) == ["limit", "remaining", "reset"]
        assert (rate_limit["limit"], rate_limit["remaining"]) == (5000, 5000)
        assert rate_limit["reset"] > time.time()


def test_controller_info_by_version(target: Target):
    """Arrange: a bootstrapped GARM without a webhook URL. Act: read the controller info.

    Assert: `garm_agent_version` and `allow_insecure_garm_agent` only on the newer GARM;
    `controller_webhook_url` is the bare controller id; `version` is v0.2.1 or newer.
    """
    info = target.call("GET", "/controller-info").json

    newer_keys = ("garm_agent_version", "allow_insecure_garm_agent")
    assert {key in info for key in newer_keys} == {target.version != V021}
    assert info["controller_webhook_url"] == info["controller_id"]
    assert (info["version"] == "v0.2.1") is (target.version == V021)


def test_missing_webhook_secret_by_version(target: Target):
    """Arrange: credentials. Act: create a repository and an organization without a secret.

    Assert: v0.2.1 answers 500 without details, the newer GARM 400 `missing secret`.
    """
    expected: dict[str, Any] = (
        {"error": "Server error", "details": ""}
        if target.version == V021
        else {"error": "Bad Request", "details": "error validating params: missing secret"}
    )
    repo = {"owner": "o", "name": "n", "credentials_name": "fake-pat"}
    org = {"name": "org1", "credentials_name": "fake-pat"}

    answers = [
        target.call("POST", "/repositories", repo),
        target.call("POST", "/organizations", org),
    ]

    status = 500 if target.version == V021 else 400
    assert [(reply.status, reply.json) for reply in answers] == [(status, expected)] * 2


def test_disable_update_on_update_by_version(target: Target):
    """Arrange: a scale set created with disable_update false. Act: PUT disable_update true.

    Assert: 200; the newer GARM applies it (and moves updated_at), v0.2.1 ignores it.
    """
    created = target.create_scaleset("no-update")

    reply = target.call("PUT", f"/scalesets/{created['id']}", {"disable_update": True})

    assert reply.status == 200
    applied = target.version != V021
    assert reply.json["disable_update"] is applied
    assert (reply.json["updated_at"] != created["updated_at"]) is applied


def test_proxies_by_version(target: Target):
    """Arrange: a repository. Act: use the proxies API and give a scale set a proxy.

    Assert: v0.2.1 has no proxies route (404) and ignores `proxy_id` (even an unknown one);
    the newer GARM creates the proxy (password never sent back), refuses an unknown id, shows
    `proxy_id` and `proxy_name` on the scale set (lists: the id only), refuses to delete a
    proxy in use, and deletes it once unused.
    """
    if target.version == V021:
        listed = target.call("GET", "/proxies")
        created = target.create_scaleset("proxied", proxy_id=999)

        assert (listed.status, listed.json) == (
            404,
            {"error": "Not found", "details": "Resource not found"},
        )
        assert not {"proxy_id", "proxy_name"} & set(created)
        return
    proxy_body = {"name": "corp", "https_proxy": "http://192.0.2.1:3128", "username": "u"}
    proxy = target.call("POST", "/proxies", proxy_body | {"password": "pw"}).json
    unknown = target.call(
        "POST",
        f"/repositories/{target.repo_id}/scalesets",
        scaleset_body("bad-proxy", proxy_id=999),
    )
    created = target.create_scaleset("proxied", proxy_id=proxy["id"])
    listed = target.call("GET", "/scalesets").json[0]
    in_use = target.call("DELETE", f"/proxies/{proxy['id']}")
    target.call("PUT", f"/scalesets/{created['id']}", {"proxy_id": 0})
    deleted = target.call("DELETE", f"/proxies/{proxy['id']}")

    assert {k: proxy[k] for k in proxy_body} == proxy_body
    assert "password" not in proxy
    assert (unknown.status, unknown.json["details"]) == (
        400,
        "error creating scale set: error checking scale set proxy: "
        "proxy with ID 999 does not exist",
    )
    assert (created["proxy_id"], created["proxy_name"]) == (proxy["id"], "corp")
    assert (listed["proxy_id"], "proxy_name" in listed) == (proxy["id"], False)
    assert in_use.status == 400
    assert (deleted.status, target.call("GET", "/proxies").json) == (200, [])


ZERO = "0001-01-01T00:00:00Z"
REPOSITORY_KEYS = [
    "id",
    "owner",
    "name",
    "credentials_name",
    "credentials_id",
    "credentials",
    "agent_mode",
    "pool_manager_status",
    "pool_balancing_type",
    "endpoint",
    "created_at",
    "updated_at",
]
ORGANIZATION_KEYS = [
    "id",
    "name",
    "credentials_name",
    "credentials",
    "credentials_id",
    "pool_manager_status",
    "pool_balancing_type",
    "endpoint",
    "created_at",
    "updated_at",
    "agent_mode",
]
CREDENTIALS_KEYS = [
    "id",
    "name",
    "description",
    "api_base_url",
    "upload_base_url",
    "base_url",
    "auth-type",
    "forge_type",
    "repositories",
    "organizations",
    "endpoint",
    "created_at",
    "updated_at",
    "rate_limit",
]


def test_entity_and_credentials_shapes(target: Target):
    """Arrange: a repository and an organization on PAT credentials.

    Act: read the repository once its pool manager runs, and the credentials by id.

    Assert: GARM's key orders (a repository's differs from an organization's; read by id, the
    repository ends with its events); the credentials list their repositories and
    organizations with empty credentials and endpoint.
    """
    org = {"name": "org1", "credentials_name": "fake-pat", "webhook_secret": "s" * 16}
    organization = target.call("POST", "/organizations", org).json
    path = f"/repositories/{target.repo_id}"
    target.wait_until(lambda: target.call("GET", path).json["pool_manager_status"].get("running"))
    repository = target.call("GET", path).json
    target.wait_until(lambda: "rate_limit" in target.call("GET", "/github/credentials/1").json)
    credentials = target.call("GET", "/github/credentials/1").json

    assert list(repository) == [*REPOSITORY_KEYS, "events"]
    assert [e["message"] for e in repository["events"]] == ["successfully updated tools"]
    assert list(organization) == ORGANIZATION_KEYS
    assert list(credentials) == CREDENTIALS_KEYS
    embedded = credentials["repositories"][0]
    empty = {"created_at": ZERO, "updated_at": ZERO}
    assert list(embedded) == REPOSITORY_KEYS
    assert (embedded["credentials"], embedded["endpoint"]) == ({"endpoint": empty} | empty, empty)
    assert [o["name"] for o in credentials["organizations"]] == ["org1"]


def test_controller_info_keys_by_version(target: Target):
    """Arrange: a bootstrapped GARM. Act: set the agent releases URL, read the controller info.

    Assert: GARM's keys in order for the version; the newer GARM also reports, once its worker
    cached the releases index (a second or so after the PUT), when it did.
    """
    target.call("PUT", "/controller", {"garm_agent_releases_url": target.releases_url})
    cached = "cached_garm_agent_release_fetched_at"
    if target.version != V021:
        target.wait_until(lambda: cached in target.call("GET", "/controller-info").json)
    info = target.call("GET", "/controller-info").json

    keys = ["controller_id", "hostname", "metadata_url", "callback_url"]
    keys += ["controller_webhook_url", "agent_url", "garm_agent_releases_url"]
    keys += ["enable_agent_tools_sync"]
    if target.version != V021:
        keys += ["garm_agent_version", "allow_insecure_garm_agent"]
    keys += ["minimum_job_age_backoff", "version"]
    if target.version != V021:
        keys += ["cached_garm_agent_release_fetched_at"]
    assert list(info) == keys
    assert info["garm_agent_releases_url"] == target.releases_url


def test_github_app_credentials_drive_a_scale_set(target: Target):
    """Arrange: GitHub App credentials (PKCS#1 key, as GitHub issues them) on the endpoint.

    Act: create a repository on them and an enabled scale set with min idle 1.

    Assert: a runner is created; on a real GARM, it got installation tokens from the fake
    GitHub with its App JWT and GitHub refused none of its calls (and, as for every real
    target, no secret appears in GARM's log).
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    app = {
        "app_id": 11,
        "installation_id": 22,
        "private_key_bytes": base64.b64encode(pem).decode(),
    }
    if target.real is not None:
        target.real.remember_secret("App private key", pem.decode().splitlines()[1])
    endpoint = target.call("GET", "/github/credentials").json[0]["endpoint"]["name"]
    creds = {"name": "app", "description": "x", "endpoint": endpoint, "auth_type": "app"}
    assert target.call("POST", "/github/credentials", creds | {"app": app}).status == 200
    repo = {"owner": "app-org", "name": "app-repo", "credentials_name": "app"}
    repo_id = target.call("POST", "/repositories", repo | {"webhook_secret": "s" * 16}).json["id"]
    body = scaleset_body("app-set", enabled=True, min_idle_runners=1)

    created = target.call("POST", f"/repositories/{repo_id}/scalesets", body)
    appeared = target.wait_until(lambda: bool(target.call("GET", "/instances").json))

    assert created.status == 200, created.raw
    assert appeared
    if target.real is not None:
        github = target.real.github
        assert github.installation_tokens
        assert [made for made in github.calls if made[2] >= 400] == []


@pytest.mark.parametrize("target_name", [target_param("sim-newer"), target_param("real-newer")])
def test_admin_password_reset_refuses_tokens_issued_before(target: Target):
    """Arrange: an admin token. Act: `garm admin password-reset` (builds after v0.2.1 only).

    Assert: the token issued before answers 401 `Authentication failed` (GARM bumped the
    admin's `generation`, which its tokens carry); the old password is refused; the new one
    logs in and its token works.
    """
    garm = target.real or target.sim
    assert garm is not None
    assert target.call("GET", "/scalesets").status == 200

    garm.reset_admin_password(ADMIN, NEW_PASS)

    for path in ("/controller-info", "/scalesets"):
        reply = target.call("GET", path)
        assert (reply.status, reply.raw) == (401, REFUSED), path
    old = call(target.url, "POST", "/auth/login", {"username": ADMIN, "password": PASSWORD})
    assert old.status == 401
    new = call(target.url, "POST", "/auth/login", {"username": ADMIN, "password": NEW_PASS})
    assert target.call("GET", "/scalesets", token=new.json["token"]).status == 200


@pytest.mark.parametrize("target_name", REAL_TARGETS)
def test_nothing_leaves_loopback(target_name: str, tmp_path: Path):
    """Arrange: a real GARM left alone past its first background fetch.

    Act: wait for the cache worker's first pass (5 s after start), then bootstrap.

    Assert: the default agent-releases fetch went to the proxy sink as a CONNECT (not out);
    the newer GARM validated the releases index it was given on the fake GitHub at once
    (v0.2.1 reads it on its own schedule); GARM's log shows no DNS lookup (also checked
    whenever a real target stops).
    """
    with open_target(target_name, tmp_path / "garm") as garm:
        assert garm.real is not None
        time.sleep(6)
        garm.bootstrap()
        garm.real.stop()

        proxied = {(r.method, r.target) for r in garm.real.proxy.requests}
        fetched = [p for m, p, _ in garm.real.github.calls if p.endswith("/releases")]

        assert proxied == {("CONNECT", "api.github.com:443")}
        assert bool(fetched) or garm.version == V021
        assert garm.real.dns_lookups() == []
