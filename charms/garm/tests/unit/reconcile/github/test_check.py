"""What the three GitHub checks share (`reconcile.github.check`), seen through each of them.

The checks' own tests (test_runner_checks*.py, test_github_scalesets.py,
test_offline_runners.py) ask the fake GitHub; these cases stop before any call: GARM's endpoint
is not one a check can ask with, or the entity has no App.
"""

from __future__ import annotations

import logging

import pytest

from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github.offline_runners import IdleRunner, OfflineCheck, Sighting
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github.scalesets import ScaleSetCheck
from reconcile.github_objects import GithubApp
from scaleset_reconciler import BusyRunner, GithubScaleSetRef
from scaleset_reconciler.needs import entity_key
from workload.config import ProxyConfig

REPO = "fake-org/fake-repo"
# A closed loopback port: a check that did ask would get no answer.
NOWHERE = "http://127.0.0.1:9/"
APP = GithubApp(app_id=1, installation_id=7, private_key_pem=b"not asked with")


def no_web_url() -> GithubEndpoint:
    """GARM's github.com endpoint with an API URL but no web URL."""
    return GithubEndpoint("github.com", "", "", NOWHERE, "", b"")


def test_the_scale_set_check_needs_the_endpoints_web_url(caplog: pytest.LogCaptureFixture):
    """Arrange: GARM's endpoint has an API URL but no web URL (the Actions service needs it).

    Act: the scale-set check asks about a repository's scale set.
    Assert: it names nothing and says GARM has no endpoint to ask, asking nothing.
    """
    check = ScaleSetCheck(
        no_web_url, {entity_key(EntityKind.REPOSITORY, REPO): APP}, ProxyConfig()
    )
    ref = GithubScaleSetRef(1, "small-aaaa", 77, "", EntityKind.REPOSITORY, REPO)

    with caplog.at_level(logging.INFO):
        missing = check([ref])

    assert missing == frozenset()
    assert "GitHub scale sets: GARM has no github.com endpoint to ask" in caplog.text
    assert "not asked" not in caplog.text


def endpoint() -> GithubEndpoint:
    """GARM's github.com endpoint, every URL pointing nowhere."""
    return GithubEndpoint("github.com", "", NOWHERE, NOWHERE, NOWHERE, b"")


def ask_without_app(kind: str) -> tuple[object, object, str]:
    """Ask one check (by kind) about a repository it has no App for: answer, empty, words."""
    if kind == "runner":
        busy = BusyRunner("garm-1", 1, EntityKind.REPOSITORY, REPO)
        check = RunnerCheck(endpoint, {}, ProxyConfig())
        return check([busy]), frozenset(), f"{check.LABEL}: no GitHub App for {REPO}; GARM removes"
    if kind == "scaleset":
        ref = GithubScaleSetRef(1, "small-aaaa", 77, "", EntityKind.REPOSITORY, REPO)
        check = ScaleSetCheck(endpoint, {}, ProxyConfig())
        return check([ref]), frozenset(), f"{check.LABEL}: no GitHub App for {REPO}; not asked"
    idle = IdleRunner("garm-2", 2, EntityKind.REPOSITORY, REPO, "small", "conf")
    check = OfflineCheck(endpoint, {}, ProxyConfig())
    return check([idle]), Sighting(), f"{check.LABEL}: no GitHub App for {REPO}; not asked"


@pytest.mark.parametrize("kind", ["runner", "scaleset", "offline"])
def test_an_entity_without_an_app_is_not_asked(kind: str, caplog: pytest.LogCaptureFixture):
    """Arrange: a check (each of the three) with no GitHub App for the repository.

    Act: ask about one of its items.
    Assert: nothing named; the log names the entity and what becomes of its items.
    """
    with caplog.at_level(logging.INFO):
        answer, empty, logged = ask_without_app(kind)

    assert answer == empty
    assert logged in caplog.text
