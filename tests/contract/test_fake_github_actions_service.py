"""The fake GitHub's Actions service answers carry exactly the fields GitHub's client declares.

`docs/reference/github-actions-service.md` records the scale-set API as GitHub's own Go client
(`github.com/actions/scaleset`, at the commit named there) reads it; `fake_github.client_types`
reads its tables. Here a client walks the fake through every call GARM makes of that API, in
the client's paths, and each answer must be exactly its type: registration, runner groups,
scale-set create, lookup, update and delete, message sessions, JIT configs, runners, job
messages (each by its `messageType`), acquired jobs, and the errors (a duplicate, a busy runner,
runners and scale sets that are gone) as the client's `actionsExceptionError`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from fake_github import FakeGitHub, FakeGitHubConfig
from fake_github.client_types import (
    Types,
    exception_problems,
    job_message_problems,
    load_types,
    problems,
)

API_VERSION = "api-version=6.0-preview"
SETS = "_apis/runtime/runnerscalesets"
AGENTS = "_apis/distributedtask/pools/0/agents"


@pytest.fixture(scope="module")
def types() -> Types:
    """The types recorded from GitHub's client."""
    return load_types()


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """The fake GitHub with short long polls."""
    with FakeGitHub(config=FakeGitHubConfig(longpoll_seconds=0.1)) as fake:
        yield fake


class Client:
    """The calls GitHub's client makes, sent to the fake, each answer kept with its type."""

    def __init__(self, github: FakeGitHub) -> None:
        self.github = github
        self.service = ""
        self.answers: list[tuple[str, int, Any, str]] = []

    def send(self, what: str, method: str, url: str, body: Any = None, **headers: str) -> Any:
        """Send one request; keep (what, status, decoded body, expected type); return the body."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - loopback
        request.add_header("Content-Type", "application/json")
        for name, value in headers.items():
            request.add_header(name.replace("_", "-"), value)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        decoded = json.loads(raw.decode("utf-8-sig")) if raw.strip() else None
        self.answers.append((what, status, decoded, method))
        return decoded

    def actions(self, what: str, method: str, path: str, body: Any = None) -> Any:
        """Call the Actions service at `path` (the client adds the API version)."""
        joiner = "&" if "?" in path else "?"
        return self.send(what, method, f"{self.service}{path}{joiner}{API_VERSION}", body)


def walk(github: FakeGitHub) -> Client:
    """Drive the fake through GARM's uses of the Actions service; return every answer."""
    client = Client(github)
    registration = f"{github.url}/api/v3/orgs/fake-org/actions/runners/registration-token"
    token = client.send("-", "POST", registration, Authorization="Bearer fake-pat-token")["token"]
    register = {"url": f"{github.url}/fake-org", "runner_event": "register"}
    admin = client.send(
        "actionsServiceAdminConnection",
        "POST",
        f"{github.url}/actions/runner-registration",
        register,
        Authorization=f"RemoteAuth {token}",
    )
    client.service = admin["url"]
    client.actions("RunnerGroupList", "GET", "_apis/runtime/runnergroups/?groupName=Default")
    scaleset = {
        "name": "fidelity",
        "runnerGroupId": 1,
        "labels": [{"type": "System", "name": "fidelity"}],
        "RunnerSetting": {"disableUpdate": True},
    }
    created = client.actions("RunnerScaleSet", "POST", SETS, scaleset)
    client.actions("error", "POST", SETS, scaleset)
    client.actions("runnerScaleSetsResponse", "GET", f"{SETS}?runnerGroupId=1&name=fidelity")
    path = f"{SETS}/{created['id']}"
    client.actions("RunnerScaleSet", "PATCH", path, {"name": "fidelity-2"})
    session = client.actions(
        "RunnerScaleSetSession", "POST", f"{path}/sessions", {"ownerName": "garm"}
    )
    session_path = f"{path}/sessions/{session['sessionId']}"
    client.actions("RunnerScaleSetSession", "PATCH", session_path)
    jit = {"name": "runner-1", "workFolder": "_work"}
    runner = client.actions(
        "RunnerScaleSetJitRunnerConfig", "POST", f"{path}/generatejitconfig", jit
    )
    agent = f"{AGENTS}/{runner['runner']['id']}"
    client.actions("RunnerReferenceList", "GET", f"{AGENTS}?agentName=runner-1")
    client.actions("RunnerReference", "GET", agent)
    request_id = github.start_job(created["id"], "runner-1")
    queue = session["messageQueueUrl"]
    bearer = {"Authorization": f"Bearer {session['messageQueueAccessToken']}"}
    started = client.send("runnerScaleSetMessageResponse", "GET", queue, **bearer)
    client.send("-", "DELETE", f"{queue}/{started['messageId']}", **bearer)
    client.actions("acquireJobsResponse", "POST", f"{path}/acquirejobs", [request_id])
    client.actions("error", "DELETE", agent)
    github.finish_job("runner-1")
    client.send("runnerScaleSetMessageResponse", "GET", queue, **bearer)
    client.send("-", "GET", f"{queue}?lastMessageId=1", **bearer)
    client.actions("error", "DELETE", agent)
    client.actions("error", "GET", agent)
    client.actions("-", "DELETE", session_path)
    client.actions("-", "DELETE", path)
    client.actions("error", "DELETE", path)
    client.actions("error", "POST", f"{path}/sessions", {"ownerName": "garm"})
    return client


