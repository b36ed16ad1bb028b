"""GitHub's view of each live scale set beside GARM's (ADR 0041).

GitHub's side comes from the charm's real scale-set check against the fake GitHub on loopback
(tests/fake_github), whose lookup answers carry the scale set's `statistics` as GitHub's client
declares them; GARM's side from the in-memory GARM's runners.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from doubles.memory_garm import MemoryGarm
from fake_github import FakeGitHub, FakeGitHubConfig
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github.scalesets import ScaleSetCheck
from reconcile.github.view import ScaleSetStats, combine, from_json, to_json
from reconcile.github_objects import GithubApp
from scaleset_reconciler import GithubScaleSetRef
from scaleset_reconciler.needs import entity_key
from unit.walks.scalesets import converge, make_spec
from workload.config import ProxyConfig

REPO = "fake-org/fake-repo"
APP_ID = 4242
T0 = datetime.datetime(2026, 12, 2, 3, 0, tzinfo=datetime.UTC)


@pytest.fixture(scope="module")
def app() -> GithubApp:
    """The App a configurator published (a 2048-bit RSA key, PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
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


def at_github(github: FakeGitHub, runners: int) -> GithubScaleSetRef:
    """A scale set GitHub has, with `runners` JIT runners registered in it."""
    with github.lock:
        github_id = github.new_id()
        github.scale_sets[github_id] = {"id": github_id, "name": "small-abc", "runnerGroupId": 1}
        for index in range(runners):
            agent = github.new_id()
            github.runners[agent] = {
                "id": agent,
                "name": f"garm-{index}",
                "runnerScaleSetId": github_id,
            }
    return GithubScaleSetRef(1, "small-abc", github_id, "", EntityKind.REPOSITORY, REPO)


def check(github: FakeGitHub, app: GithubApp) -> ScaleSetCheck:
    """The charm's scale-set check as the repository's App."""
    endpoint = GithubEndpoint("github.com", "", github.url, f"{github.url}/api/v3/", "", b"")
    apps = {entity_key(EntityKind.REPOSITORY, REPO): app}
    return ScaleSetCheck(lambda: endpoint, apps, ProxyConfig())


def test_the_lookup_gives_githubs_counts_of_jobs_and_runners(github: FakeGitHub, app: GithubApp):
    """Arrange: a scale set at GitHub with 3 runners and 2 jobs waiting for a runner.

    (One runner runs a job, one is offline, one is idle.)

    Act: the scale-set check.

    Assert: its statistics, by GARM's id: 2 jobs waiting, 1 running, 1 runner busy, 1 idle,
    1 neither; the set is not named missing.
    """
    ref = at_github(github, 3)
    github.start_job(ref.github_id, "garm-0")
    github.set_offline("garm-1")
    github.set_waiting_jobs(ref.github_id, 2)
    asked = check(github, app)

    missing = asked([ref])

    stats = asked.statistics[ref.scaleset_id]
    assert missing == frozenset()
    assert (stats.waiting, stats.running) == (2, 1)
    assert (stats.busy, stats.idle, stats.not_ready) == (1, 1, 1)


def test_the_calls_per_check_do_not_grow_with_the_runners(github: FakeGitHub, app: GithubApp):
    """Arrange: two fake GitHubs' worth of one scale set: 1 runner, then 60 runners.

    Act: the scale-set check on each.

    Assert: the same calls both times (token, registration, Actions service, one lookup).
    """
    few = at_github(github, 1)
    check(github, app)([few])
    calls_few = [(m, p.split("?")[0]) for m, p, _ in github.calls]
    with github.lock:
        github.calls.clear()
        github.scale_sets.clear()
        github.runners.clear()
    many = at_github(github, 60)

    asked = check(github, app)
    asked([many])

    assert [(m, p.split("?")[0]) for m, p, _ in github.calls] == calls_few
    assert len(calls_few) == 4
    assert asked.statistics[many.scaleset_id].idle == 60


def garm_with_idle(idle: int) -> MemoryGarm:
    """GARM with the charm's live scale set `small` and `idle` idle runners."""
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=idle, max_runners=idle + 2)])
    garm.advance(1)
    return garm


def stats(**counts: int) -> ScaleSetStats:
    """GitHub's statistics: nothing but `counts`."""
    values = dict.fromkeys(
        ("available", "acquired", "assigned", "running", "registered", "busy", "idle"), 0
    )
    return ScaleSetStats(**(values | counts))


def test_waiting_and_disagreeing_are_timed_across_checks_and_a_clear_check_resets():
    """Arrange: GARM's live set has 2 idle runners; GitHub answers 4 checks 15 minutes apart.

    (2 jobs assigned with both runners idle, the same, no jobs, then no answer.)

    Act: combine at each check, the views kept from the one before (through their JSON).

    Assert: waiting 2 since the first check and, with GARM idle runners and jobs waiting,
    disagreeing since then; at the third check both clear; with no answer the third's view
    stays.
    """
    garm = garm_with_idle(2)
    held, instances = garm.list_scalesets_quietly(), garm.list_instances()
    scaleset_id = held[0].id
    answers = [
        {scaleset_id: stats(assigned=2, registered=2, idle=2)},
        {scaleset_id: stats(assigned=2, registered=2, idle=2)},
        {scaleset_id: stats(registered=2, idle=2)},
        {},
    ]
    views = {}
    seen = []
    for index, answer in enumerate(answers):
        now = T0 + datetime.timedelta(minutes=15 * index)
        views = combine(from_json(to_json(views)), answer, held, instances, now=now)
        seen.append(views["/small"])

    first, second, third, fourth = seen
    assert (first.jobs_waiting, first.garm_idle, first.disagree) == (2, 2, True)
    assert second.waiting_since == second.disagree_since == T0.isoformat()
    assert (third.jobs_waiting, third.disagree, third.waiting_since, third.disagree_since) == (
        0,
        False,
        "",
        "",
    )
    assert fourth == third


@pytest.mark.parametrize(
    ("github_counts", "disagree"),
    [
        ({"registered": 2, "idle": 2}, False),
        ({"registered": 2, "idle": 1}, True),  # GitHub shows one offline that GARM calls idle
        ({"registered": 2, "idle": 1, "busy": 1, "running": 1, "assigned": 1}, True),
    ],
)
def test_github_and_garm_disagree_when_their_runner_counts_differ(
    github_counts: dict[str, int], disagree: bool
):
    """Arrange: GARM shows 2 idle runners, none busy. Act: combine with GitHub's counts.

    Assert: they agree only when GitHub shows the same idle and busy runners.
    """
    garm = garm_with_idle(2)
    held = garm.list_scalesets_quietly()

    views = combine({}, {held[0].id: stats(**github_counts)}, held, garm.list_instances(), now=T0)

    assert views["/small"].disagree is disagree


@pytest.mark.parametrize(
    "statistics",
    [None, [], {"totalAssignedJobs": 1}, dict.fromkeys(("totalAvailableJobs",), -1), "x"],
)
def test_unreadable_statistics_are_no_view(statistics: object):
    """Arrange: a lookup answer's statistics missing or malformed. Act: read them.

    Assert: no statistics (the scale set keeps its last view).
    """
    assert ScaleSetStats.from_wire(statistics) is None
