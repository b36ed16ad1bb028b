"""Idle runners GitHub shows offline past a bound are removed through GARM (ADR 0040).

The charm's real check asks the fake GitHub on loopback (tests/fake_github) for the entity's
runners, as the App installation; GARM is the in-memory double, which refuses an unforced
removal of a runner with a job as GARM does (garm-behaviour B32) and replaces removed runners
to keep min idle. Each check runs at a time on the charm's clock; the sightings it keeps are
handed to the next one, as the leader's stored state does.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given
from hypothesis import strategies as st

from doubles.memory_garm import MemoryGarm
from fake_github import FakeGitHub, FakeGitHubConfig, Fault
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github.offline_runners import (
    MAX_REMOVALS,
    OFFLINE_AFTER,
    IdleRunner,
    OfflineCheck,
    OfflineReport,
    Sighting,
    plan_offline,
    reap_offline,
)
from reconcile.github_objects import GithubApp
from scaleset_reconciler.needs import entity_key
from unit.walks.scalesets import converge, make_spec
from workload.config import ProxyConfig

REPO = "fake-org/fake-repo"
APP_ID = 4242
T0 = datetime.datetime(2026, 12, 2, 3, 0, tzinfo=datetime.UTC)
LIST = rf"/api/v3/repos/{REPO}/actions/runners"


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


class Story:
    """GARM with one scale set of the charm's, its idle runners registered at GitHub."""

    def __init__(self, github: FakeGitHub, app: GithubApp, idle: int = 3) -> None:
        self.github = github
        self.garm = MemoryGarm()
        spec = make_spec(min_idle_runners=idle, max_runners=idle + 2)
        converge(self.garm, [spec])
        self.garm.advance(1)
        self.scaleset_id = self.garm.by_name(converge(self.garm, [spec]).specs[0].live_name).id
        self.register()
        endpoint = GithubEndpoint("github.com", "", github.url, f"{github.url}/api/v3/", "", b"")
        apps = {entity_key(EntityKind.REPOSITORY, REPO): app}
        self.check = OfflineCheck(lambda: endpoint, apps, ProxyConfig())
        self.kept: dict[str, str] = {}

    def register(self) -> None:
        """GitHub lists every runner GARM has (online unless set offline)."""
        with self.github.lock:
            for runner in self.garm.runners.values():
                if runner.agent_id not in self.github.runners:
                    self.github.runners[runner.agent_id] = {
                        "id": runner.agent_id,
                        "name": runner.name,
                        "runnerScaleSetId": 1,
                    }

    def idle(self) -> list[str]:
        """GARM's idle runners, by name."""
        return sorted(
            r.name
            for r in self.garm.runners.values()
            if r.status == "running" and r.runner_status == "idle"
        )

    def at(self, minutes: float) -> OfflineReport:
        """One check at T0 + `minutes`; its sightings are kept for the next."""
        report = reap_offline(
            self.garm,
            self.garm.list_scalesets_quietly(),
            self.check,
            self.kept,
            now=T0 + datetime.timedelta(minutes=minutes),
        )
        self.kept = dict(report.since)
        return report

    def removed(self) -> list[str]:
        """The runners GARM was asked to remove, unforced."""
        return [removal.name for removal in self.garm.removed]


def test_idle_runners_offline_past_the_bound_are_removed_and_the_online_one_stays(
    github: FakeGitHub, app: GithubApp
):
    """Arrange: three idle runners; GitHub shows two offline from T0.

    Act: checks at T0, +10 and +16 minutes.

    Assert: nothing is removed before the bound; at +16 exactly the two offline runners are
    removed through GARM (unforced), the online one stays; they are counted per scale set.
    """
    story = Story(github, app)
    first, second, online = story.idle()
    github.set_offline(first)
    github.set_offline(second)

    early = [story.at(0), story.at(10)]
    late = story.at(16)

    assert [r.removed for r in early] == [(), ()]
    assert story.removed() == sorted([first, second])
    assert {r.name for r in late.removed} == {first, second}
    assert late.offline == {("", "small"): 2}
    assert online in story.idle()
    assert late.since == {}


def test_a_runner_that_flips_online_starts_the_clock_again(github: FakeGitHub, app: GithubApp):
    """Arrange: a runner GitHub shows offline at T0, online at +5, offline again from +10.

    Act: checks at 0, 5, 10, 20 and 26 minutes.

    Assert: it is not removed at +20 (10 minutes since the flip), only at +26.
    """
    story = Story(github, app)
    runner = story.idle()[0]

    github.set_offline(runner)
    story.at(0)
    github.set_offline(runner, offline=False)
    story.at(5)
    github.set_offline(runner)
    story.at(10)
    not_yet = story.at(20)
    removed = story.at(26)

    assert not_yet.removed == ()
    assert [r.name for r in removed.removed] == [runner]


