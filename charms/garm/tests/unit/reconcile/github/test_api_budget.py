"""The charm's GitHub calls keep a reserve of the installation's quota for GARM (ADR 0039).

Against the fake GitHub on loopback, which spends one of the caller's REST quota per call and
answers every REST call with GitHub's `X-RateLimit-*` headers (tests/fake_github): the runner
check (ADR 0015) and the scale-set check (ADR 0029) stop before the quota left falls below the
reserve, name nothing then, and say which checks they skipped.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fake_github import FakeGitHub, FakeGitHubConfig
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github.http import RESERVE_FRACTION, Quotas, RateLimit
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github.scalesets import ScaleSetCheck
from reconcile.github_objects import GithubApp
from scaleset_reconciler import BusyRunner, GithubScaleSetRef
from scaleset_reconciler.needs import entity_key
from workload.config import ProxyConfig

REPO = "fake-org/fake-repo"
APP_ID = 4242
INSTALLATION = 7
OWNER = f"installation-{INSTALLATION}"
LIMIT = 100
RESERVE = int(LIMIT * RESERVE_FRACTION)


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


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """The fake GitHub: 100 REST requests an hour per installation."""
    with FakeGitHub(config=FakeGitHubConfig(app_id=APP_ID, rate_limit=LIMIT)) as fake:
        yield fake


def endpoint(github: FakeGitHub) -> GithubEndpoint:
    """GARM's `github.com` endpoint, pointing at the fake."""
    return GithubEndpoint("github.com", "", github.url, f"{github.url}/api/v3/", "", b"")


def runner_check(github: FakeGitHub, app: GithubApp, quotas: Quotas) -> RunnerCheck:
    """The charm's runner check as the repository's App."""
    apps = {entity_key(EntityKind.REPOSITORY, REPO): app}
    return RunnerCheck(lambda: endpoint(github), apps, ProxyConfig(), quotas=quotas)


def scaleset_check(github: FakeGitHub, app: GithubApp, quotas: Quotas) -> ScaleSetCheck:
    """The charm's scale-set check as the repository's App."""
    apps = {entity_key(EntityKind.REPOSITORY, REPO): app}
    return ScaleSetCheck(lambda: endpoint(github), apps, ProxyConfig(), quotas=quotas)


def finished_runners(github: FakeGitHub, count: int) -> list[BusyRunner]:
    """Runners GARM shows busy whose jobs ended: GitHub lists none of them (a 404 each)."""
    with github.lock:
        ids = [github.new_id() for _ in range(count)]
    return [BusyRunner(f"done-{i}", i, EntityKind.REPOSITORY, REPO) for i in ids]


def dropped_scaleset(github: FakeGitHub) -> GithubScaleSetRef:
    """A scale set GARM has and GitHub dropped (its lookup answers count 0)."""
    with github.lock:
        github_id = github.new_id()
    return GithubScaleSetRef(1, "small-abc", github_id, "", EntityKind.REPOSITORY, REPO)


def rest_calls(github: FakeGitHub) -> list[str]:
    """The REST calls made as the installation (its quota), method and path."""
    return [f"{m} {p.split('?')[0]}" for m, p, _ in github.rate_headers if "/app/" not in p]


def test_with_quota_to_spare_both_checks_ask_and_record_what_github_said(
    github: FakeGitHub, app: GithubApp
):
    """Arrange: a fresh quota; two busy runners whose jobs ended; a scale set GitHub dropped.

    Act: run the runner check, then the scale-set check, sharing one record of quotas.

    Assert: both runners and the scale set are named; the record holds GitHub's last figures
    (limit, remaining after the calls, the window's end) and the reserve, nothing skipped.
    """
    quotas = Quotas()

    finished = runner_check(github, app, quotas)(finished_runners(github, 2))
    missing = scaleset_check(github, app, quotas)([dropped_scaleset(github)])

    assert finished == {"done-1", "done-2"}
    assert missing == {1}
    left = github.rate(OWNER)
    assert left["remaining"] == LIMIT - len(rest_calls(github)) == LIMIT - 4
    assert quotas.known() == {INSTALLATION: RateLimit(LIMIT, left["remaining"], left["reset"])}
    assert quotas.skipped() == {}
    assert quotas.rows()[0]["reserve"] == RESERVE


def test_the_checks_stop_where_the_reserve_for_garm_begins(github: FakeGitHub, app: GithubApp):
    """Arrange: GARM has spent the installation's quota down to the reserve plus 2 requests.

    Act: ask about 5 busy runners whose jobs ended (the list probe and 5 GETs would be 6).

    Assert: 2 REST calls are made (the probe and one runner), then none: the quota left never
    falls below the reserve; the runner GitHub answered for is named, the others are not; the
    check is recorded as skipped.
    """
    github.spend(OWNER, LIMIT - RESERVE - 2)
    quotas = Quotas()

    runners = finished_runners(github, 5)

    finished = runner_check(github, app, quotas)(runners)

    assert rest_calls(github) == [
        f"GET /api/v3/repos/{REPO}/actions/runners",
        f"GET /api/v3/repos/{REPO}/actions/runners/{runners[0].agent_id}",
    ]
    assert github.rate(OWNER)["remaining"] == RESERVE
    assert finished == {runners[0].name}
    assert quotas.skipped() == {INSTALLATION: [f"finished jobs of {REPO}"]}


def test_a_quota_kept_from_the_last_pass_skips_both_checks_without_a_call(
    github: FakeGitHub, app: GithubApp
):
    """Arrange: the kept figures say the reserve is all that is left until the window ends.

    Act: run both checks.

    Assert: GitHub gets no call at all (not even the App's token exchange); nothing is named;
    both checks are recorded as skipped, and survive the stored state's round trip.
    """
    reset = int(time.time()) + 1800
    quotas = Quotas({INSTALLATION: RateLimit(LIMIT, RESERVE, reset)})

    finished = runner_check(github, app, quotas)(finished_runners(github, 1))
    missing = scaleset_check(github, app, quotas)([dropped_scaleset(github)])

    assert github.calls == []
    assert finished == frozenset()
    assert missing == frozenset()
    skipped = [f"finished jobs of {REPO}", f"scale sets of {REPO}"]
    assert quotas.skipped() == {INSTALLATION: skipped}
    assert Quotas.from_json(quotas.to_json()).rows() == quotas.rows()
    assert quotas.rows()[0]["skipped"] == skipped


def test_once_the_window_has_ended_the_checks_ask_again(github: FakeGitHub, app: GithubApp):
    """Arrange: the kept figures say the quota was spent, in a window that has ended.

    Act: run the runner check.

    Assert: it asks GitHub and names the finished runner; the record now holds the new window.
    """
    quotas = Quotas({INSTALLATION: RateLimit(LIMIT, 0, int(time.time()) - 1)})

    finished = runner_check(github, app, quotas)(finished_runners(github, 1))

    assert finished == {"done-1"}
    assert quotas.known()[INSTALLATION].remaining == LIMIT - 2
    assert quotas.skipped() == {}


@pytest.mark.parametrize("text", ["", "not json", '{"7": {"limit": "x"}}', "[1]"])
def test_unreadable_kept_figures_read_as_none_known(text: str):
    """Arrange: an empty or broken stored record. Act: read it. Assert: nothing is known."""
    assert Quotas.from_json(text).known() == {}
