"""reconcile.github.runner_checks against the fake GitHub on loopback (tests/fake_github)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator, Mapping

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from fake_github import FakeGitHub, FakeGitHubConfig
from garm_api import GarmBadRequest, GarmUnreachable
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github.http import Findings, GithubUnavailable, app_jwt
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github_objects import GithubApp
from scaleset_reconciler import BusyRunner
from scaleset_reconciler.needs import entity_key
from unit.walks.finished_jobs import endpoint
from workload.config import ProxyConfig

REPO = "fake-org/fake-repo"
APP_ID = 4242
NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    """An RSA key of the size GitHub issues for Apps."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def app(key: rsa.RSAPrivateKey) -> GithubApp:
    """The App a configurator published, with its private key in PEM form."""
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return GithubApp(app_id=APP_ID, installation_id=7, private_key_pem=pem)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """The fake GitHub, requiring JWTs of our App."""
    with FakeGitHub(config=FakeGitHubConfig(app_id=APP_ID)) as fake:
        yield fake


def check(api_base_url: str, app: GithubApp, proxy: ProxyConfig | None = None) -> RunnerCheck:
    """The charm's check, as the App of the repository, GARM's endpoint at `api_base_url`."""
    return RunnerCheck(
        lambda: GithubEndpoint("github.com", "", "", api_base_url, "", b""),
        {entity_key(EntityKind.REPOSITORY, REPO): app},
        proxy or ProxyConfig(),
        clock=lambda: NOW,
    )


def busy(github: FakeGitHub, name: str, entity: str = REPO) -> BusyRunner:
    """A runner GitHub issued a JIT config for and that runs a job, as GARM shows it."""
    with github.lock:
        agent_id = github.new_id()
        github.runners[agent_id] = {"id": agent_id, "name": name, "runnerScaleSetId": 1}
    github.start_job(1, name)
    return BusyRunner(name, agent_id, EntityKind.REPOSITORY, entity)


def test_a_runner_whose_job_ended_is_named_one_still_running_is_not(
    github: FakeGitHub, app: GithubApp
):
    """Arrange: two busy runners; GitHub ends one's job (the ephemeral runner leaves the list).

    Act: ask. Assert: only the finished one is named; one token, the list probe, one GET each.
    """
    done, running = busy(github, "garm-done"), busy(github, "garm-running")
    github.finish_job("garm-done")

    finished = check(f"{github.url}/api/v3/", app)([done, running])

    assert finished == {"garm-done"}
    paths = [(method, path.split("?")[0], status) for method, path, status in github.calls]
    assert paths == [
        ("POST", "/api/v3/app/installations/7/access_tokens", 201),
        ("GET", f"/api/v3/repos/{REPO}/actions/runners", 200),
        ("GET", f"/api/v3/repos/{REPO}/actions/runners/{done.agent_id}", 404),
        ("GET", f"/api/v3/repos/{REPO}/actions/runners/{running.agent_id}", 200),
    ]


def test_a_repository_the_installation_cannot_see_names_nothing(app: GithubApp):
    """Arrange: GitHub answers 404 for everything under the repository (no access).

    Act: ask about a runner GitHub does not list. Assert: nothing named (a 404 is no evidence
    when the runner list itself is not readable).
    """
    hidden = FakeGitHubConfig(app_id=APP_ID, hidden=frozenset({f"repos/{REPO}"}))
    with FakeGitHub(config=hidden) as github:
        gone = BusyRunner("garm-gone", 999, EntityKind.REPOSITORY, REPO)

        assert check(f"{github.url}/api/v3/", app)([gone]) == frozenset()


def test_unreachable_github_names_nothing_and_logs_why(
    app: GithubApp, caplog: pytest.LogCaptureFixture
):
    """Arrange: nothing listens at GARM's endpoint. Act: ask.

    Assert: nothing named, no exception, a warning naming the entity and no secret.
    """
    with FakeGitHub() as github:
        dead = github.url
    caplog.set_level(logging.INFO)

    finished = check(f"{dead}/api/v3/", app)(
        [BusyRunner("garm-x", 5, EntityKind.REPOSITORY, REPO)]
    )

    assert finished == frozenset()
    assert f"GitHub runners of {REPO}: no answer" in caplog.text
    assert "PRIVATE KEY" not in caplog.text


