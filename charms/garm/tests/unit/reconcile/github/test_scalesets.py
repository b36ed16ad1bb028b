"""reconcile.github.scalesets against the fake GitHub over real HTTP (ADR 0029).

The evidence rule: a scale set is named missing only when GitHub's Actions service answered
the lookup GARM's worker makes (by name, in its runner group) with no scale set of that name.
Every other answer names nothing, so a live scale set is never replaced on a doubt.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fake_github import FakeGitHub, FakeGitHubConfig, Fault
from fake_github.server import PIPELINE
from garm_api import GarmBadRequest
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github.scalesets import MAX_RUNNER_GROUP_PAGES, ScaleSetCheck, is_due
from reconcile.github_objects import GithubApp
from scaleset_reconciler import GithubScaleSetRef
from scaleset_reconciler.needs import entity_key
from workload.config import ProxyConfig

ORG = "Fake-Org"
REPO = "fake-org/fake-repo"
APP_ID = 4242
NOW = 1_800_000_000.0
LOOKUP = PIPELINE + r"/_apis/runtime/runnerscalesets"


@pytest.fixture(scope="module")
def app() -> GithubApp:
    """The App a configurator published, with its private key in PEM form."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return GithubApp(app_id=APP_ID, installation_id=7, private_key_pem=pem)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """The fake GitHub, with an organization runner group `large` besides the default one."""
    config = FakeGitHubConfig(app_id=APP_ID, runner_groups={"Default": 1, "large": 3})
    with FakeGitHub(config=config) as fake:
        yield fake


def check(github: FakeGitHub, app: GithubApp, budget: float = 30.0) -> ScaleSetCheck:
    """The charm's check, as the App of the org and the repository."""
    endpoint = GithubEndpoint("github.com", "", github.url, f"{github.url}/api/v3/", "", b"")
    apps = {
        entity_key(EntityKind.ORGANIZATION, ORG): app,
        entity_key(EntityKind.REPOSITORY, REPO): app,
    }
    return ScaleSetCheck(
        lambda: endpoint, apps, ProxyConfig(), clock=lambda: NOW, budget_seconds=budget
    )


def at_github(
    github: FakeGitHub,
    name: str,
    group: str = "",
    kind: EntityKind = EntityKind.ORGANIZATION,
    scaleset_id: int = 10,
) -> GithubScaleSetRef:
    """A scale set GARM created at GitHub (as GARM's worker does), as the reconciler asks."""
    group_id = github.config.runner_groups.get(group, 1)
    with github.lock:
        github_id = github.new_id()
        github.scale_sets[github_id] = {
            "id": github_id,
            "name": name,
            "runnerGroupId": group_id,
            "labels": [],
        }
    entity = ORG if kind is EntityKind.ORGANIZATION else REPO
    return GithubScaleSetRef(scaleset_id, name, github_id, group, kind, entity)


def test_only_the_scale_set_github_dropped_is_named(github: FakeGitHub, app: GithubApp):
    """Arrange: two scale sets of the org at GitHub; GitHub drops one.

    Act: ask about both. Assert: only the dropped one's GARM id is named; the calls are GARM's:
    an installation token, a registration token, the Actions service, one lookup each.
    """
    kept = at_github(github, "small-aaaa", scaleset_id=1)
    dropped = at_github(github, "large-bbbb", scaleset_id=2)
    github.drop_scale_set(dropped.github_id)

    missing = check(github, app)([kept, dropped])

    assert missing == {2}
    paths = [(method, path.split("?")[0], status) for method, path, status in github.calls]
    assert paths == [
        ("POST", "/api/v3/app/installations/7/access_tokens", 201),
        ("POST", f"/api/v3/orgs/{ORG}/actions/runners/registration-token", 201),
        ("POST", "/actions/runner-registration", 200),
        ("GET", LOOKUP, 200),
        ("GET", LOOKUP, 200),
    ]


