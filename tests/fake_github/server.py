"""The fake GitHub HTTP server (stdlib only)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from fake_github.loopback import LoopbackServer

PIPELINE = "/_services/pipelines/fake"
_GO_ZERO_TIME = "0001-01-01T00:00:00Z"
_TOKEN_SECONDS = 3600 * 6


@dataclass
class FakeGitHubConfig:
    """Switches for GitHub's behaviour.

    Attributes:
        token: the PAT GARM must send; anything else is 401 Bad credentials.
        max_name_length: scale-set names longer than this are refused with 400 (0 = no limit).
        delete_status: the answer to a scale-set DELETE (GARM only accepts 204).
        runner_groups: runner groups of organizations (`Default` has id 1).
        longpoll_seconds: how long an empty message-queue poll is held before 202.
        app_id: when set, a GitHub App JWT must carry this `iss` to get an installation token.
        hidden: entity paths (`repos/owner/name`, `orgs/name`) the tokens cannot see: every
            REST call under one answers 404, as GitHub answers for a repository an
            installation has no access to.
        drip_seconds: when above 0, every answer's body is sent one byte at a time, this long
            apart (each byte within any read timeout, the whole body far beyond it).
        drip_paths: when not empty, only answers to paths ending with one of these drip.
        refuse_busy_removal: an agent running a job is not removed: its DELETE answers 400
            with `JOB_STILL_RUNNING`, as GitHub's Actions service refuses a busy runner.
        rate_limit: the requests per hour each token's owner may make to the REST API (an
            App installation for its installation tokens, the PAT's user for the PAT); every
            REST answer says how many are left (`X-RateLimit-*`), and each authenticated REST
            call but `GET /rate_limit` spends one, as GitHub counts them.
    """

    token: str = "fake-pat-token"
    max_name_length: int = 0
    delete_status: int = 204
    runner_groups: dict[str, int] = field(default_factory=lambda: {"Default": 1})
    longpoll_seconds: float = 2.0
    app_id: int | None = None
    hidden: frozenset[str] = frozenset()
    drip_seconds: float = 0.0
    drip_paths: frozenset[str] = frozenset()
    refuse_busy_removal: bool = True
    rate_limit: int = 5000


def exception(key: str, message: str) -> dict[str, Any]:
    """An Actions service error: a serialised .NET exception (`typeName` names its type).

    GitHub's client tells exceptions apart by `typeName` (docs/reference/github-actions-service.md,
    "Errors"); GARM reads only the status and quotes the body in its own error's details.
    """
    return {
        "$id": "1",
        "innerException": None,
        "message": message,
        "typeName": f"GitHub.DistributedTask.WebApi.{key}, GitHub.DistributedTask.WebApi",
        "typeKey": key,
        "errorCode": 0,
        "eventId": 3000,
    }


# Removing an agent that runs a job is refused with 400 and this exception type.
JOB_STILL_RUNNING = exception(
    "JobStillRunningException", "The agent is running a job and cannot be removed."
)
_NO_AGENT = exception("AgentNotFoundException", "fake-github: no such agent")
_NO_SCALE_SET = exception(
    "RunnerScaleSetNotFoundException", "fake-github: no such runner scale set"
)


@dataclass
class Answer:
    """A response: status and JSON body (None = empty)."""

    status: int
    body: Any = None


@dataclass(frozen=True)
class Fault:
    """A scripted answer, in place of GitHub's, to requests whose path (no query) matches `path`.

    Attributes:
        method: the HTTP method it applies to.
        path: a regular expression the whole request path must match.
        status: the status sent.
        body: the JSON body (None = empty).
        headers: extra headers (a redirect's `Location`).
        delay_seconds: held this long before the status line is sent.
        stall_seconds: the headers promise a body; it comes this long after them.
    """

    method: str
    path: str
    status: int
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()
    delay_seconds: float = 0.0
    stall_seconds: float = 0.0


Route = tuple[
    str,
    re.Pattern[str],
    Callable[["FakeGitHub", dict[str, str], Any, dict[str, list[str]]], Answer],
]


class FakeGitHub(LoopbackServer):
    """GitHub as GARM sees it, on 127.0.0.1.

    Args:
        port: the port (0 = free).
        config: behaviour switches.
    """

    def __init__(
        self,
        port: int = 0,
        config: FakeGitHubConfig | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(port, tls)
        self.config = config or FakeGitHubConfig()
        # Scripted answers (`Fault`), tried before the routes; the first match answers.
        self.faults: list[Fault] = []
        self.scale_sets: dict[int, dict[str, Any]] = {}
        self.sessions: dict[str, int] = {}
        self.runners: dict[int, dict[str, Any]] = {}
        self.assigned_jobs: dict[int, int] = {}
        # Jobs assigned to a scale set that no runner runs yet (its statistics count them).
        self.waiting_jobs: dict[int, int] = {}
        # Job messages waiting for the next poll, per scale set; runner name -> running job.
        self.job_messages: dict[int, list[dict[str, Any]]] = {}
        self.running_jobs: dict[str, tuple[int, int]] = {}
        self.calls: list[tuple[str, str, int]] = []
        # Every routed request's answer: (method, path with query, status, JSON body or None).
        self.answers: list[tuple[str, str, int, Any]] = []
        self.installation_tokens: dict[str, int] = {}
        # REST calls spent in the current rate-limit window, per quota owner (`quota_owner`).
        self.rate_used: dict[str, int] = {}
        self.rate_reset = int(time.time()) + 3600
        # Every REST answer's rate-limit headers: (method, path with query, headers).
        self.rate_headers: list[tuple[str, str, dict[str, str]]] = []
        self.app_jwts: list[str] = []
        self._issued: list[str] = []
        self.lock = threading.RLock()
        self._stopping = threading.Event()
        self._next_id = 1

    @property
    def releases_url(self) -> str:
        """Return a garm-agent releases index (GARM's `garm_agent_releases_url`)."""
        return f"{self.url}{RELEASES}"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """Return the request handler bound to this fake."""
        return type("Handler", (_Handler,), {"github": self})

    def stop(self) -> None:
        """Stop serving; held long polls end at once."""
        self._stopping.set()
        super().stop()

    def drop_scale_set(self, scale_set_id: int) -> None:
        """Forget a scale set, as GitHub does with one whose listener stayed offline for days."""
        with self.lock:
            self.scale_sets.pop(scale_set_id, None)

    def set_waiting_jobs(self, scale_set_id: int, count: int) -> None:
        """Have `count` jobs assigned to the scale set that no runner runs yet.

        Its statistics (the scale-set lookup's `statistics`) count them as assigned jobs
        beside the running ones.
        """
        with self.lock:
            self.waiting_jobs[scale_set_id] = count

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        """`RunnerScaleSetStatistic` of a scale set, from what the fake holds.

        Registered runners are its JIT runners not yet gone; busy ones run a job; idle ones are
        the others GitHub shows online. Assigned jobs are the waiting ones and the running ones
        (all acquired: GARM acquires what it is offered), none left available.
        """
        with self.lock:
            mine = [r for r in self.runners.values() if r.get("runnerScaleSetId") == scale_set_id]
            busy = sum(1 for r in mine if r["name"] in self.running_jobs)
            online = sum(1 for r in mine if r.get("status", "online") == "online")
            running = sum(1 for owner, _ in self.running_jobs.values() if owner == scale_set_id)
            assigned = running + self.waiting_jobs.get(scale_set_id, 0)
        return {
            "totalAvailableJobs": 0,
            "totalAcquiredJobs": assigned,
            "totalAssignedJobs": assigned,
            "totalRunningJobs": running,
            "totalRegisteredRunners": len(mine),
            "totalBusyRunners": busy,
            "totalIdleRunners": max(online - busy, 0),
        }

    def set_assigned_jobs(self, scale_set_id: int, count: int) -> None:
        """Make the next message-queue poll report `count` assigned jobs (desired runners)."""
        with self.lock:
            self.assigned_jobs[scale_set_id] = count

    def start_job(self, scale_set_id: int, runner_name: str) -> int:
        """Start a job on a runner: the next poll says `JobStarted`, the agent turns busy.

        Args:
            scale_set_id: GitHub's id of the runner's scale set.
            runner_name: the runner (GARM's instance name).

        Returns:
            The job's runner request id.
        """
        with self.lock:
            request_id = self.new_id()
            self.running_jobs[runner_name] = (scale_set_id, request_id)
            self._queue_job(scale_set_id, "JobStarted", request_id, runner_name)
        return request_id

    def set_offline(self, runner_name: str, offline: bool = True) -> None:
        """Show the runner offline (its agent lost GitHub, as after an outage) or online again.

        Both the REST runner list and the Actions service's agents list show it.
        """
        with self.lock:
            for runner in self.runners.values():
                if runner["name"] == runner_name:
                    runner["status"] = "offline" if offline else "online"

    def finish_job(self, runner_name: str) -> None:
        """Finish the runner's job as GitHub does with an ephemeral runner.

        The runner leaves the agents list, and the scale set's next poll says `JobCompleted`.
        A disabled scale set has no listener polling, so GARM then learns of it only from its
        periodic agents-list consolidation.
        """
        with self.lock:
            scale_set_id, request_id = self.running_jobs.pop(runner_name)
            self._queue_job(scale_set_id, "JobCompleted", request_id, runner_name)
            for agent_id, runner in list(self.runners.items()):
                if runner["name"] == runner_name:
                    del self.runners[agent_id]

    def _queue_job(self, scale_set_id: int, kind: str, request_id: int, runner: str) -> None:
        """Queue a job message with the fields GitHub's client declares for its type.

        docs/reference/github-actions-service.md: `JobMessageBase`, `JobStarted`,
        `JobCompleted`.
        """
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        message: dict[str, Any] = {
            "messageType": kind,
            "runnerRequestId": request_id,
            "repositoryName": "fake-repo",
            "ownerName": "fake-org",
            "jobId": str(request_id),
            "jobWorkflowRef": "fake-org/fake-repo/.github/workflows/ci.yaml@refs/heads/main",
            "jobDisplayName": "fake job",
            "workflowRunId": request_id,
            "eventName": "push",
            "requestLabels": [],
            "queueTime": now,
            "scaleSetAssignTime": now,
            "runnerAssignTime": now,
            "finishTime": now if kind == "JobCompleted" else _GO_ZERO_TIME,
            "runnerId": next(
                (agent for agent, r in self.runners.items() if r["name"] == runner), 0
            ),
            "runnerName": runner,
        }
        if kind == "JobCompleted":
            message["result"] = "succeeded"
        self.job_messages.setdefault(scale_set_id, []).append(message)

    def new_id(self) -> int:
        """Return a fresh GitHub-side id."""
        with self.lock:
            self._next_id += 1
            return self._next_id - 1

    def authorised(self, header: str) -> bool:
        """Return whether a REST call carries the PAT or an installation token we issued.

        GARM sends `Bearer <PAT>` for PAT credentials and `token <installation token>` for
        GitHub App credentials; either scheme is accepted with either token.
        """
        token = header.split(" ", 1)[-1]
        with self.lock:
            return token == self.config.token or token in self.installation_tokens

    def quota_owner(self, header: str) -> str:
        """Whose REST quota a call spends, from its `Authorization` header.

        `installation-<id>` for an installation token (GitHub gives each App installation its
        own quota), `pat` for the PAT, `app` for anything else (an App's JWT).
        """
        token = header.split(" ", 1)[-1]
        with self.lock:
            installation = self.installation_tokens.get(token)
        if installation is not None:
            return f"installation-{installation}"
        return "pat" if token == self.config.token else "app"

    def spend(self, owner: str, count: int) -> None:
        """Spend `count` of `owner`'s REST quota (GARM's own calls, in a test's story)."""
        with self.lock:
            self._roll_window()
            self.rate_used[owner] = self.rate_used.get(owner, 0) + count

    def rate(self, owner: str) -> dict[str, int]:
        """`owner`'s rate limit now, as `GET /rate_limit` shows the core resource."""
        with self.lock:
            self._roll_window()
            limit = self.config.rate_limit
            used = min(self.rate_used.get(owner, 0), limit)
            return {
                "limit": limit,
                "used": used,
                "remaining": limit - used,
                "reset": self.rate_reset,
            }

    def _roll_window(self) -> None:
        if time.time() >= self.rate_reset:
            self.rate_used.clear()
            self.rate_reset = int(time.time()) + 3600

    def issue_jwt(self, claims: dict[str, Any] | None = None) -> str:
        """Return a new JWT (see `jwt`) and remember it as issued."""
        token = jwt(claims)
        with self.lock:
            self._issued.append(token)
        return token

    def issue_installation_token(self, installation_id: int) -> str:
        """Return a new installation access token for `installation_id` and remember it."""
        token = f"ghs_{secrets.token_urlsafe(27)}"
        with self.lock:
            self.installation_tokens[token] = installation_id
            self._issued.append(token)
        return token

    def issued_tokens(self) -> list[str]:
        """Return every secret GARM got from or sent to this fake, oldest first.

        That is the PAT, the installation tokens, registration and runner-registration tokens,
        message-queue tokens and the App JWTs GARM signed with its private key: a test can
        search GARM's output for each of them.
        """
        with self.lock:
            return [self.config.token, *self._issued, *self.app_jwts]

    def wait(self, seconds: float) -> None:
        """Hold an answer for `seconds` (ends early when stopping)."""
        if seconds:
            self._stopping.wait(seconds)

    def hold_poll(self) -> None:
        """Hold an empty long poll (bounded; ends early when stopping)."""
        self._stopping.wait(self.config.longpoll_seconds)


def jwt(claims: dict[str, Any] | None = None) -> str:
    """Return an HS256 JWT with an `exp` claim (GARM parses but never verifies these)."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    body = {"exp": int(time.time()) + _TOKEN_SECONDS} | (claims or {})
    signing_input = f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(body)}"
    signature = hmac.new(b"fake", signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def _expires() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + _TOKEN_SECONDS))


# -- REST --------------------------------------------------------------------------------------


def rate_limit(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """G1: a rate limit with `resources.core` (without it GARM crashes); it spends nothing."""
    core = gh.rate(gh.quota_owner(params["authorization"]))
    return Answer(200, {"resources": {"core": core}, "rate": core})


def rate_limit_headers(core: dict[str, int]) -> dict[str, str]:
    """The `X-RateLimit-*` headers GitHub sends with every REST answer, for a rate limit.

    GARM records them after each call as the credentials' rate limit: without them it shows a
    zero rate (`{"reset": -62135596800}`), which GitHub never sends. The charm reads them to
    keep a reserve of the quota for GARM.
    """
    return {
        "X-RateLimit-Limit": str(core["limit"]),
        "X-RateLimit-Remaining": str(core["remaining"]),
        "X-RateLimit-Used": str(core["used"]),
        "X-RateLimit-Reset": str(core["reset"]),
        "X-RateLimit-Resource": "core",
    }


def downloads(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """G2: runner tools (an empty list would stop all scaling)."""
    tools = [
        {
            "os": os_name,
            "architecture": arch,
            "download_url": f"{gh.url}/_downloads/runner-{os_name}-{arch}.tar.gz",
            "filename": f"runner-{os_name}-{arch}.tar.gz",
            "sha256_checksum": "0" * 64,
        }
        for os_name, arch in (("linux", "x64"), ("linux", "arm64"), ("win", "x64"))
    ]
    return Answer(200, tools)


def registration_token(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """G3: a registration token (a JWT with exp)."""
    return Answer(201, {"token": gh.issue_jwt(), "expires_at": _expires()})


def runner_groups(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """G4: an organization's or enterprise's runner groups, paginated (`per_page`, `page`).

    Each has the fields GitHub's description requires of the entity's kind (an
    organization's group says whether it is inherited from the enterprise, an enterprise's
    does not).
    """
    kind, name = params["entity"].split("/", 1)
    configured = gh.config.runner_groups.items()
    groups = [_runner_group(gh, kind, name, gid, group) for group, gid in configured]
    per_page = int(query.get("per_page", ["30"])[0])
    page = int(query.get("page", ["1"])[0])
    shown = groups[(page - 1) * per_page : page * per_page]
    return Answer(200, {"total_count": len(groups), "runner_groups": shown})


def _runner_group(
    gh: FakeGitHub, kind: str, entity: str, group_id: int, name: str
) -> dict[str, Any]:
    runners = f"{gh.url}{_API}/{kind}/{entity}/actions/runner-groups/{group_id}/runners"
    group: dict[str, Any] = {
        "id": group_id,
        "name": name,
        "visibility": "all",
        "default": group_id == 1,
        "runners_url": runners,
        "allows_public_repositories": False,
    }
    return group | ({"inherited": False} if kind == "orgs" else {})


def repo_runners(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """G5: the REST runner list: every JIT runner issued and not yet gone, paginated.

    An ephemeral runner leaves it when its job ends (`finish_job`) or GARM removes it.
    """
    per_page = int(query.get("per_page", ["30"])[0])
    page = int(query.get("page", ["1"])[0])
    with gh.lock:
        runners = [_rest_runner(gh, r) for r in gh.runners.values()]
    shown = runners[(page - 1) * per_page : page * per_page]
    return Answer(200, {"total_count": len(runners), "runners": shown})


def rest_runner(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """G7: one runner of the REST API by id; 404 once it is gone."""
    with gh.lock:
        runner = gh.runners.get(int(params["runner"]))
        found = None if runner is None else _rest_runner(gh, runner)
    return Answer(404, {"message": "Not Found"}) if found is None else Answer(200, found)


def _rest_runner(gh: FakeGitHub, runner: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": runner["id"],
        "name": runner["name"],
        "os": "Linux",
        "status": runner.get("status", "online"),
        "busy": runner["name"] in gh.running_jobs,
        "ephemeral": True,
        "labels": [],
    }


def runner_registration(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """R2: the Actions-service URL and its token."""
    return Answer(200, {"url": f"{gh.url}{PIPELINE}/", "token": gh.issue_jwt()})


def installation_token(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """G6: an installation access token for a GitHub App, given the App's RS256 JWT.

    GARM's App transport signs a JWT (`iss` = app id) with the credentials' private key and
    sends it as `Bearer`; it then calls the REST API with `token <installation token>`.
    """
    app_jwt = params.get("authorization", "").removeprefix("Bearer ")
    claims = _claims(app_jwt, "RS256")
    if claims is None or (
        gh.config.app_id is not None and str(claims.get("iss")) != str(gh.config.app_id)
    ):
        return Answer(401, {"message": "A JSON web token could not be decoded"})
    with gh.lock:
        gh.app_jwts.append(app_jwt)
    token = gh.issue_installation_token(int(params["installation"]))
    return Answer(201, {"token": token, "expires_at": _expires()})


def garm_agent_releases(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """GARM's garm-agent releases index: one release without assets (nothing to download).

    GARM validates the URL synchronously on `PUT /controller` (a non-empty list whose entries
    have `tag_name`) and its cache worker reads it in the background.
    """
    release = {
        "tag_name": "v0.0.0-fake",
        "name": "fake garm-agent",
        "tarball_url": f"{gh.url}/_downloads/garm-agent.tar.gz",
        "assets": [],
        "prerelease": False,
        "body": "",
    }
    return Answer(200, [release])


def _claims(token: str, alg: str) -> dict[str, Any] | None:
    """Return the claims of a three-part JWT signed with `alg` (unverified), else None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header, claims = (
            json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
            for part in parts[:2]
        )
    except ValueError:
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return None
    header_dict = cast("dict[str, Any]", header)
    return cast("dict[str, Any]", claims) if header_dict.get("alg") == alg else None


# -- Actions service ---------------------------------------------------------------------------


def find_scale_sets(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A1: look a scale set up by name and runner group, with its statistics."""
    name = query.get("name", [""])[0]
    group = int(query.get("runnerGroupId", ["1"])[0] or 1)
    with gh.lock:
        found = [
            s | {"statistics": gh.statistics(s["id"])}
            for s in gh.scale_sets.values()
            if s["name"] == name and s["runnerGroupId"] == group
        ]
    return Answer(200, {"count": len(found), "value": found})


def create_scale_set(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A2: create a scale set (400 for a too-long name, 409 for a duplicate)."""
    name = str(body.get("name", ""))
    group = int(body.get("runnerGroupId", 1))
    limit = gh.config.max_name_length
    if limit and len(name) > limit:
        message = f"fake-github: runner scale set name longer than {limit} characters"
        return Answer(400, exception("ValidationException", message))
    with gh.lock:
        if any(s["name"] == name and s["runnerGroupId"] == group for s in gh.scale_sets.values()):
            message = f"fake-github: scale set {name} already exists in runner group"
            return Answer(409, exception("RunnerScaleSetExistsException", message))
        record = {
            "id": gh.new_id(),
            "name": name,
            "runnerGroupId": group,
            "labels": body.get("labels", []),
        }
        gh.scale_sets[record["id"]] = record
    return Answer(200, record)


def patch_scale_set(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A3: rename or regroup a scale set."""
    with gh.lock:
        record = gh.scale_sets.get(int(params["id"]))
        if record is None:
            return Answer(404, _NO_SCALE_SET)
        if body.get("name"):
            limit = gh.config.max_name_length
            if limit and len(body["name"]) > limit:
                message = f"fake-github: scale set name longer than {limit} characters"
                return Answer(400, exception("ValidationException", message))
            record["name"] = body["name"]
        if body.get("runnerGroupId"):
            record["runnerGroupId"] = body["runnerGroupId"]
    return Answer(200, record)


def delete_scale_set(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A4: delete a scale set; GARM only treats 204 as success; an unknown id is 404."""
    if gh.config.delete_status == 204:
        with gh.lock:
            if gh.scale_sets.pop(int(params["id"]), None) is None:
                return Answer(404, _NO_SCALE_SET)
    status = gh.config.delete_status
    return Answer(status, None if status == 204 else exception("ServiceException", "fake"))


def find_runner_group(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A5: look a runner group up by name."""
    name = query.get("groupName", [""])[0]
    gid = gh.config.runner_groups.get(name)
    found = (
        [] if gid is None else [{"id": gid, "name": name, "size": 0, "isDefaultGroup": gid == 1}]
    )
    return Answer(200, {"count": len(found), "value": found})


def create_session(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A6/A7: open or refresh a message session (404 for a scale set GitHub does not have)."""
    scale_set_id = int(params["id"])
    session_id = params.get("session") or str(uuid.uuid4())
    with gh.lock:
        if scale_set_id not in gh.scale_sets:
            return Answer(404, _NO_SCALE_SET)
        gh.sessions[session_id] = scale_set_id
    return Answer(200, _session(gh, scale_set_id, session_id))


def delete_session(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A8: close a session (must be 2xx: a 404 crashes GARM)."""
    with gh.lock:
        gh.sessions.pop(params["session"], None)
    return Answer(204)


def jit_config(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A9: issue a JIT runner (listed as an online agent until deleted)."""
    runner = {
        "id": gh.new_id(),
        "name": str(body.get("name", "")),
        "runnerScaleSetId": int(params["id"]),
    }
    with gh.lock:
        gh.runners[runner["id"]] = runner
    encoded = base64.b64encode(json.dumps({".runner": "fake"}).encode()).decode()
    return Answer(200, {"runner": dict(runner), "encodedJITConfig": encoded})


def list_agents(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A10: every issued runner, online and idle."""
    with gh.lock:
        agents = [_agent(gh, r) for r in gh.runners.values()]
    return Answer(200, {"count": len(agents), "value": agents})


def get_agent(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A11: one agent."""
    with gh.lock:
        runner = gh.runners.get(int(params["agent"]))
    return Answer(404, _NO_AGENT) if runner is None else Answer(200, _agent(gh, runner))


def delete_agent(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A12: remove an agent; 404 for one already gone (its job ended, or removed before).

    An agent running a job is kept and the DELETE answers 400 (`JOB_STILL_RUNNING`) unless
    `refuse_busy_removal` is off.
    """
    agent_id = int(params["agent"])
    with gh.lock:
        runner = gh.runners.get(agent_id)
        if runner is None:
            return Answer(404, _NO_AGENT)
        if gh.config.refuse_busy_removal and runner["name"] in gh.running_jobs:
            return Answer(400, JOB_STILL_RUNNING)
        del gh.runners[agent_id]
    return Answer(204)


def acquire_jobs(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """A13: acquire whatever GARM asks for."""
    ids = cast("list[int]", body or [])
    return Answer(200, {"count": len(ids), "value": ids})


def poll_messages(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """Q1: a message when the assigned-job count changed or jobs started or ended, else 202.

    Without an explicit count, the assigned jobs are the jobs running on the scale set.
    """
    scale_set_id = int(params["id"])
    with gh.lock:
        if scale_set_id not in gh.scale_sets:
            return Answer(404, _NO_SCALE_SET)
        assigned = gh.assigned_jobs.pop(scale_set_id, None)
        jobs = gh.job_messages.pop(scale_set_id, [])
        running = sum(1 for owner, _ in gh.running_jobs.values() if owner == scale_set_id)
    if assigned is None and not jobs:
        gh.hold_poll()
        return Answer(202)
    assigned = running if assigned is None else assigned
    statistics = _statistics(assigned)
    message = {
        "messageId": gh.new_id(),
        "messageType": "RunnerScaleSetJobMessages",
        "body": json.dumps(jobs),
    }
    return Answer(200, message | {"statistics": statistics})


def ack_message(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> Answer:
    """Q2: acknowledge a message."""
    return Answer(204)


def _session(gh: FakeGitHub, scale_set_id: int, session_id: str) -> dict[str, Any]:
    return {
        "sessionId": session_id,
        "ownerName": "garm",
        "runnerScaleSet": {
            "id": scale_set_id,
            "name": gh.scale_sets.get(scale_set_id, {}).get("name", ""),
        },
        "messageQueueUrl": f"{gh.url}/msgq/{scale_set_id}",
        "messageQueueAccessToken": gh.issue_jwt(),
        "statistics": _statistics(0),
    }


def _statistics(assigned: int) -> dict[str, int]:
    """`RunnerScaleSetStatistic`: every count, the assigned jobs as given."""
    counts = ("Available", "Acquired", "Assigned", "Running", "Registered", "Busy", "Idle")
    keys = [f"total{c}Jobs" for c in counts[:4]] + [f"total{c}Runners" for c in counts[4:]]
    return {key: assigned if key == "totalAssignedJobs" else 0 for key in keys}


def _agent(gh: FakeGitHub, runner: dict[str, Any]) -> dict[str, Any]:
    busy = runner["name"] in gh.running_jobs
    return runner | {"status": runner.get("status", "online"), "busy": busy, "labels": []}


_API = r"/api/v3"
_APP_TOKENS = _API + r"/app/installations/(?P<installation>\d+)/access_tokens"
RELEASES = "/repos/cloudbase/garm-agent/releases"
_ENTITY = r"/(?P<entity>repos/[^/]+/[^/]+|orgs/[^/]+|enterprises/[^/]+)"
_SETS = PIPELINE + r"/_apis/runtime/runnerscalesets"
_AGENTS = PIPELINE + r"/_apis/distributedtask/pools/0/agents"

ROUTES: list[Route] = [
    (m, re.compile(f"^{p}/?$"), h)
    for m, p, h in (
        ("GET", _API + r"/rate_limit", rate_limit),
        ("POST", _APP_TOKENS, installation_token),
        ("GET", RELEASES, garm_agent_releases),
        ("GET", _API + _ENTITY + r"/actions/runners/downloads", downloads),
        ("POST", _API + _ENTITY + r"/actions/runners/registration-token", registration_token),
        ("GET", _API + _ENTITY + r"/actions/runner-groups", runner_groups),
        ("GET", _API + _ENTITY + r"/actions/runners", repo_runners),
        ("GET", _API + _ENTITY + r"/actions/runners/(?P<runner>\d+)", rest_runner),
        ("POST", r"/actions/runner-registration", runner_registration),
        ("GET", _SETS, find_scale_sets),
        ("POST", _SETS, create_scale_set),
        ("PATCH", _SETS + r"/(?P<id>\d+)", patch_scale_set),
        ("DELETE", _SETS + r"/(?P<id>\d+)", delete_scale_set),
        ("GET", PIPELINE + r"/_apis/runtime/runnergroups", find_runner_group),
        ("POST", _SETS + r"/(?P<id>\d+)/sessions", create_session),
        ("PATCH", _SETS + r"/(?P<id>\d+)/sessions/(?P<session>[^/]+)", create_session),
        ("DELETE", _SETS + r"/(?P<id>\d+)/sessions/(?P<session>[^/]+)", delete_session),
        ("POST", _SETS + r"/(?P<id>\d+)/generatejitconfig", jit_config),
        ("POST", _SETS + r"/(?P<id>\d+)/acquirejobs", acquire_jobs),
        ("GET", _AGENTS, list_agents),
        ("GET", _AGENTS + r"/(?P<agent>\d+)", get_agent),
        ("DELETE", _AGENTS + r"/(?P<agent>\d+)", delete_agent),
        ("GET", r"/msgq/(?P<id>\d+)", poll_messages),
        ("DELETE", r"/msgq/(?P<id>\d+)/(?P<message>\d+)", ack_message),
    )
]


_APP_TOKENS_PATH = re.compile(f"^{_APP_TOKENS}/?$")


class _Handler(BaseHTTPRequestHandler):
    github: FakeGitHub

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: `FakeGitHub.calls` is the record."""

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        fault = self._fault(method, parts.path)
        if fault is not None:
            self._serve_fault(method, fault)
            return
        answer = self._answer(method, parts.path, raw, parse_qs(parts.query))
        with self.github.lock:
            self.github.calls.append((method, self.path, answer.status))
            self.github.answers.append((method, self.path, answer.status, answer.body))
        payload = b"" if answer.body is None else json.dumps(answer.body).encode()
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if parts.path.startswith(_API):
                headers = rate_limit_headers(self._spend(method, parts.path))
                with self.github.lock:
                    self.github.rate_headers.append((method, self.path, headers))
                for name, value in headers.items():
                    self.send_header(name, value)
            self.end_headers()
            self._write(payload, parts.path)
        except (BrokenPipeError, ConnectionResetError):
            # GARM closed a held long poll (stopping, or a listener restart): nobody to answer.
            self.close_connection = True

    def _spend(self, method: str, path: str) -> dict[str, int]:
        """Spend one of the caller's REST quota (not for `GET /rate_limit`); its rate after."""
        owner = self.github.quota_owner(self.headers.get("Authorization", ""))
        if not (method == "GET" and path.rstrip("/") == f"{_API}/rate_limit"):
            self.github.spend(owner, 1)
        return self.github.rate(owner)

    def _write(self, payload: bytes, path: str) -> None:
        """Send the body at once, or dripping (`FakeGitHubConfig.drip_seconds`) until stopped."""
        config = self.github.config
        drip = config.drip_seconds
        dripping = not config.drip_paths or any(map(path.endswith, config.drip_paths))
        if drip <= 0 or not dripping:
            self.wfile.write(payload)
            return
        for index in range(len(payload)):
            if self.github._stopping.wait(drip):
                return
            self.wfile.write(payload[index : index + 1])
            self.wfile.flush()

    def _fault(self, method: str, path: str) -> Fault | None:
        with self.github.lock:
            faults = list(self.github.faults)
        return next((f for f in faults if f.method == method and re.fullmatch(f.path, path)), None)

    def _serve_fault(self, method: str, fault: Fault) -> None:
        with self.github.lock:
            self.github.calls.append((method, self.path, fault.status))
        payload = b"" if fault.body is None else json.dumps(fault.body).encode()
        self.github.wait(fault.delay_seconds)
        try:
            self.send_response(fault.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in fault.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.flush()
            self.github.wait(fault.stall_seconds)
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _answer(self, method: str, path: str, raw: bytes, query: dict[str, list[str]]) -> Answer:
        authorization = self.headers.get("Authorization", "")
        # The App token exchange authenticates with the App's JWT, not with a token we issued.
        is_rest = path.startswith(_API) and not _APP_TOKENS_PATH.match(path)
        if is_rest and not self.github.authorised(authorization):
            return Answer(401, {"message": "Bad credentials"})
        if is_rest and any(
            path.startswith(f"{_API}/{entity}/") for entity in self.github.config.hidden
        ):
            return Answer(404, {"message": "Not Found"})
        body = json.loads(raw.decode("utf-8-sig")) if raw.strip() else {}
        for route_method, pattern, handler in ROUTES:
            found = pattern.match(path)
            if found and route_method == method:
                params = found.groupdict() | {"authorization": authorization}
                return handler(self.github, params, body, query)
        return Answer(404, {"message": "Not Found"})
