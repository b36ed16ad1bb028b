"""The charm's own GitHub calls, and the fake GitHub's answers to them, against GitHub's API.

The charm asks GitHub itself (not through GARM) which runners and scale sets GitHub still has
(`reconcile.github.runner_checks`, `reconcile.github.scalesets`, over `reconcile.github.http`).
Here the charm's real code asks the fake GitHub about a repository, an organization and an
enterprise; every REST request it sent must be an operation GitHub's published OpenAPI
description documents (path, method, path and query parameters), and every answer the fake
gave must validate against that operation's response schema, closed (`fake_github.openapi`),
for the public service (`api.github.com`; enterprise accounts from its Enterprise Cloud file)
and for the oldest GitHub Enterprise Server the charms support. The Actions service calls
(`/actions/runner-registration`, `/_apis/...`) are not in that description: they are checked
against GitHub's own client (`test_fake_github_actions_service.py`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import jsonschema
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fake_github import FakeGitHub, FakeGitHubConfig, openapi, server
from fake_github.openapi import Description, Recorded
from garm_api.models import EntityKind, GithubEndpoint
from must_run import cannot_run
from reconcile.github.offline_runners import IdleRunner, OfflineCheck
from reconcile.github.runner_checks import RunnerCheck
from reconcile.github.scalesets import ScaleSetCheck
from reconcile.github_objects import GithubApp
from scaleset_reconciler import BusyRunner, GithubScaleSetRef
from scaleset_reconciler.needs import entity_key
from workload.config import ProxyConfig

APP_ID = 4242
NOW = 1_800_000_000.0
ENTITIES = (
    (EntityKind.REPOSITORY, "fake-org/fake-repo"),
    (EntityKind.ORGANIZATION, "fake-org"),
    (EntityKind.ENTERPRISE, "fake-enterprise"),
)
# Every REST operation the charm uses; a new one must be added here, and so be checked.
OPERATIONS = {
    ("POST", "/app/installations/{installation_id}/access_tokens"),
    ("GET", "/repos/{owner}/{repo}/actions/runners"),
    ("GET", "/repos/{owner}/{repo}/actions/runners/{runner_id}"),
    ("POST", "/repos/{owner}/{repo}/actions/runners/registration-token"),
    ("GET", "/orgs/{org}/actions/runners"),
    ("GET", "/orgs/{org}/actions/runners/{runner_id}"),
    ("POST", "/orgs/{org}/actions/runners/registration-token"),
    ("GET", "/orgs/{org}/actions/runner-groups"),
    ("GET", "/enterprises/{enterprise}/actions/runners"),
    ("GET", "/enterprises/{enterprise}/actions/runners/{runner_id}"),
    ("POST", "/enterprises/{enterprise}/actions/runners/registration-token"),
    ("GET", "/enterprises/{enterprise}/actions/runner-groups"),
}


@pytest.fixture(scope="module")
def descriptions() -> dict[str, Description]:
    """GitHub's descriptions by file name (`scripts/fetch_github_openapi.sh` fetches them)."""
    if openapi.description_dir() is None:
        cannot_run(
            f"GitHub's OpenAPI description ({openapi.PACKAGE}@{openapi.VERSION}) is not in "
            f"{openapi.DIR_ENV}: run `export {openapi.DIR_ENV}=$(scripts/fetch_github_openapi.sh)`"
        )
    return {name: openapi.load(name) for name in openapi.FILES}


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
    """The fake GitHub, with a runner group `large` besides the default one."""
    config = FakeGitHubConfig(app_id=APP_ID, runner_groups={"Default": 1, "large": 3})
    with FakeGitHub(config=config) as fake:
        yield fake


def charm_requests(github: FakeGitHub, app: GithubApp) -> list[Recorded]:
    """Run the charm's GitHub checks on each entity; return the REST requests made.

    Each entity has a busy runner GitHub lists and one whose job ended (GitHub answers 404 for
    it), an idle runner GitHub shows offline, and a scale set in the runner group `large` (an
    organization and an enterprise look the group up).
    """
    endpoint = GithubEndpoint("github.com", "", github.url, f"{github.url}/api/v3/", "", b"")
    apps = {entity_key(kind, name): app for kind, name in ENTITIES}
    busy: list[BusyRunner] = []
    scalesets: list[GithubScaleSetRef] = []
    idle: list[IdleRunner] = []
    for index, (kind, name) in enumerate(ENTITIES):
        busy += [_busy(github, kind, name, f"busy-{index}"), _busy(github, kind, name, "")]
        scalesets.append(_at_github(github, index, kind, name))
        idle.append(_offline(github, kind, name, f"idle-{index}"))
    RunnerCheck(lambda: endpoint, apps, ProxyConfig(), clock=lambda: NOW)(busy)
    ScaleSetCheck(lambda: endpoint, apps, ProxyConfig(), clock=lambda: NOW)(scalesets)
    sighting = OfflineCheck(lambda: endpoint, apps, ProxyConfig(), clock=lambda: NOW)(idle)
    assert sighting.offline == {runner.name for runner in idle}
    return [
        Recorded(method, target.removeprefix("/api/v3"), status, body)
        for method, target, status, body in github.answers
        if target.startswith("/api/v3/")
    ]


def _busy(github: FakeGitHub, kind: EntityKind, entity: str, name: str) -> BusyRunner:
    """A runner GARM shows busy: GitHub lists it with a job, or (no name) has dropped it."""
    with github.lock:
        agent_id = github.new_id()
        if name:
            github.runners[agent_id] = {"id": agent_id, "name": name, "runnerScaleSetId": 1}
    if name:
        github.start_job(1, name)
    return BusyRunner(name or f"gone-{agent_id}", agent_id, kind, entity)