def test_the_lookup_names_the_set_and_its_group_as_garm_does(github: FakeGitHub, app: GithubApp):
    """Arrange: a scale set of the org in runner group `large` (id 3), and one of the repo.

    Act: ask. Assert: nothing named; the org's groups were listed to find `large`; each lookup
    sent the name, the group's id and the API version GARM sends; the repository's set was
    looked up in the default group without listing groups.
    """
    grouped = at_github(github, "large-cccc", group="large", scaleset_id=1)
    repo = at_github(github, "repo-dddd", kind=EntityKind.REPOSITORY, scaleset_id=2)

    missing = check(github, app)([grouped, repo])

    assert missing == frozenset()
    lookups = [path for method, path, _ in github.calls if path.startswith(LOOKUP)]
    assert lookups == [
        f"{LOOKUP}?runnerGroupId=3&name=large-cccc&api-version=6.0-preview",
        f"{LOOKUP}?runnerGroupId=1&name=repo-dddd&api-version=6.0-preview",
    ]
    paths = [path for _, path, _ in github.calls]
    assert any(path.startswith(f"/api/v3/orgs/{ORG}/actions/runner-groups") for path in paths)
    assert not any(f"repos/{REPO}/actions/runner-groups" in path for path in paths)


def test_a_set_of_the_name_under_another_id_is_not_named(
    github: FakeGitHub, app: GithubApp, caplog: pytest.LogCaptureFixture
):
    """Arrange: GitHub dropped GARM's set; another one of the same name exists (not GARM's).

    Act: ask. Assert: not named (GitHub has a set of that name; GARM's worker refuses it too);
    the log says so.
    """
    ours = at_github(github, "small-eeee", scaleset_id=1)
    github.drop_scale_set(ours.github_id)
    at_github(github, "small-eeee", scaleset_id=99)

    with caplog.at_level(logging.WARNING):
        missing = check(github, app)([ours])

    assert missing == frozenset()
    assert "not GARM's" in caplog.text


@pytest.mark.parametrize(
    ("method", "path", "status", "body"),
    [
        ("POST", r"/api/v3/orgs/.*/registration-token", 403, {"message": "Forbidden"}),
        ("POST", r"/actions/runner-registration", 500, {"message": "boom"}),
        ("POST", r"/actions/runner-registration", 200, {"url": "", "token": "x"}),
        ("GET", LOOKUP, 404, {"message": "Not Found"}),
        ("GET", LOOKUP, 200, {"value": []}),
        ("GET", LOOKUP, 200, {"count": True, "value": []}),
        ("GET", LOOKUP, 302, None),
        ("GET", r"/api/v3/orgs/.*/actions/runner-groups", 500, None),
        ("GET", r"/api/v3/orgs/.*/actions/runner-groups", 200, {"total_count": 0}),
    ],
    ids=[
        "registration-refused",
        "actions-service-error",
        "actions-service-no-url",
        "lookup-404",
        "lookup-no-count",
        "lookup-count-not-a-number",
        "lookup-redirect",
        "groups-error",
        "groups-no-list",
    ],
)
def test_any_other_answer_names_nothing(
    github: FakeGitHub, app: GithubApp, method: str, path: str, status: int, body: object
):
    """Arrange: a dropped scale set in group `large`; GitHub answers one step with `status`.

    Act: ask with the fault, then without. Assert: nothing named with it; named without it, so
    the fault alone made the difference.
    """
    dropped = at_github(github, "large-ffff", group="large")
    github.drop_scale_set(dropped.github_id)
    github.faults.append(Fault(method, path, status, body))

    faulted = check(github, app)([dropped])
    github.faults.clear()
    clean = check(github, app)([dropped])

    assert (faulted, clean) == (frozenset(), {dropped.scaleset_id})


def test_a_runner_group_on_a_later_page_is_found(app: GithubApp):
    """Arrange: an org with 150 runner groups; a dropped scale set in the 140th.

    Act: ask. Assert: named missing, after reading the groups' second page (100 a page).
    """
    groups = {f"group-{n}": n + 10 for n in range(150)}
    with FakeGitHub(config=FakeGitHubConfig(app_id=APP_ID, runner_groups=groups)) as github:
        ref = GithubScaleSetRef(1, "deep-jjjj", 77, "group-140", EntityKind.ORGANIZATION, ORG)

        missing = check(github, app)([ref])

        pages = [p for _, p, _ in github.calls if "/actions/runner-groups" in p]
        assert missing == {1}
        assert [p.split("?")[1] for p in pages] == ["per_page=100&page=1", "per_page=100&page=2"]


