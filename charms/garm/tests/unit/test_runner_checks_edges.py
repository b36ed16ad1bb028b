"""The GitHub "did the job end" check where nothing may be asked, or asking would be a bug.

No endpoint to ask, a GitHub App key GitHub would refuse, a bug in the worker thread, and an
answer that lands after the pass's budget: none of them may name a runner (a named runner is
force-removed), and a bug must fail the hook rather than pass for "GitHub did not answer".
None of these reaches the network: each stops before a GitHub call.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from test_scaleset_finished_jobs import endpoint

from garm_api.models import EntityKind
from reconcile.github.http import Findings, GithubUnavailable, app_jwt
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github_objects import GithubApp
from scaleset_reconciler import BusyRunner
from scaleset_reconciler.needs import entity_key
from workload.config import ProxyConfig

REPO = "fake-org/fake-repo"
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