def _offline(github: FakeGitHub, kind: EntityKind, entity: str, name: str) -> IdleRunner:
    """A runner GARM shows idle that GitHub lists offline."""
    with github.lock:
        agent_id = github.new_id()
        github.runners[agent_id] = {"id": agent_id, "name": name, "runnerScaleSetId": 1}
    github.set_offline(name)
    return IdleRunner(name, agent_id, kind, entity, "small", "small-app")


def _at_github(github: FakeGitHub, index: int, kind: EntityKind, entity: str) -> GithubScaleSetRef:
    with github.lock:
        github_id = github.new_id()
        github.scale_sets[github_id] = {
            "id": github_id,
            "name": f"set-{index}",
            "runnerGroupId": 3,
        }
    return GithubScaleSetRef(index + 1, f"set-{index}", github_id, "large", kind, entity)


def judge(descriptions: dict[str, Description], service: str, request: Recorded) -> Description:
    """The description a request is judged by: the service's, for an enterprise its cloud's."""
    if service == "ghes":
        return descriptions[openapi.OLDEST_GHES]
    if request.target.startswith("/enterprises/"):
        return descriptions[openapi.ENTERPRISE_CLOUD]
    return descriptions[openapi.PUBLIC]


@pytest.mark.parametrize("service", ["public", "ghes"])
def test_the_charm_sends_documented_requests_and_the_fake_answers_by_the_schema(
    descriptions: dict[str, Description], github: FakeGitHub, app: GithubApp, service: str
):
    """Arrange: the fake GitHub with runners and scale sets of three entities.

    Act: run the charm's runner check and scale-set check; judge every REST request made.

    Assert: each is a documented operation with documented parameters, each answer (the 404s
    for dropped runners included) validates against its schema, and the requests cover every
    operation the charm uses.
    """
    requests = charm_requests(github, app)

    problems = [p for r in requests for p in judge(descriptions, service, r).problems(r)]
    used = set()
    for request in requests:
        path = request.target.split("?", 1)[0]
        found = judge(descriptions, service, request).operation(request.method, path)
        if found is not None:
            used.add((request.method, found[0]))

    assert problems == []
    assert used == OPERATIONS
    assert {r.status for r in requests} == {200, 201, 404}


def test_a_wrongly_named_field_in_a_fake_answer_fails_the_check(
    descriptions: dict[str, Description],
    github: FakeGitHub,
    app: GithubApp,
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: the fake GitHub's runner answers with `ephemeral` misspelt `ephemeral_runner`.

    Act: run the charm's checks and judge their requests by GitHub's public description.

    Assert: every runner answer is a problem naming the unknown field, on both descriptions,
    though the charm's checks do not read that field.
    """
    real_runner = server._rest_runner  # pyright: ignore[reportPrivateUsage]

    def misnamed(gh: FakeGitHub, runner: dict[str, object]) -> dict[str, object]:
        answer = dict(real_runner(gh, runner))
        answer["ephemeral_runner"] = answer.pop("ephemeral")
        return answer

    monkeypatch.setattr(server, "_rest_runner", misnamed)
    requests = charm_requests(github, app)

    for service in ("public", "ghes"):
        judged = [(r, judge(descriptions, service, r).problems(r)) for r in requests]
        runners = [found for r, found in judged if r.status == 200 and "/runners" in r.target]
        problems = [p for _, found in judged for p in found]
        assert runners
        assert all(runners)
        assert all("'ephemeral_runner' was unexpected" in p for p in problems)


# GitHub's rate-limit headers (its REST docs, "Rate limits for the REST API") and the component
# of the description that gives each one's schema; no operation of the description refers to
# them, since GitHub sends them with every answer.
RATE_HEADERS = {
    "x-ratelimit-limit": "x-rate-limit-limit",
    "x-ratelimit-remaining": "x-rate-limit-remaining",
    "x-ratelimit-reset": "x-rate-limit-reset",
}


@pytest.mark.parametrize("name", [openapi.PUBLIC, openapi.OLDEST_GHES])
def test_every_rest_answer_states_the_rate_limit_as_github_documents_it(
    descriptions: dict[str, Description], github: FakeGitHub, app: GithubApp, name: str
):
    """Arrange: the fake GitHub with runners and scale sets of three entities.

    Act: run the charm's runner and scale-set checks; read every REST answer's headers.

    Assert: each carries `X-RateLimit-Limit`, `-Remaining` and `-Reset`, each valid for the
    description's schema of it (an integer); the installation's remaining count goes down by
    one per call it makes, from the limit, and the window ends in the future.
    """
    charm_requests(github, app)
    components = descriptions[name].document["components"]["headers"]

    stated: list[dict[str, int]] = []
    for _, _, headers in github.rate_headers:
        lowered = {key.lower(): value for key, value in headers.items()}
        assert set(RATE_HEADERS) <= set(lowered)
        for header, component in RATE_HEADERS.items():
            schema = descriptions[name].json_schema(components[component]["schema"])
            jsonschema.validate(int(lowered[header]), schema)
        stated.append({key: int(lowered[key]) for key in RATE_HEADERS})

    installation = [
        s
        for (_, path, _), s in zip(github.rate_headers, stated, strict=True)
        if "/app/" not in path
    ]
    assert len(stated) == len([t for _, t, _, _ in github.answers if t.startswith("/api/v3/")])
    assert [s["x-ratelimit-remaining"] for s in installation] == [
        5000 - count for count in range(1, len(installation) + 1)
    ]
    assert all(s["x-ratelimit-reset"] > time.time() for s in stated)