def test_a_refused_token_names_nothing(github: FakeGitHub, key: rsa.RSAPrivateKey):
    """Arrange: a JWT of another App (GitHub answers 401). Act: ask about a finished runner.

    Assert: nothing named; no runner was looked up.
    """
    runner = busy(github, "garm-done")
    github.finish_job("garm-done")
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    other = GithubApp(app_id=1, installation_id=7, private_key_pem=pem)

    assert check(f"{github.url}/api/v3/", other)([runner]) == frozenset()
    assert [status for _, _, status in github.calls] == [401]


def test_an_entity_without_an_app_is_not_asked_about(github: FakeGitHub, app: GithubApp):
    """Arrange: a busy runner of an organization no configurator gave an App for.

    Act: ask. Assert: nothing named, GitHub not called.
    """
    runner = BusyRunner("garm-org", 5, EntityKind.ORGANIZATION, "other-org")

    assert check(f"{github.url}/api/v3/", app)([runner]) == frozenset()
    assert github.calls == []


def test_calls_go_through_the_models_proxy(github: FakeGitHub, app: GithubApp):
    """Arrange: GARM's endpoint names a host that does not resolve; the proxy is the fake.

    Act: ask. Assert: the answer came through the proxy (the host alone is unreachable).
    """
    done = busy(github, "garm-done")
    github.finish_job("garm-done")
    proxy = ProxyConfig(http_proxy=github.url, https_proxy=github.url)

    finished = check("http://github.invalid/api/v3", app, proxy)([done])

    assert finished == {"garm-done"}
    assert all(path.startswith("http://github.invalid/") for _, path, _ in github.calls)


def test_no_proxy_covers_the_endpoint(github: FakeGitHub, app: GithubApp):
    """Arrange: a proxy that does not answer, and NO_PROXY naming the endpoint's host.

    Act: ask. Assert: GitHub was reached directly.
    """
    done = busy(github, "garm-done")
    github.finish_job("garm-done")
    proxy = ProxyConfig(http_proxy="http://127.0.0.2:9", no_proxy="127.0.0.1")

    assert check(f"{github.url}/api/v3", app, proxy)([done]) == {"garm-done"}


def test_the_app_jwt_is_rs256_signed_by_the_apps_key_and_short_lived(
    app: GithubApp, key: rsa.RSAPrivateKey
):
    """Arrange: the App. Act: make its JWT.

    Assert: RS256, verifies with the public key, `iss` is the App id, issued a minute back,
    expiring within GitHub's 10 minutes.
    """
    token = app_jwt(app, NOW)

    header, claims, signature = token.split(".")
    decode = lambda part: base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))  # noqa: E731
    assert json.loads(decode(header)) == {"alg": "RS256", "typ": "JWT"}
    body = json.loads(decode(claims))
    assert body == {"iat": int(NOW) - 60, "exp": int(NOW) + 480, "iss": str(APP_ID)}
    key.public_key().verify(
        decode(signature), f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256()
    )


def test_a_key_that_is_not_pem_names_nothing(github: FakeGitHub):
    """Arrange: an App whose private key is not PEM. Act: ask about a finished runner.

    Assert: nothing named, GitHub not called.
    """
    done = busy(github, "garm-done")
    github.finish_job("garm-done")
    broken = GithubApp(app_id=APP_ID, installation_id=7, private_key_pem=b"not a key")

    assert check(f"{github.url}/api/v3/", broken)([done]) == frozenset()
    assert github.calls == []


def test_garm_refusing_its_endpoints_names_nothing_and_an_outage_propagates(app: GithubApp):
    """Arrange: GARM refuses the endpoint list, then does not answer. Act: ask each time.

    Assert: a refusal names nothing; an outage is not swallowed (the pass stops on it).
    """
    runner = BusyRunner("garm-x", 5, EntityKind.REPOSITORY, REPO)
    apps = {entity_key(EntityKind.REPOSITORY, REPO): app}

    def refused() -> GithubEndpoint:
        raise GarmBadRequest("list github endpoints", 400, "bad request", "")

    def outage() -> GithubEndpoint:
        raise GarmUnreachable("list github endpoints", "connection refused")

    assert RunnerCheck(refused, apps, ProxyConfig())([runner]) == frozenset()
    with pytest.raises(GarmUnreachable):
        RunnerCheck(outage, apps, ProxyConfig())([runner])


