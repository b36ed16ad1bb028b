"""Asks GitHub which busy runners of retired scale sets it no longer lists (ADR 0015).

A retired (disabled) scale set has no message listener in GARM, so GARM learns that a runner's
job ended only at its 5-minute consolidation (garm-behaviour, "A finished job on a retired scale
set is noticed late"). GitHub deletes an ephemeral runner when its job ends; asking GitHub lets
the charm remove the runner, and delete the emptied scale set, a few minutes sooner.

One job: given busy runners, answer with the names of those GitHub positively no longer lists.
The calls go to the API base URL of GARM's `github.com` endpoint (so a GitHub Enterprise Server
endpoint is asked where GARM asks it), as the entity's GitHub App installation, through the
model's proxy, with short timeouts and one time budget for the whole pass: a read timeout bounds
one read only, so an answer dripping a byte at a time would hold the hook for minutes. Any doubt
(no App for the entity, GitHub unreachable, a refusal, an unexpected answer, the budget spent)
leaves the runner out: GARM or the drain deadline removes it.
`cryptography` and `requests` are imported only when there is something to ask.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

from garm_api import GarmApiError
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github_objects import GithubApp
from scaleset_reconciler.plan import BusyRunner, entity_key
from workload.config import ProxyConfig

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 5.0
READ_TIMEOUT_SECONDS = 10.0
# All of one pass's GitHub calls, together: a hook (or tick) must not wait on GitHub for longer.
# Far above what a pass needs (a token, a list probe and one GET per runner, each well under a
# second) and under the default reconcile-interval (1m).
BUDGET_SECONDS = 30.0
# GitHub accepts an App JWT issued at most 10 minutes ahead of its expiry; back-dating `iat`
# allows for a clock behind GitHub's.
JWT_BACKDATE_SECONDS = 60
JWT_LIFETIME_SECONDS = 540
GITHUB_ENDPOINT = "github.com"
_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
_PATHS = {
    EntityKind.REPOSITORY: "repos",
    EntityKind.ORGANIZATION: "orgs",
    EntityKind.ENTERPRISE: "enterprises",
}


class GithubUnavailable(Exception):
    """GitHub did not answer, refused, or answered something unexpected (no secrets inside)."""


@dataclasses.dataclass(frozen=True)
class RunnerCheck:
    """Asks GitHub about busy runners; called as `finished_at_github` by the reconciler.

    Attributes:
        endpoint: returns GARM's `github.com` endpoint (None: none); called only when asked.
        apps: the GitHub App of each entity, keyed by `scaleset_reconciler.plan.entity_key`.
        proxy: the model's proxy.
        clock: seconds since the epoch, for the App's JWT.
        budget_seconds: how long the whole pass may wait on GitHub; the runners not confirmed
            by then are left out (unknown), never named.
    """

    endpoint: Callable[[], GithubEndpoint | None]
    apps: Mapping[tuple[EntityKind, str], GithubApp]
    proxy: ProxyConfig
    clock: Callable[[], float] = time.time
    budget_seconds: float = BUDGET_SECONDS

    def __call__(self, runners: Sequence[BusyRunner]) -> frozenset[str]:
        """Return the names of `runners` that GitHub no longer lists; never raises for GitHub.

        Raises:
            GarmUnreachable: GARM did not answer when asked for its endpoint.
        """
        try:
            endpoint = self.endpoint()
        except GarmApiError as error:
            logger.warning("GitHub runners: GARM refused its endpoints: %s", error)
            return frozenset()
        if endpoint is None or not endpoint.api_base_url:
            logger.warning("GitHub runners: GARM has no %s endpoint to ask", GITHUB_ENDPOINT)
            return frozenset()
        by_entity: dict[tuple[EntityKind, str], list[BusyRunner]] = {}
        for runner in runners:
            by_entity.setdefault(entity_key(runner.entity_kind, runner.entity_name), []).append(
                runner
            )
        return self._within_budget(endpoint, by_entity)

    def _within_budget(
        self,
        endpoint: GithubEndpoint,
        by_entity: Mapping[tuple[EntityKind, str], Sequence[BusyRunner]],
    ) -> frozenset[str]:
        """Ask in a worker thread; at the budget's end, return what GitHub confirmed so far.

        A blocked socket read cannot be interrupted from here, so the worker is a daemon thread
        left to finish (or to die with the hook's process); its later answers are not used.
        """
        progress = _Progress(time.monotonic() + self.budget_seconds)
        failure: list[BaseException] = []

        def ask() -> None:
            try:
                self._ask_each_entity(endpoint, by_entity, progress)
            except BaseException as error:  # re-raised below, in the hook's thread
                failure.append(error)

        worker = threading.Thread(target=ask, name="github-runner-check", daemon=True)
        worker.start()
        worker.join(self.budget_seconds)
        finished = progress.close()
        if failure and not worker.is_alive():
            raise failure[0]  # a bug, not GitHub: it fails the hook as it would without a thread
        return finished

    def _ask_each_entity(
        self,
        endpoint: GithubEndpoint,
        by_entity: Mapping[tuple[EntityKind, str], Sequence[BusyRunner]],
        progress: _Progress,
    ) -> None:
        with _session(endpoint, self.proxy, progress) as http:
            for key, busy in by_entity.items():
                app = self.apps.get(key)
                if app is None:
                    logger.info("GitHub runners: no GitHub App for %s; GARM removes them", key[1])
                    continue
                try:
                    self._finished(http, app, busy, progress)
                except GithubUnavailable as error:
                    logger.warning(
                        "GitHub runners of %s: %s; GARM removes them in time", key[1], error
                    )

    def _finished(
        self, http: _Http, app: GithubApp, busy: Sequence[BusyRunner], progress: _Progress
    ) -> None:
        """Ask about each runner of one entity, once GitHub showed it can see the entity's."""
        token = http.installation_token(app, self.clock())
        entity = _entity_path(busy[0].entity_kind, busy[0].entity_name)
        # A 404 for a repository the installation cannot see would look like a finished job:
        # only a readable runner list makes a runner's 404 mean that the runner is gone.
        http.get(f"{entity}/actions/runners?per_page=1", token, expect=(200,))
        for runner in busy:
            path = f"{entity}/actions/runners/{runner.agent_id}"
            if http.get(path, token, expect=(200, 404)) == 404:
                progress.confirm(runner.name)


class _Progress:
    """The runners GitHub confirmed gone, until the budget's end closes the record.

    Shared by the caller and the worker thread: after `close`, nothing more is recorded and
    every further GitHub call is refused, so a late answer never reaches the plan.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self._lock = threading.Lock()
        self._finished: set[str] = set()
        self._closed = False

    def remaining(self) -> float:
        """Seconds left of the budget (0 once spent or closed).

        Raises:
            GithubUnavailable: the budget is spent: no further call may start.
        """
        with self._lock:
            left = 0.0 if self._closed else self.deadline - time.monotonic()
        if left <= 0:
            raise GithubUnavailable("the time budget for GitHub is spent")
        return left

    def confirm(self, name: str) -> None:
        """Record a runner GitHub no longer lists, unless the budget's end came first."""
        with self._lock:
            if not self._closed:
                self._finished.add(name)

    def close(self) -> frozenset[str]:
        """End the pass: the runners confirmed so far; the others stay unknown."""
        with self._lock:
            if not self._closed and time.monotonic() >= self.deadline:
                logger.warning(
                    "GitHub runners: GitHub did not answer within the pass's time budget; "
                    "the runners not yet confirmed are left to GARM"
                )
            self._closed = True
            return frozenset(self._finished)


def _entity_path(kind: EntityKind, name: str) -> str:
    return "/".join([_PATHS[kind], *(quote(part, safe="") for part in name.split("/"))])


@contextmanager
def _session(
    endpoint: GithubEndpoint, proxy: ProxyConfig, progress: _Progress
) -> Generator[_Http]:
    """A `requests` session for the endpoint: its CA bundle if it has one, the model's proxy."""
    import tempfile  # noqa: PLC0415 - only a pass with busy retired runners pays for these

    import requests  # noqa: PLC0415

    session = requests.Session()
    # The hook's own environment (proxy variables, .netrc, CA overrides) does not apply.
    session.trust_env = False
    session.headers.update(_HEADERS)
    try:
        with tempfile.NamedTemporaryFile(suffix=".pem") as bundle:
            verify: str | bool = True
            if endpoint.ca_cert_bundle:
                bundle.write(endpoint.ca_cert_bundle)
                bundle.flush()
                verify = bundle.name
            yield _Http(session, endpoint.api_base_url.rstrip("/"), proxy, verify, progress)
    finally:
        session.close()


@dataclasses.dataclass(frozen=True)
class _Http:
    session: Any
    base: str
    proxy: ProxyConfig
    verify: str | bool
    progress: _Progress

    def installation_token(self, app: GithubApp, now: float) -> str:
        """Exchange the App's JWT for an installation token (never logged)."""
        url = f"{self.base}/app/installations/{app.installation_id}/access_tokens"
        response = self._send("POST", url, app_jwt(app, now), expect=(201,))
        try:
            token = response.json()["token"]
        except (ValueError, KeyError, TypeError):
            raise GithubUnavailable("the installation token answer has no token") from None
        if not isinstance(token, str) or not token:
            raise GithubUnavailable("the installation token answer has no token")
        return token

    def get(self, path: str, token: str, *, expect: tuple[int, ...]) -> int:
        """GET `path` under the API base URL; return the status, one of `expect`."""
        return self._send("GET", f"{self.base}/{path}", token, expect=expect).status_code

    def _send(self, method: str, url: str, bearer: str, *, expect: tuple[int, ...]) -> Any:
        import requests  # noqa: PLC0415

        left = self.progress.remaining()
        try:
            response = self.session.request(
                method,
                url,
                headers={"Authorization": f"Bearer {bearer}"},
                timeout=(min(CONNECT_TIMEOUT_SECONDS, left), min(READ_TIMEOUT_SECONDS, left)),
                proxies=self.proxy.requests_proxies(url),
                verify=self.verify,
                allow_redirects=False,
            )
        except requests.RequestException as error:
            # requests' messages carry URLs (a proxy's credentials too): name the kind only.
            raise GithubUnavailable(f"no answer ({type(error).__name__})") from None
        if response.status_code not in expect:
            raise GithubUnavailable(f"HTTP {response.status_code} for {method} {_path(url)}")
        return response


def _path(url: str) -> str:
    """The URL's path (no query): what the log may show of a GitHub call."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    return urlsplit(url).path


def app_jwt(app: GithubApp, now: float) -> str:
    """The App's RS256 JWT (`iss` = App id), valid for 9 minutes from a minute ago.

    Raises:
        GithubUnavailable: the private key is not an RSA key in PEM form.
    """
    import base64  # noqa: PLC0415
    import json  # noqa: PLC0415

    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import padding, rsa  # noqa: PLC0415

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    try:
        key = serialization.load_pem_private_key(app.private_key_pem, password=None)
    except (ValueError, TypeError):
        raise GithubUnavailable("the GitHub App's private key is not a PEM key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise GithubUnavailable("the GitHub App's private key is not an RSA key")
    issued = int(now) - JWT_BACKDATE_SECONDS
    claims = {"iat": issued, "exp": issued + JWT_LIFETIME_SECONDS, "iss": str(app.app_id)}
    header = part(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    signing_input = f"{header}.{part(json.dumps(claims).encode())}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{part(signature)}"
