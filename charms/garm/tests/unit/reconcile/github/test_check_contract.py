"""The GitHub check (reconcile.github.runner_checks) against the fake GitHub over real HTTP(S).

The evidence rule (ADR 0015): a runner is named as finished, and so removed by the charm, only
when GitHub answered 200 for the entity's runner list and then 404 for the runner. Every other
answer (a server error, a redirect, a refusal, `410 Gone`, a timeout, a body that never comes,
a certificate the endpoint's CA bundle does not sign) names nothing: GARM or the drain deadline
removes the runner instead. Each case also asks once without the fault, so the fault alone
tells the two outcomes apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from doubles.tls_publication import Issuer, localhost_server_context
from fake_github import FakeGitHub, FakeGitHubConfig, Fault
from fake_github.proxy_sink import ProxySink
from fake_github.tunnel_proxy import TunnelProxy
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github import http as github_http
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github_objects import GithubApp
from scaleset_reconciler import BusyRunner
from scaleset_reconciler.needs import entity_key
from workload.config import ProxyConfig

REPO = "Fake-Org/Fake.Repo"
APP_ID = 4242
INSTALLATION = 7
NOW = 1_800_000_000.0
TOKEN_PATH = rf"/api/v3/app/installations/{INSTALLATION}/access_tokens"
LIST_PATH = r"/api/v3/repos/Fake-Org/Fake\.Repo/actions/runners"
RUNNER_PATH = r"/api/v3/repos/Fake-Org/Fake\.Repo/actions/runners/\d+"
# Short enough that a held answer costs the suite little, long enough for a loopback answer.
READ_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def app() -> GithubApp:
    """The App a configurator published (a 2048-bit RSA key, PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return GithubApp(app_id=APP_ID, installation_id=INSTALLATION, private_key_pem=pem)


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    """The CA of the GitHub Enterprise Server."""
    return Issuer()


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """GitHub over plain HTTP, requiring JWTs of our App."""
    with FakeGitHub(config=FakeGitHubConfig(app_id=APP_ID)) as fake:
        yield fake


@pytest.fixture
def ghes(issuer: Issuer, tmp_path: Path) -> Iterator[FakeGitHub]:
    """A GitHub Enterprise Server over HTTPS on `localhost`, its certificate signed by `issuer`."""
    context = localhost_server_context(issuer, tmp_path / "ghes")
    with FakeGitHub(config=FakeGitHubConfig(app_id=APP_ID), tls=context) as fake:
        yield fake


@pytest.fixture(autouse=True)
def _short_read_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A held answer times out in half a second (the charm waits longer)."""
    monkeypatch.setattr(github_http, "READ_TIMEOUT_SECONDS", READ_TIMEOUT)


def ask(
    github: FakeGitHub,
    app: GithubApp,
    runners: list[BusyRunner],
    *,
    ca_bundle: bytes = b"",
    proxy: ProxyConfig | None = None,
) -> frozenset[str]:
    """Run the charm's check with GARM's `github.com` endpoint at the fake's API base URL."""
    endpoint = GithubEndpoint("github.com", "", "", f"{github.url}/api/v3/", "", ca_bundle)
    check = RunnerCheck(
        lambda: endpoint,
        {entity_key(EntityKind.REPOSITORY, REPO): app},
        proxy or ProxyConfig(),
        clock=lambda: NOW,
    )
    return check(runners)


def finished_runner(github: FakeGitHub, name: str = "garm-done") -> BusyRunner:
    """A runner GARM shows busy whose job GitHub ended (GitHub no longer lists it)."""
    runner = running_runner(github, name)
    github.finish_job(name)
    return runner


def running_runner(github: FakeGitHub, name: str = "garm-running") -> BusyRunner:
    """A runner GARM shows busy and GitHub lists with a job running."""
    with github.lock:
        agent_id = github.new_id()
        github.runners[agent_id] = {"id": agent_id, "name": name, "runnerScaleSetId": 1}
    github.start_job(1, name)
    return BusyRunner(name, agent_id, EntityKind.REPOSITORY, REPO)


def test_a_runner_listed_then_gone_is_named_only_once_gone(github: FakeGitHub, app: GithubApp):
    """Arrange: a busy runner GitHub lists. Act: ask; GitHub ends the job; ask again.

    Assert: the first pass names nothing (200 for the runner); the second names it (200 for the
    list, then 404 for the runner).
    """
    runner = running_runner(github)

    before = ask(github, app, [runner])
    github.finish_job(runner.name)
    after = ask(github, app, [runner])

    assert before == frozenset()
    assert after == {runner.name}
    runner_calls = [
        status for _, path, status in github.calls if path.endswith(f"/{runner.agent_id}")
    ]
    assert runner_calls == [200, 404]


def test_only_the_runners_github_dropped_are_named(github: FakeGitHub, app: GithubApp):
    """Arrange: three busy runners of one repository; GitHub ended two jobs.

    Act: ask once. Assert: exactly the two are named.
    """
    done_a, running, done_b = (
        finished_runner(github, "garm-a"),
        running_runner(github, "garm-b"),
        finished_runner(github, "garm-c"),
    )

    assert ask(github, app, [done_a, running, done_b]) == {"garm-a", "garm-c"}


NO_EVIDENCE = (
    [
        pytest.param(Fault("GET", RUNNER_PATH, status, {"message": "x"}), id=f"runner-{status}")
        for status in (400, 401, 403, 409, 410, 422, 429, 500, 502, 503, 504)
    ]
    + [
        pytest.param(
            Fault("GET", RUNNER_PATH, status, headers=(("Location", "/api/v3/gone"),)),
            id=f"runner-redirect-{status}",
        )
        for status in (301, 302, 303, 307, 308)
    ]
    + [
        pytest.param(Fault("GET", RUNNER_PATH, 204), id="runner-204"),
        pytest.param(
            Fault("GET", RUNNER_PATH, 404, delay_seconds=4 * READ_TIMEOUT), id="runner-404-late"
        ),
        pytest.param(
            Fault(
                "GET", RUNNER_PATH, 404, {"message": "Not Found"}, stall_seconds=4 * READ_TIMEOUT
            ),
            id="runner-404-body-stalls",
        ),
    ]
    + [
        pytest.param(Fault("GET", LIST_PATH, status, {"message": "x"}), id=f"list-{status}")
        for status in (401, 403, 404, 410, 500, 503)
    ]
    + [
        pytest.param(
            Fault("GET", LIST_PATH, 302, headers=(("Location", "/api/v3/elsewhere"),)),
            id="list-redirect",
        ),
        pytest.param(Fault("GET", LIST_PATH, 200, delay_seconds=4 * READ_TIMEOUT), id="list-late"),
    ]
    + [
        pytest.param(Fault("POST", TOKEN_PATH, status, {"message": "x"}), id=f"token-{status}")
        for status in (200, 301, 401, 403, 404, 500)
    ]
    + [
        pytest.param(Fault("POST", TOKEN_PATH, 201, {"token": ""}), id="token-empty"),
        pytest.param(Fault("POST", TOKEN_PATH, 201, {"expires_at": "x"}), id="token-missing"),
        pytest.param(
            Fault("POST", TOKEN_PATH, 201, ["not", "an", "object"]), id="token-not-object"
        ),
        pytest.param(
            Fault("POST", TOKEN_PATH, 201, delay_seconds=4 * READ_TIMEOUT), id="token-late"
        ),
    ]
)


@pytest.mark.parametrize("fault", NO_EVIDENCE)
def test_any_answer_but_the_evidence_names_nothing(
    github: FakeGitHub, app: GithubApp, fault: Fault
):
    """Arrange: a runner whose job ended; GitHub answers one call with `fault`.

    Act: ask with the fault, then without it. Assert: nothing named with the fault, the runner
    named without it; a redirect is never followed.
    """
    runner = finished_runner(github)
    github.faults.append(fault)

    with_fault = ask(github, app, [runner])
    github.faults.clear()
    without_fault = ask(github, app, [runner])

    assert with_fault == frozenset()
    assert without_fault == {runner.name}
    assert not any(
        path.startswith(("/api/v3/gone", "/api/v3/elsewhere")) for _, path, _ in github.calls
    )


def test_one_entitys_refusal_does_not_stop_evidence_for_another(
    github: FakeGitHub, app: GithubApp
):
    """Arrange: finished runners of two repositories with one App; GitHub answers 500 for one.

    Act: ask. Assert: only the other repository's runner is named.
    """
    ours = finished_runner(github, "garm-ours")
    other = BusyRunner("garm-other", ours.agent_id, EntityKind.REPOSITORY, "fake-org/broken")
    github.faults.append(Fault("GET", r"/api/v3/repos/fake-org/broken/.*", 500))
    endpoint = GithubEndpoint("github.com", "", "", f"{github.url}/api/v3", "", b"")
    apps = {
        entity_key(EntityKind.REPOSITORY, REPO): app,
        entity_key(EntityKind.REPOSITORY, "fake-org/broken"): app,
    }

    finished = RunnerCheck(lambda: endpoint, apps, ProxyConfig(), clock=lambda: NOW)([other, ours])

    assert finished == {"garm-ours"}


def test_ghes_with_its_ca_bundle_gives_evidence(ghes: FakeGitHub, app: GithubApp, issuer: Issuer):
    """Arrange: a GHES endpoint over HTTPS carrying its CA bundle; a runner whose job ended.

    Act: ask. Assert: the runner is named (the bundle is what verified the server).
    """
    runner = finished_runner(ghes)

    assert ask(ghes, app, [runner], ca_bundle=issuer.ca_pem.encode()) == {runner.name}


@pytest.mark.parametrize("bundle", ["none", "another-ca"])
def test_ghes_whose_certificate_the_bundle_does_not_sign_names_nothing(
    ghes: FakeGitHub, app: GithubApp, bundle: str
):
    """Arrange: a GHES endpoint with no CA bundle, or another CA's; a runner whose job ended.

    Act: ask. Assert: nothing named; GitHub served no request (the handshake failed).
    """
    runner = finished_runner(ghes)
    ca = b"" if bundle == "none" else Issuer().ca_pem.encode()

    assert ask(ghes, app, [runner], ca_bundle=ca) == frozenset()
    assert ghes.calls == []


def test_ghes_through_the_models_proxy_keeps_its_ca_bundle(
    ghes: FakeGitHub, app: GithubApp, issuer: Issuer
):
    """Arrange: the model's HTTPS proxy (a CONNECT tunnel); a GHES runner whose job ended.

    Act: ask with the endpoint's bundle, then with another CA's. Assert: named through the
    tunnel with the bundle; nothing named with the wrong one (TLS is checked end to end).
    """
    runner = finished_runner(ghes)
    with TunnelProxy() as proxy:
        model_proxy = ProxyConfig(https_proxy=proxy.url)

        trusted = ask(ghes, app, [runner], ca_bundle=issuer.ca_pem.encode(), proxy=model_proxy)
        other = ask(ghes, app, [runner], ca_bundle=Issuer().ca_pem.encode(), proxy=model_proxy)

        assert trusted == {runner.name}
        assert other == frozenset()
        assert set(proxy.tunnels) == {f"localhost:{ghes.port}"}


def test_a_proxy_that_refuses_names_nothing(ghes: FakeGitHub, app: GithubApp, issuer: Issuer):
    """Arrange: the model's proxy refuses every CONNECT (403); a GHES runner whose job ended.

    Act: ask. Assert: nothing named, the proxy was asked, GitHub never reached.
    """
    runner = finished_runner(ghes)
    with ProxySink() as sink:
        proxy = ProxyConfig(http_proxy=sink.url, https_proxy=sink.url)

        finished = ask(ghes, app, [runner], ca_bundle=issuer.ca_pem.encode(), proxy=proxy)

        assert finished == frozenset()
        assert [request.method for request in sink.requests] == ["CONNECT"]
    assert ghes.calls == []


def test_the_hooks_own_proxy_variables_are_not_used(
    ghes: FakeGitHub, app: GithubApp, issuer: Issuer, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: the hook's HTTP(S)_PROXY name a refusing proxy; the model has none.

    Act: ask about a GHES runner whose job ended. Assert: named, and the refusing proxy saw
    nothing (only the model's proxy applies).
    """
    runner = finished_runner(ghes)
    with ProxySink() as sink:
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, sink.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)

        finished = ask(ghes, app, [runner], ca_bundle=issuer.ca_pem.encode())

        assert finished == {runner.name}
        assert sink.requests == []


def test_no_proxy_for_other_hosts_still_sends_through_the_proxy(
    ghes: FakeGitHub, app: GithubApp, issuer: Issuer
):
    """Arrange: the model's proxy, NO_PROXY naming other hosts; a GHES runner whose job ended.

    Act: ask. Assert: named, through the proxy's tunnel (NO_PROXY is read for this endpoint).
    """
    runner = finished_runner(ghes)
    with TunnelProxy() as proxy:
        model_proxy = ProxyConfig(https_proxy=proxy.url, no_proxy="example.com,10.0.0.0/8")

        finished = ask(ghes, app, [runner], ca_bundle=issuer.ca_pem.encode(), proxy=model_proxy)

        assert finished == {runner.name}
        assert set(proxy.tunnels) == {f"localhost:{ghes.port}"}