def test_every_actions_service_answer_is_exactly_the_clients_type(
    types: Types, github: FakeGitHub
):
    """Arrange: the fake GitHub. Act: walk it through the scale-set API as GARM uses it.

    Assert: each answer is exactly its type from GitHub's client, each job message exactly its
    `messageType`'s, each error an `actionsExceptionError` (in the service's envelope), the
    deletes and an empty long poll without a body; every success status is the client's.
    """
    client = walk(github)

    found: list[str] = []
    for what, status, body, method in client.answers:
        where = f"{method} {what} {status}"
        if what == "error":
            found += exception_problems(types, body, where) if status >= 400 else [where]
        elif what == "-":
            continue
        else:
            found += problems(types, body, what, where)
        if what == "runnerScaleSetMessageResponse":
            messages = json.loads(body["body"])
            found += [p for m in messages for p in job_message_problems(types, m, f"{where} body")]
    kinds = [
        json.loads(body["body"])[0]["messageType"]
        for what, _, body, _ in client.answers
        if what == "runnerScaleSetMessageResponse"
    ]
    deletes = [(s, b) for w, s, b, m in client.answers if w == "-" and m == "DELETE"]
    statuses = [s for w, s, _, _ in client.answers if w not in ("-", "error")]
    errors = [s for w, s, _, _ in client.answers if w == "error"]

    assert found == []
    assert kinds == ["JobStarted", "JobCompleted"]
    assert deletes == [(204, None)] * 3
    assert set(statuses) == {200}
    assert errors == [409, 400, 404, 404, 404, 404]
    assert client.answers[-7][1:3] == (202, None)


def test_a_wrongly_named_field_is_not_the_clients_type(types: Types, github: FakeGitHub):
    """Arrange: a session answer of the fake. Act: rename one field, drop another, retype one.

    Assert: each change is named at its place.
    """
    session = next(b for w, _, b, _ in walk(github).answers if w == "RunnerScaleSetSession")
    renamed = {("sessionID" if k == "sessionId" else k): v for k, v in session.items()}
    statistics = dict(session["statistics"])
    del statistics["totalIdleRunners"]
    retyped = session | {"statistics": statistics, "ownerName": 7}

    assert problems(types, session, "RunnerScaleSetSession") == []
    assert problems(types, renamed, "RunnerScaleSetSession") == [
        "$.sessionID: not a field of the type"
    ]
    assert problems(types, retyped, "RunnerScaleSetSession") == [
        "$.ownerName: 7 is not a string",
        "$.statistics.totalIdleRunners: missing",
    ]


def test_the_recorded_types_name_the_client_commit_and_cover_every_answer(types: Types):
    """Arrange: the recorded tables. Act: read them. Assert: every type the walk uses is there."""
    used = {
        "actionsServiceAdminConnection",
        "RunnerGroupList",
        "RunnerScaleSet",
        "runnerScaleSetsResponse",
        "RunnerScaleSetSession",
        "RunnerScaleSetJitRunnerConfig",
        "RunnerReferenceList",
        "RunnerReference",
        "runnerScaleSetMessageResponse",
        "acquireJobsResponse",
        "actionsExceptionError",
        "JobMessageBase",
        "JobStarted",
        "JobCompleted",
    }

    assert used <= set(types)
    assert all(types[name] for name in used)
