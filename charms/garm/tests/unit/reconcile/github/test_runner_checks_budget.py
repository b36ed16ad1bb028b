"""The GitHub "did the job end" check spends at most one time budget per pass (issue #20).

A read timeout bounds one read: a GitHub (or a proxy) that drips its answer a byte at a time
stays within it forever. These run the charm's check against the fake GitHub dripping its
bodies: the pass ends at the budget, the runners GitHub confirmed by then are named, and the
others are unknown: never named, so never removed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from doubles.memory_garm import MemoryGarm
from fake_github import FakeGitHub, FakeGitHubConfig
from garm_api.models import EntityKind
from reconcile.github.check import BUDGET_SECONDS
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github_objects import GithubApp
from scaleset_reconciler import BusyRunner, Phase
from scaleset_reconciler.needs import entity_key
from unit.walks.finished_jobs import drain, drain_with_jobs, endpoint, removals
from workload.config import ProxyConfig

REPO = "fake-org/fake-repo"
APP_ID = 4242
# 20 bytes a second: every read gets a byte well within the 10 s read timeout.
DRIP = 0.05
BUDGET = 1.0
# The budget, and time for a loaded test machine to return from it; far below a dripped pass.
LATE = BUDGET + 2.0


@pytest.fixture(scope="module")
def app() -> GithubApp:
    """The configurator's GitHub App, with an RSA key as GitHub issues."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return GithubApp(app_id=APP_ID, installation_id=7, private_key_pem=pem)


@pytest.fixture
def dripping() -> Iterator[FakeGitHub]:
    """A GitHub that drips every answer's body."""
    with FakeGitHub(config=FakeGitHubConfig(app_id=APP_ID, drip_seconds=DRIP)) as github:
        yield github


def check(github: FakeGitHub, app: GithubApp, budget: float = BUDGET) -> RunnerCheck:
    """The charm's check as the repository's App, with `budget` seconds for the pass."""
    return RunnerCheck(
        lambda: endpoint(f"{github.url}/api/v3/"),
        {entity_key(EntityKind.REPOSITORY, REPO): app},
        ProxyConfig(),
        budget_seconds=budget,
    )


def gone(agent_id: int) -> BusyRunner:
    """A busy runner (as GARM shows it) that GitHub no longer lists: its job ended."""
    return BusyRunner(f"garm-{agent_id}", agent_id, EntityKind.REPOSITORY, REPO)


def test_the_default_budget_is_under_the_default_reconcile_interval():
    """Arrange: the default budget. Act: compare. Assert: a pass ends before the next tick."""
    assert 0 < BUDGET_SECONDS < 60


def test_a_dripping_github_holds_the_pass_no_longer_than_the_budget(
    dripping: FakeGitHub, app: GithubApp, caplog: pytest.LogCaptureFixture
):
    """Arrange: GitHub drips its answers; three busy runners whose jobs ended.

    Act: ask, with a 1 s budget.
    Assert: the answer comes within the budget (plus slack), names no runner (none confirmed),
    and a warning says the budget was spent.
    """
    caplog.set_level(logging.INFO)
    started = time.monotonic()

    finished = check(dripping, app)([gone(101), gone(102), gone(103)])

    assert time.monotonic() - started < LATE
    assert finished == frozenset()
    assert "within the pass's time budget" in caplog.text


def test_runners_confirmed_before_the_budget_are_named_the_rest_are_unknown(app: GithubApp):
    """Arrange: GitHub answers at once, except about one runner, whose answer drips.

    Act: ask about three finished runners, the dripping one second, with a 1 s budget.
    Assert: within the budget; the first is named; the dripping one and the one after it
    (never asked) are not.
    """
    config = FakeGitHubConfig(app_id=APP_ID, drip_seconds=DRIP, drip_paths=frozenset({"/202"}))
    with FakeGitHub(config=config) as github:
        started = time.monotonic()

        finished = check(github, app)([gone(201), gone(202), gone(203)])

        elapsed = time.monotonic() - started
        asked = [path for _, path, _ in github.calls]
    assert elapsed < LATE
    assert finished == {"garm-201"}
    assert not any(path.endswith("/203") for path in asked)


def test_a_spent_budget_asks_github_nothing(dripping: FakeGitHub, app: GithubApp):
    """Arrange: a budget already spent (0 s). Act: ask.

    Assert: nothing named; no call reached GitHub, not even after the answer (the worker left
    behind starts none).
    """
    finished = check(dripping, app, budget=0.0)([gone(301)])
    time.sleep(0.5)

    assert finished == frozenset()
    assert dripping.calls == []


def test_a_retired_sets_runner_is_kept_when_github_drips(dripping: FakeGitHub, app: GithubApp):
    """Arrange: a retired set's runner whose job ended; GARM has not noticed; GitHub drips.

    Act: a reconcile pass with the charm's check (1 s budget).
    Assert: the pass ends within the budget; no runner removed; the set keeps draining and the
    report has no error (GARM's consolidation or the drain deadline removes it in time).
    """
    garm = MemoryGarm()
    old, _, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)
    started = time.monotonic()

    report = drain(garm, check(dripping, app))

    assert time.monotonic() - started < LATE
    assert removals(garm) == []
    assert old in garm.names()
    assert report.spec("small").phase is Phase.DRAINING
    assert report.all_errors() == []


def test_without_the_drip_the_same_runner_is_removed(app: GithubApp):
    """Arrange: as above, but GitHub answers at once. Act: the same pass.

    Assert: the runner is removed (the kept runner above was kept by the budget alone).
    """
    garm = MemoryGarm()
    _, _, (job,) = drain_with_jobs(garm)
    garm.finish_job(job)

    with FakeGitHub(config=FakeGitHubConfig(app_id=APP_ID)) as github:
        drain(garm, check(github, app))

    assert removals(garm) == [job]