# --- Found by the coverage floors (hand-made mutants): where nothing may be asked ---
# (was test_runner_checks_edges.py)
# The GitHub "did the job end" check where nothing may be asked, or asking would be a bug.
#
# No endpoint to ask, a GitHub App key GitHub would refuse, a bug in the worker thread, and an
# answer that lands after the pass's budget: none of them may name a runner (a named runner is
# force-removed), and a bug must fail the hook rather than pass for "GitHub did not answer".
# None of these reaches the network: each stops before a GitHub call.


# A closed loopback port: a check that did ask would get no answer, never a 404.
NOWHERE = "http://127.0.0.1:9/"
RUNNER = BusyRunner("garm-1", 1, EntityKind.REPOSITORY, REPO)


def ec_app() -> GithubApp:
    """A GitHub App whose key is an EC key (GitHub Apps sign with RSA keys only)."""
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return GithubApp(app_id=1, installation_id=7, private_key_pem=pem)


@pytest.mark.parametrize("base_url", ["", None])
def test_no_github_endpoint_in_garm_names_no_runner(
    base_url: str | None, caplog: pytest.LogCaptureFixture
):
    """Arrange: GARM has no `github.com` endpoint, or one without an API base URL.

    Act: ask about a busy runner. Assert: no runner named; the log says there is no endpoint.
    """
    check = RunnerCheck(
        lambda: None if base_url is None else endpoint(base_url),
        {entity_key(EntityKind.REPOSITORY, REPO): ec_app()},
        ProxyConfig(),
    )

    with caplog.at_level(logging.WARNING):
        finished = check([RUNNER])

    assert finished == frozenset()
    assert "GARM has no github.com endpoint to ask" in caplog.text


def test_an_app_key_that_is_not_rsa_is_github_unavailable_and_names_no_runner(
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: the entity's GitHub App has an EC key. Act: sign its JWT; ask about a runner.

    Assert: signing raises GithubUnavailable saying the key is not RSA (not a crash in the
    signing library); the check names no runner and logs why.
    """
    app = ec_app()
    check = RunnerCheck(
        lambda: endpoint(NOWHERE), {entity_key(EntityKind.REPOSITORY, REPO): app}, ProxyConfig()
    )

    with pytest.raises(GithubUnavailable, match="not an RSA key"):
        app_jwt(app, 1_700_000_000)
    with caplog.at_level(logging.WARNING):
        finished = check([RUNNER])

    assert finished == frozenset()
    assert "not an RSA key" in caplog.text


class _BrokenApps(Mapping[tuple[EntityKind, str], GithubApp]):
    """An App table whose look-up fails: a bug in the charm, not an answer of GitHub."""

    def __getitem__(self, key: tuple[EntityKind, str]) -> GithubApp:
        raise RuntimeError("bug in the App table")

    def __iter__(self) -> Iterator[tuple[EntityKind, str]]:
        return iter(())

    def __len__(self) -> int:
        return 1


def test_a_bug_in_the_worker_fails_the_hook_instead_of_naming_nothing():
    """Arrange: an App table that raises RuntimeError when read (in the worker thread).

    Act: ask about a busy runner. Assert: the RuntimeError reaches the caller.
    """
    check = RunnerCheck(lambda: endpoint(NOWHERE), _BrokenApps(), ProxyConfig())

    with pytest.raises(RuntimeError, match="bug in the App table"):
        check([RUNNER])


def test_an_answer_after_the_budget_is_not_recorded():
    """Arrange: a pass's record, closed at the budget's end with one runner confirmed.

    Act: GitHub's answer about a second runner arrives after the close.
    Assert: the record still holds the first runner alone; no further call may start.
    """
    progress = Findings[str](float("inf"), "cut short")
    progress.add("garm-1")
    closed = progress.finish()

    progress.add("garm-2")

    assert closed == frozenset({"garm-1"})
    assert progress.finish() == frozenset({"garm-1"})
    with pytest.raises(GithubUnavailable, match="budget"):
        progress.remaining()
