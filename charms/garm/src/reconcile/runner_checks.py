"""Asks GitHub which busy runners of retired scale sets it no longer lists (ADR 0015).

A retired (disabled) scale set has no message listener in GARM, so GARM learns that a runner's
job ended only at its 5-minute consolidation (garm-behaviour, "A finished job on a retired scale
set is noticed late"). GitHub deletes an ephemeral runner when its job ends; asking GitHub lets
the charm remove the runner, and delete the emptied scale set, a few minutes sooner.

One job: given busy runners, answer with the names of those GitHub positively no longer lists.
The calls go to the API base URL of GARM's `github.com` endpoint (so a GitHub Enterprise Server
endpoint is asked where GARM asks it), as the entity's GitHub App installation, through the
model's proxy, with short timeouts. Any doubt (no App for the entity, GitHub unreachable, a
refusal, an unexpected answer) leaves the runner out: GARM or the drain deadline removes it.
`cryptography` and `requests` are imported only when there is something to ask.
"""

from __future__ import annotations

import dataclasses
import logging
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
    """

    endpoint: Callable[[], GithubEndpoint | None]
    apps: Mapping[tuple[EntityKind, str], GithubApp]
    proxy: ProxyConfig
    clock: Callable[[], float] = time.time

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
        finished: set[str] = set()
        with _session(endpoint, self.proxy) as http:
            for key, busy in by_entity.items():
                app = self.apps.get(key)
                if app is None:
                    logger.info("GitHub runners: no GitHub App for %s; GARM removes them", key[1])
                    continue
                try:
                    finished |= self._finished(http, app, busy)
                except GithubUnavailable as error:
                    logger.warning(
                        "GitHub runners of %s: %s; GARM removes them in time", key[1], error
                    )
        return frozenset(finished)

    def _finished(self, http: _Http, app: GithubApp, busy: Sequence[BusyRunner]) -> set[str]:
        """Ask about each runner of one entity, once GitHub showed it can see the entity's."""
        token = http.installation_token(app, self.clock())
        entity = _entity_path(busy[0].entity_kind, busy[0].entity_name)
        # A 404 for a repository the installation cannot see would look like a finished job:
        # only a readable runner list makes a runner's 404 mean that the runner is gone.
        http.get(f"{entity}/actions/runners?per_page=1", token, expect=(200,))
        return {
            runner.name
            for runner in busy
            if http.get(f"{entity}/actions/runners/{runner.agent_id}", token, expect=(200, 404))
            == 404
        }


def _entity_path(kind: EntityKind, name: str) -> str:
    return "/".join([_PATHS[kind], *(quote(part, safe="") for part in name.split("/"))])


@contextmanager
def _session(endpoint: GithubEndpoint, proxy: ProxyConfig) -> Generator[_Http]:
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
            yield _Http(session, endpoint.api_base_url.rstrip("/"), proxy, verify)
    finally:
        session.close()


@dataclasses.dataclass(frozen=True)
class _Http:
    session: Any
    base: str
    proxy: ProxyConfig
    verify: str | bool

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

        try:
            response = self.session.request(
                method,
                url,
                headers={"Authorization": f"Bearer {bearer}"},
                timeout=(CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS),
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