@pytest.mark.parametrize(
    "outage",
    [
        pytest.param(Fault("GET", LIST, 500, {"message": "Server Error"}), id="5xx"),
        pytest.param(Fault("GET", LIST, 502), id="bad-gateway"),
        pytest.param(Fault("GET", LIST, 404, {"message": "Not Found"}), id="404"),
        pytest.param(Fault("GET", LIST, 200, {"total_count": 1}), id="no-list"),
        pytest.param(Fault("POST", r"/api/v3/app/.*", 503), id="no-token"),
    ],
)
def test_no_answer_from_github_removes_nothing_and_forgets_nothing(
    github: FakeGitHub, app: GithubApp, outage: Fault
):
    """Arrange: a runner GitHub shows offline from T0; at +16 GitHub answers with `outage`.

    Act: checks at 0 and 16 (outage), then at 21 with GitHub back.

    Assert: nothing is removed during the outage and the first sighting is kept, so the
    runner goes at the first check GitHub answers again.
    """
    story = Story(github, app)
    runner = story.idle()[0]
    github.set_offline(runner)
    story.at(0)

    github.faults.append(outage)
    during = story.at(16)
    github.faults.clear()
    after = story.at(21)

    assert during.removed == ()
    assert during.since == {runner: T0.isoformat()}
    assert [r.name for r in after.removed] == [runner]


def test_a_runner_with_a_job_is_never_removed(github: FakeGitHub, app: GithubApp):
    """Arrange: GitHub shows three runners offline from T0, one busy at GitHub, one active.

    (The busy one's job connection dropped; GARM shows the active one running a job.)

    Act: checks at 0 and 30 minutes.

    Assert: neither is removed, nor asked to be; the third, idle and offline, goes.
    """
    story = Story(github, app)
    busy_at_github, active_in_garm, idle = story.idle()
    for name in (busy_at_github, active_in_garm, idle):
        github.set_offline(name)
    github.start_job(1, busy_at_github)
    story.garm.runners[active_in_garm].runner_status = "active"

    story.at(0)
    late = story.at(30)

    asked = [args[0] for op, args in story.garm.calls if op == "delete_instance"]
    assert asked == [idle]
    assert story.removed() == [idle]
    assert [r.name for r in late.removed] == [idle]


def test_a_bounded_number_goes_per_pass_the_longest_offline_first(
    github: FakeGitHub, app: GithubApp
):
    """Arrange: five idle runners; two GitHub shows offline from T0, three from +5.

    Act: checks at 0, 5, 21 and 22 minutes.

    Assert: at +21 `MAX_REMOVALS` go, the two offline longest among them; the rest at +22.
    """
    story = Story(github, app, idle=5)
    names = story.idle()
    for name in names[:2]:
        github.set_offline(name)
    story.at(0)
    for name in names[2:]:
        github.set_offline(name)
    story.at(5)

    first = story.at(21)
    second = story.at(22)

    assert len(first.removed) == MAX_REMOVALS
    assert set(names[:2]) <= {r.name for r in first.removed}
    assert len(second.removed) == len(names) - MAX_REMOVALS
    assert sorted(story.removed()) == names


def test_a_listed_offline_runner_of_another_name_is_no_evidence(
    github: FakeGitHub, app: GithubApp
):
    """Arrange: GitHub lists GARM's runner's id offline under another name.

    Act: checks at 0 and 30. Assert: nothing is removed.
    """
    story = Story(github, app)
    runner = story.idle()[0]
    agent_id = story.garm.runners[runner].agent_id
    with github.lock:
        github.runners[agent_id] = {"id": agent_id, "name": "someone-else", "status": "offline"}

    story.at(0)
    story.at(30)

    assert story.removed() == []


runners_strategy = st.lists(
    st.tuples(st.sampled_from(["o/a", "o/b"]), st.booleans(), st.integers(0, 60)),
    max_size=8,
)


@given(runners_strategy, st.sets(st.sampled_from(["o/a", "o/b"])), st.integers(0, 60))
def test_only_answered_offline_runners_seen_long_enough_go_and_never_too_many(
    runners: list[tuple[str, bool, int]], answered: set[str], now_minutes: int
):
    """Arrange: idle runners of two entities, some listed offline, some with kept sightings.

    Act: plan_offline. Assert: every removal is of an answered entity, listed offline now,
    first seen at least the bound ago; at most `MAX_REMOVALS`; an unanswered entity's
    sightings are kept unchanged.
    """
    now = T0 + datetime.timedelta(minutes=now_minutes)
    idle = [
        IdleRunner(f"r{i}", i + 1, EntityKind.REPOSITORY, entity, "s", "a")
        for i, (entity, _, _) in enumerate(runners)
    ]
    offline = frozenset(f"r{i}" for i, (_, off, _) in enumerate(runners) if off)
    kept = {
        f"r{i}": (T0 + datetime.timedelta(minutes=m)).isoformat()
        for i, (_, _, m) in enumerate(runners)
    }
    keys = frozenset(entity_key(EntityKind.REPOSITORY, e) for e in answered)

    step = plan_offline(idle, Sighting(offline, keys), kept, now=now)

    assert len(step.removals) <= MAX_REMOVALS
    for runner in step.removals:
        assert runner.entity in keys
        assert runner.name in offline
        seen = datetime.datetime.fromisoformat(step.since[runner.name])
        assert now - seen >= OFFLINE_AFTER
    for runner in idle:
        if runner.entity not in keys:
            assert step.since[runner.name] == kept[runner.name]