def test_too_many_runner_groups_name_nothing(app: GithubApp):
    """Arrange: more runner groups than the check reads, the set's group not among them.

    Act: ask. Assert: nothing named, after the last page the check reads.
    """
    groups = {f"group-{n}": n + 10 for n in range(MAX_RUNNER_GROUP_PAGES * 100 + 1)}
    with FakeGitHub(config=FakeGitHubConfig(app_id=APP_ID, runner_groups=groups)) as github:
        ref = GithubScaleSetRef(1, "lost-kkkk", 77, "elsewhere", EntityKind.ORGANIZATION, ORG)

        missing = check(github, app)([ref])

        pages = [p for _, p, _ in github.calls if "/actions/runner-groups" in p]
        assert missing == frozenset()
        assert len(pages) == MAX_RUNNER_GROUP_PAGES


def test_without_garms_github_endpoint_nothing_is_asked(github: FakeGitHub, app: GithubApp):
    """Arrange: GARM refuses its endpoints, or has no github.com endpoint.

    Act: ask about a dropped scale set. Assert: nothing named, GitHub never called.
    """
    dropped = at_github(github, "small-llll")
    github.drop_scale_set(dropped.github_id)

    def refused() -> GithubEndpoint | None:
        raise GarmBadRequest("list github endpoints", 400, "Bad Request", "no")

    apps = {entity_key(EntityKind.ORGANIZATION, ORG): app}
    answers = [
        ScaleSetCheck(endpoint, apps, ProxyConfig(), clock=lambda: NOW)([dropped])
        for endpoint in (refused, lambda: None)
    ]

    assert answers == [frozenset(), frozenset()]
    assert github.calls == []


def test_an_unknown_runner_group_names_nothing(github: FakeGitHub, app: GithubApp):
    """Arrange: a scale set in a group the org does not list, and GitHub has no such set.

    Act: ask. Assert: nothing named (without the group's id there was no lookup).
    """
    ref = GithubScaleSetRef(1, "gone-gggg", 77, "vanished", EntityKind.ORGANIZATION, ORG)

    assert check(github, app)([ref]) == frozenset()
    assert not any(path.startswith(LOOKUP) for _, path, _ in github.calls)


def test_an_entity_without_an_app_is_not_asked_about(github: FakeGitHub, app: GithubApp):
    """Arrange: a dropped scale set of an org no configurator's App serves.

    Act: ask. Assert: nothing named and nothing sent to GitHub.
    """
    ref = GithubScaleSetRef(1, "other-hhhh", 55, "", EntityKind.ORGANIZATION, "someone-else")

    assert check(github, app)([ref]) == frozenset()
    assert github.calls == []


def test_a_lookup_answered_after_the_budget_names_nothing(github: FakeGitHub, app: GithubApp):
    """Arrange: a dropped scale set; GitHub holds the lookup's answer past the pass's budget.

    Act: ask with a 1 s budget. Assert: nothing named, and the call returns within the budget.
    """
    dropped = at_github(github, "slow-iiii")
    github.drop_scale_set(dropped.github_id)
    github.faults.append(Fault("GET", LOOKUP, 200, {"count": 0, "value": []}, delay_seconds=3))

    started = datetime.datetime.now(datetime.UTC)
    missing = check(github, app, budget=1.0)([dropped])
    waited = datetime.datetime.now(datetime.UTC) - started

    assert missing == frozenset()
    assert waited < datetime.timedelta(seconds=2.5)


NOON = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
EVERY = datetime.timedelta(minutes=15)


@pytest.mark.parametrize(
    ("last", "due"),
    [
        ("", True),
        ("not a time", True),
        ("2026-12-01T11:45:00", True),  # no zone: not written by the charm
        ((NOON - EVERY).isoformat(), True),
        ((NOON - EVERY + datetime.timedelta(seconds=1)).isoformat(), False),
        (NOON.isoformat(), False),
        ((NOON + datetime.timedelta(seconds=1)).isoformat(), True),  # the clock went back
    ],
)
def test_a_check_is_due_a_quarter_hour_after_the_last(last: str, due: bool):
    """Arrange: the time of the last check as kept. Act: is one due at noon? Assert: `due`."""
    assert is_due(last, NOON, EVERY) is due
