"""Real-GARM mode parts that run without a binary: fake GitHub, fake provider, config."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from contract.real_garm import PROVIDER_SOURCE, RealGarm, answers_as_garm, dns_lookups
from fake_github import FakeGitHub, FakeGitHubConfig
from fake_github.proxy_sink import ProxySink
from garm_sim import GarmSim

PAT = "fake-pat-token"
SETS = "/_services/pipelines/fake/_apis/runtime/runnerscalesets"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A fake GitHub with a short long-poll and a 10-character name limit."""
    with FakeGitHub(config=FakeGitHubConfig(longpoll_seconds=0.1, max_name_length=10)) as fake:
        yield fake


def gh(
    fake: FakeGitHub,
    method: str,
    path: str,
    body: Any = None,
    token: str = PAT,
    scheme: str = "Bearer",
) -> tuple[int, Any]:
    """Call the fake GitHub; return status and decoded body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(fake.url + path, data=data, method=method)  # noqa: S310
    request.add_header("Authorization", f"{scheme} {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, json.loads(raw) if raw else None


def test_rest_calls_need_the_pat(github: FakeGitHub):
    """Arrange: the fake GitHub. Act: rate_limit with and without the PAT.

    Assert: `resources.core` with the PAT (GARM crashes without it), 401 otherwise.
    """
    good = gh(github, "GET", "/api/v3/rate_limit")
    bad = gh(github, "GET", "/api/v3/rate_limit", token="wrong")

    assert good[0] == 200
    assert good[1]["resources"]["core"]["remaining"] == 5000
    assert bad[0] == 401


def test_registration_yields_jwts_with_exp(github: FakeGitHub):
    """Arrange: the fake GitHub. Act: registration token, then runner registration.

    Assert: both tokens are three-part JWTs with an `exp` claim; the actions URL is local.
    """
    status, token = gh(github, "POST", "/api/v3/repos/o/r/actions/runners/registration-token")
    _, registration = gh(github, "POST", "/actions/runner-registration", {"url": "x"})

    assert status == 201
    for jwt in (token["token"], registration["token"]):
        payload = jwt.split(".")[1]
        assert "exp" in json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert registration["url"].startswith(github.url)


def test_scale_set_create_duplicate_limit_and_delete(github: FakeGitHub):
    """Arrange: a 10-character limit. Act: create, duplicate, too long, look up, delete.

    Assert: 200, 409, 400, found by name and group, 204 (the only answer GARM accepts).
    """
    body = {"name": "short", "runnerGroupId": 1, "labels": []}

    created = gh(github, "POST", f"{SETS}?api-version=6.0-preview", body)
    duplicate = gh(github, "POST", SETS, body)
    too_long = gh(github, "POST", SETS, body | {"name": "much-too-long"})
    found = gh(github, "GET", f"{SETS}?runnerGroupId=1&name=short")
    deleted = gh(github, "DELETE", f"{SETS}/{created[1]['id']}")

    assert created[0] == 200
    assert (duplicate[0], too_long[0]) == (409, 400)
    assert found[1]["count"] == 1
    assert deleted[0] == 204


def app_jwt(app_id: int) -> str:
    """Return an RS256 App JWT like GARM's App transport signs (`iss` = the app id)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def part(data: dict[str, Any]) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=")

    now = int(time.time())
    claims = {"iat": now - 60, "exp": now + 540, "iss": str(app_id)}
    signing_input = part({"alg": "RS256", "typ": "JWT"}) + b"." + part(claims)
    signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return (signing_input + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


def test_app_installation_token_opens_the_rest_api():
    """Arrange: a fake GitHub for App 11. Act: exchange a JWT, call REST with the token.

    Assert: 201 with token and expires_at; `token <installation token>` authorises REST calls; a
    JWT of another app is refused; every token the fake issued or received is listed.
    """
    with FakeGitHub(config=FakeGitHubConfig(app_id=11)) as github:
        signed = app_jwt(11)
        path = "/api/v3/app/installations/22/access_tokens"
        status, issued = gh(github, "POST", path, {}, token=signed)
        other_app = gh(github, "POST", path, {}, token=app_jwt(12))
        with_token = gh(github, "GET", "/api/v3/rate_limit", token=issued["token"], scheme="token")
        _, registration = gh(
            github,
            "POST",
            "/api/v3/repos/o/r/actions/runners/registration-token",
            token=issued["token"],
            scheme="token",
        )

        assert (status, sorted(issued)) == (201, ["expires_at", "token"])
        assert other_app[0] == 401
        assert with_token[0] == 200
        assert set(github.issued_tokens()) >= {PAT, signed, issued["token"], registration["token"]}


def test_garm_agent_releases_index_is_served(github: FakeGitHub):
    """Arrange: the fake GitHub. Act: GET its releases URL without credentials.

    Assert: a non-empty list whose entries have `tag_name` (what GARM validates) and no assets.
    """
    request = urllib.request.Request(github.releases_url)  # noqa: S310 - loopback http
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback http
        releases = json.loads(response.read())

    assert [(r["tag_name"], r["assets"]) for r in releases] == [("v0.0.0-fake", [])]


def test_sessions_jit_agents_and_messages(github: FakeGitHub):
    """Arrange: a scale set. Act: open a session, issue a JIT runner, list agents, poll twice.

    Assert: a session with queue URL; the runner listed online; a 202 when idle and a message
    with `statistics` after jobs are assigned.
    """
    scale_set = gh(github, "POST", SETS, {"name": "s", "runnerGroupId": 1})[1]
    session = gh(github, "POST", f"{SETS}/{scale_set['id']}/sessions", {"ownerName": "garm"})[1]
    jit = gh(github, "POST", f"{SETS}/{scale_set['id']}/generatejitconfig", {"name": "garm-x"})[1]
    agents = gh(github, "GET", "/_services/pipelines/fake/_apis/distributedtask/pools/0/agents")[1]
    idle = gh(github, "GET", f"/msgq/{scale_set['id']}")
    github.set_assigned_jobs(scale_set["id"], 2)
    message = gh(github, "GET", f"/msgq/{scale_set['id']}")

    assert session["messageQueueUrl"].endswith(f"/msgq/{scale_set['id']}")
    assert jit["runner"]["name"] == "garm-x"
    assert [(a["name"], a["status"]) for a in agents["value"]] == [("garm-x", "online")]
    assert idle[0] == 202
    assert message[1]["statistics"]["totalAssignedJobs"] == 2


def provider(
    tmp_path: Path, command: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """Run the fake provider the way GARM does: clean environment, command in GARM_COMMAND."""
    config = tmp_path / "provider.json"
    config.write_text(json.dumps({"state_file": str(tmp_path / "state.json")}))
    clean = {"GARM_COMMAND": command, "GARM_PROVIDER_CONFIG_FILE": str(config)} | env
    return subprocess.run(
        [sys.executable, str(PROVIDER_SOURCE)],
        input=stdin,
        capture_output=True,
        text=True,
        env=clean,
        check=False,
        timeout=10,
    )


def test_fake_provider_creates_lists_and_deletes(tmp_path: Path):
    """Arrange: an empty provider state.

    Act: CreateInstance, ListInstances, DeleteInstance twice.

    Assert: a `running` instance named as GARM asked; listed under its pool; deleted (0), then
    "not found" (30).
    """
    pool = {"GARM_POOL_ID": "set-uuid"}

    created = provider(tmp_path, "CreateInstance", json.dumps({"name": "garm-abc"}), **pool)
    listed = provider(tmp_path, "ListInstances", **pool)
    other_pool = provider(tmp_path, "ListInstances", GARM_POOL_ID="other")
    deleted = provider(tmp_path, "DeleteInstance", GARM_INSTANCE_ID="garm-abc")
    again = provider(tmp_path, "DeleteInstance", GARM_INSTANCE_ID="garm-abc")

    assert json.loads(created.stdout)["status"] == "running"
    assert [i["name"] for i in json.loads(listed.stdout)] == ["garm-abc"]
    assert json.loads(other_pool.stdout) == []
    assert (deleted.returncode, again.returncode) == (0, 30)


def test_real_garm_config_follows_the_minimal_sqlite_layout(tmp_path: Path):
    """Arrange: a RealGarm in a temp dir (no binary needed). Act: render its config.

    Assert: loopback IP bind, 32-character passphrase, absolute db path, external provider with
    an executable script whose shebang is absolute.
    """
    real = RealGarm("/nonexistent/garm", tmp_path, "fake", version="v0.2.1")

    config = tomllib.loads(real.write_config().read_text())

    assert config["apiserver"]["bind"] == "127.0.0.1"
    assert len(config["database"]["passphrase"]) == 32
    assert Path(config["database"]["sqlite3"]["db_file"]).is_absolute()
    provider_entry = config["provider"][0]
    script = Path(provider_entry["external"]["provider_executable"])
    assert (provider_entry["name"], provider_entry["provider_type"]) == ("fake", "external")
    assert os.access(script, os.X_OK)
    assert script.read_text().startswith(f"#!{sys.executable}\n")


@pytest.mark.parametrize(("version", "has_section"), [("v0.2.1", False), ("newer", True)])
def test_real_garm_proxies_point_at_the_loopback_sink(
    tmp_path: Path, version: str, has_section: bool
):
    """Arrange: a RealGarm for one GARM version. Act: render its config and environment.

    Assert: HTTP(S)_PROXY in both spellings name the loopback sink and NO_PROXY covers
    loopback; only the newer GARM gets a `[proxy]` section (v0.2.1 has none).
    """
    real = RealGarm("/nonexistent/garm", tmp_path, "fake", version=version)

    config = tomllib.loads(real.write_config().read_text())
    env = real.environment()

    assert ("proxy" in config) is has_section
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert env[key] == real.proxy_url
    assert real.proxy_url.startswith("http://127.0.0.1:")
    assert {"127.0.0.1", "localhost"} <= set(env["NO_PROXY"].split(","))
    if has_section:
        assert config["proxy"]["https_proxy"] == real.proxy_url


def test_proxy_sink_refuses_and_records():
    """Arrange: the proxy sink. Act: a proxied http GET and an https CONNECT through it.

    Assert: 502 and 403 (nothing forwarded), both requests recorded with their targets.
    """
    with ProxySink() as sink:
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"http": sink.url, "https": sink.url})
        )
        answers: list[int | str] = []
        for url in ("http://example.invalid/x", "https://api.github.com/rate_limit"):
            try:
                opener.open(url, timeout=5)
            except urllib.error.HTTPError as error:
                answers.append(error.code)
            except urllib.error.URLError as error:
                answers.append(str(error.reason))

    assert answers[0] == 502
    assert "403" in str(answers[1])
    assert [(r.method, r.target) for r in sink.requests] == [
        ("GET", "http://example.invalid/x"),
        ("CONNECT", "api.github.com:443"),
    ]


def test_dns_lookup_lines_are_found():
    """Arrange: GARM log lines with and without resolver errors. Act: dns_lookups.

    Assert: only Go's resolver errors are reported.
    """
    log = "\n".join(
        [
            'level=INFO msg="Loading provider" provider=fake',
            'level=ERROR msg="x" error="dial tcp: lookup api.github.com on 127.0.0.53:53: '
            'no such host"',
            'level=ERROR msg="y" error="lookup api.github.com: i/o timeout"',
            'level=WARN msg="failed to get scale set" error="not found"',
        ]
    )

    assert len(dns_lookups(log)) == 2


def test_only_a_garm_counts_as_serving(github: FakeGitHub):
    """Arrange: a fake GitHub, a proxy sink and a fresh GARM (the simulator) on loopback.

    Act: ask each whether it answers as GARM (what RealGarm waits for at start).

    Assert: only GARM does; another server that took GARM's port does not count.
    """
    with ProxySink() as sink, GarmSim(["fake"]) as garm:
        verdicts = [answers_as_garm(url) for url in (github.url, sink.url, garm.url)]

    assert verdicts == [False, False, True]
