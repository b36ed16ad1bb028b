"""How the charm asks GitHub itself: as an entity's App installation, within one time budget.

Three checks ask GitHub directly, never through GARM (`check.GithubCheck`): which busy runners
of retired scale sets GitHub no longer lists (`runner_checks`, ADR 0015), which scale sets GitHub
no longer has (`scalesets`, ADR 0029), and which idle runners it shows offline
(`offline_runners`, ADR 0040). All go to the API base URL of GARM's `github.com` endpoint (so a
GitHub Enterprise Server endpoint is asked where GARM asks it), trust the endpoint's CA bundle,
go through the model's proxy, use short timeouts and share one time budget per pass: a read
timeout bounds one read only, so an answer dripping a byte at a time would hold the hook for
minutes. Every doubt is a `GithubUnavailable`, and the checks act only on positive evidence.
`cryptography` and `requests` are imported only when there is something to ask.

The calls spend the App installation's REST quota, which GARM needs for scaling and deletions
(ADR 0039): every answer's `X-RateLimit-*` headers are recorded per installation (`Quotas`,
kept between passes), and a call that would leave fewer than `RESERVE_FRACTION` of the limit
is not made (`QuotaReserved`, a `GithubUnavailable`: the check names nothing).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
import time
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, cast
from urllib.parse import quote, urlsplit

from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github_objects import GithubApp
from workload.config import ProxyConfig

logger = logging.getLogger(__name__)
T = TypeVar("T")

CONNECT_TIMEOUT_SECONDS = 5.0
READ_TIMEOUT_SECONDS = 10.0
# GitHub accepts an App JWT issued at most 10 minutes ahead of its expiry; back-dating `iat`
# allows for a clock behind GitHub's.
JWT_BACKDATE_SECONDS = 60
JWT_LIFETIME_SECONDS = 540
_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
_PATHS = {
    EntityKind.REPOSITORY: "repos",
    EntityKind.ORGANIZATION: "orgs",
    EntityKind.ENTERPRISE: "enterprises",
}


# The part of each installation's hourly REST quota the charm leaves to GARM: GARM needs it to
# create and remove runners and scale sets, the charm's checks only make things faster.
RESERVE_FRACTION = 0.25
# GitHub's headers for an installation's REST quota (docs/reference/charm-metrics.md).
LIMIT_HEADER = "x-ratelimit-limit"
REMAINING_HEADER = "x-ratelimit-remaining"
RESET_HEADER = "x-ratelimit-reset"


class GithubUnavailable(Exception):
    """GitHub did not answer, refused, or answered something unexpected (no secrets inside)."""


class QuotaReserved(GithubUnavailable):
    """The call would spend the installation's quota kept for GARM: it is not made."""


@dataclasses.dataclass(frozen=True)
class RateLimit:
    """An installation's REST quota, as GitHub's headers last told it.

    Attributes:
        limit: requests per window (`X-RateLimit-Limit`).
        remaining: requests left in the window (`X-RateLimit-Remaining`).
        reset: when the window ends, Unix seconds (`X-RateLimit-Reset`).
    """

    limit: int
    remaining: int
    reset: int

    @property
    def reserve(self) -> int:
        """The requests left to GARM: `RESERVE_FRACTION` of the limit, rounded up."""
        return math.ceil(self.limit * RESERVE_FRACTION)

    def spares(self, now: float) -> bool:
        """Whether one more call leaves the reserve whole (a window that ended starts afresh)."""
        return now >= self.reset or self.remaining > self.reserve


def rate_limit_of(headers: Mapping[str, str]) -> RateLimit | None:
    """The rate limit an answer's headers state; None when any is missing or not a number."""
    lowered = {str(key).lower(): str(value) for key, value in headers.items()}
    try:
        limit, remaining, reset = (
            int(lowered[name]) for name in (LIMIT_HEADER, REMAINING_HEADER, RESET_HEADER)
        )
    except (KeyError, ValueError):
        return None
    if limit <= 0 or remaining < 0:
        return None
    return RateLimit(limit, remaining, reset)


class Quotas:
    """Each installation's last known REST quota and the checks skipped to keep its reserve.

    Kept between passes (`to_json`), so a pass skips an installation GARM has nearly spent
    without a single call; the first answer of a pass brings the current figures. Shared by the
    hook's thread and the worker that asks GitHub.
    """

    def __init__(self, known: Mapping[int, RateLimit] | None = None, clock: Any = time.time):
        """Start from the figures kept from earlier passes; `clock` gives Unix seconds."""
        self._lock = threading.Lock()
        self._known: dict[int, RateLimit] = dict(known or {})
        self._clock = clock
        self._skipped: dict[int, list[str]] = {}

    def require(self, installation: int) -> None:
        """Refuse a call the installation's reserve cannot spare.

        Raises:
            QuotaReserved: the last known figures leave only the reserve.
        """
        with self._lock:
            known = self._known.get(installation)
        if known is not None and not known.spares(self._clock()):
            raise QuotaReserved(
                f"{known.remaining} of {known.limit} requests left until "
                f"{_iso(known.reset)}, {known.reserve} kept for GARM"
            )

    def record(self, installation: int, headers: Mapping[str, str]) -> None:
        """Keep what an answer's headers say of the installation's quota (nothing if absent)."""
        found = rate_limit_of(headers)
        if found is not None:
            with self._lock:
                self._known[installation] = found

    def skip(self, installation: int, check: str) -> None:
        """Note a check this pass skipped to keep the installation's reserve."""
        with self._lock:
            self._skipped.setdefault(installation, []).append(check)

    def skipped(self) -> dict[int, list[str]]:
        """The checks this pass skipped, per installation."""
        with self._lock:
            return {key: list(value) for key, value in self._skipped.items()}

    def known(self) -> dict[int, RateLimit]:
        """The last known quota of each installation."""
        with self._lock:
            return dict(self._known)

    def rows(self) -> list[dict[str, Any]]:
        """Per installation: its quota, the reserve and what this pass skipped (for operators)."""
        known, skipped = self.known(), self.skipped()
        return [
            {
                "installation": installation,
                "limit": limit.limit,
                "remaining": limit.remaining,
                "reserve": limit.reserve,
                "reset": _iso(limit.reset),
                "skipped": skipped.get(installation, []),
            }
            for installation, limit in sorted(known.items())
        ]

    def to_json(self) -> str:
        """The figures and this pass's skipped checks, as kept in the stored state."""
        known, skipped = self.known(), self.skipped()
        data = {
            str(key): {**dataclasses.asdict(value), "skipped": skipped.get(key, [])}
            for key, value in sorted(known.items())
        }
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, clock: Any = time.time) -> Quotas:
        """The kept figures (their skipped checks too); unreadable ones read as none known."""
        known: dict[int, RateLimit] = {}
        skipped: dict[int, list[str]] = {}
        try:
            loaded: Any = json.loads(text) if text else {}
            for key, value in cast(dict[str, dict[str, Any]], loaded).items():
                fields = {name: int(value[name]) for name in ("limit", "remaining", "reset")}
                known[int(key)] = RateLimit(**fields)
                skipped[int(key)] = [str(item) for item in value.get("skipped", [])]
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls(clock=clock)
        quotas = cls(known, clock)
        quotas._skipped = {key: value for key, value in skipped.items() if value}
        return quotas

    def fresh(self) -> Quotas:
        """The same figures with nothing skipped yet: the start of a new pass."""
        return Quotas(self.known(), self._clock)


def _iso(seconds: int) -> str:
    import datetime  # noqa: PLC0415

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()


class Budget:
    """The time one pass may wait on GitHub; once spent or closed, no further call starts.

    Shared by the hook's thread and the worker that asks GitHub (see `ask_within`).
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.lock = threading.Lock()
        self.closed = False

    def remaining(self) -> float:
        """Seconds left of the budget.

        Raises:
            GithubUnavailable: the budget is spent or closed: no further call may start.
        """
        with self.lock:
            left = 0.0 if self.closed else self.deadline - time.monotonic()
        if left <= 0:
            raise GithubUnavailable("the time budget for GitHub is spent")
        return left

    def close(self) -> bool:
        """End the pass; return whether the budget ran out first (an answer was cut short)."""
        with self.lock:
            spent = not self.closed and time.monotonic() >= self.deadline
            self.closed = True
            return spent


class Findings(Budget, Generic[T]):
    """What GitHub confirmed during a pass, until the budget's end closes the record.

    After `finish`, nothing more is recorded and every further GitHub call is refused, so an
    answer that comes late never reaches the plan.
    """

    def __init__(self, deadline: float, cut_short: str) -> None:
        """Open the record.

        Args:
            deadline: when the budget ends (`time.monotonic()` seconds).
            cut_short: what the log says when the budget ran out before GitHub answered all.
        """
        super().__init__(deadline)
        self._cut_short = cut_short
        self._found: set[T] = set()

    def add(self, item: T) -> None:
        """Record one finding, unless the budget's end came first."""
        with self.lock:
            if not self.closed:
                self._found.add(item)

    def finish(self) -> frozenset[T]:
        """End the pass: the findings so far; what was not confirmed stays unknown."""
        if self.close():
            logger.warning("%s", self._cut_short)
        with self.lock:
            return frozenset(self._found)


def ask_within(budget: Budget, seconds: float, ask: Any, name: str) -> None:
    """Run `ask()` in a worker thread for at most `seconds`, then close the budget.

    A blocked socket read cannot be interrupted from here, so the worker is a daemon thread
    left to finish (or to die with the hook's process); the closed budget refuses its later
    calls, and what it records after `close` is not used.

    Raises:
        BaseException: whatever `ask` raised, if it ended within the time (a bug, not GitHub:
            it fails the hook as it would without a thread).
    """
    failure: list[BaseException] = []

    def run() -> None:
        try:
            ask()
        except BaseException as error:  # re-raised below, in the hook's thread
            failure.append(error)

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    worker.join(seconds)
    if failure and not worker.is_alive():
        raise failure[0]


def entity_path(kind: EntityKind, name: str) -> str:
    """The entity's path under the REST API, e.g. `orgs/acme` or `repos/acme/widgets`."""
    return "/".join([_PATHS[kind], *(quote(part, safe="") for part in name.split("/"))])


@contextmanager
def session(
    endpoint: GithubEndpoint, proxy: ProxyConfig, budget: Budget, quotas: Quotas | None = None
) -> Generator[Http]:
    """A `requests` session for the endpoint: its CA bundle if it has one, the model's proxy.

    `quotas` records what the installations' answers say of their quotas (a throw-away record
    when None).
    """
    import tempfile  # noqa: PLC0415 - only a pass that asks GitHub pays for these

    import requests  # noqa: PLC0415

    http_session = requests.Session()
    # The hook's own environment (proxy variables, .netrc, CA overrides) does not apply.
    http_session.trust_env = False
    http_session.headers.update(_HEADERS)
    try:
        with tempfile.NamedTemporaryFile(suffix=".pem") as bundle:
            verify: str | bool = True
            if endpoint.ca_cert_bundle:
                bundle.write(endpoint.ca_cert_bundle)
                bundle.flush()
                verify = bundle.name
            base = endpoint.api_base_url.rstrip("/")
            yield Http(http_session, base, proxy, verify, budget, quotas or Quotas())
    finally:
        http_session.close()


@dataclasses.dataclass(frozen=True)
class Http:
    """Calls to one GitHub endpoint within the pass's budget; every doubt raises.

    Attributes:
        session: the `requests` session.
        base: the endpoint's API base URL, without a trailing slash.
        proxy: the model's proxy.
        verify: the CA bundle's path, or True for the system's CAs.
        budget: the pass's time budget.
        quotas: the installations' REST quotas.
    """

    session: Any
    base: str
    proxy: ProxyConfig
    verify: str | bool
    budget: Budget
    quotas: Quotas

    def installation_token(self, app: GithubApp, now: float) -> str:
        """Exchange the App's JWT for an installation token (never logged)."""
        url = f"{self.base}/app/installations/{app.installation_id}/access_tokens"
        response = self.send("POST", url, f"Bearer {app_jwt(app, now)}", expect=(201,))
        return string_field(response, "token", "the installation token answer")

    def get(
        self, path: str, token: str, *, expect: tuple[int, ...], installation: int | None = None
    ) -> int:
        """GET `path` under the API base URL; return the status, one of `expect`.

        With `installation` (whose token it is), the call spends its quota (see `send`).
        """
        response = self.send(
            "GET",
            f"{self.base}/{path}",
            f"Bearer {token}",
            expect=expect,
            installation=installation,
        )
        return response.status_code

    def send(
        self,
        method: str,
        url: str,
        authorization: str,
        *,
        expect: tuple[int, ...],
        body: Any = None,
        installation: int | None = None,
    ) -> Any:
        """Send one request to `url` (no redirects); return the response, its status in `expect`.

        With `installation` (the App installation whose token authorises it), the call is made
        only if the installation's reserve can spare it, and the answer's rate-limit headers
        are recorded whatever its status.

        Raises:
            QuotaReserved: the call would spend the installation's reserve for GARM.
            GithubUnavailable: no answer, another status, or the budget is spent.
        """
        import requests  # noqa: PLC0415

        if installation is not None:
            self.quotas.require(installation)
        left = self.budget.remaining()
        try:
            response = self.session.request(
                method,
                url,
                headers={"Authorization": authorization},
                data=None if body is None else json.dumps(body),
                timeout=(min(CONNECT_TIMEOUT_SECONDS, left), min(READ_TIMEOUT_SECONDS, left)),
                proxies=self.proxy.requests_proxies(url),
                verify=self.verify,
                allow_redirects=False,
            )
        except requests.RequestException as error:
            # requests' messages carry URLs (a proxy's credentials too): name the kind only.
            raise GithubUnavailable(f"no answer ({type(error).__name__})") from None
        if installation is not None:
            self.quotas.record(installation, response.headers)
        if response.status_code not in expect:
            raise GithubUnavailable(f"HTTP {response.status_code} for {method} {_path(url)}")
        return response


def json_object(response: Any, what: str) -> dict[str, Any]:
    """The response's JSON object; a UTF-8 byte order mark before it is allowed.

    GARM strips one from the Actions service's answers, so the charm does too.

    Raises:
        GithubUnavailable: the body is not a JSON object.
    """
    try:
        loaded: Any = json.loads(response.content.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        raise GithubUnavailable(f"{what} is not JSON") from None
    if not isinstance(loaded, dict):
        raise GithubUnavailable(f"{what} is not a JSON object")
    return dict(loaded)  # pyright: ignore[reportUnknownArgumentType]


def string_field(response: Any, key: str, what: str) -> str:
    """The non-empty string `key` of the response's JSON object (a token, a URL).

    Raises:
        GithubUnavailable: the body is not a JSON object or has no such string.
    """
    value = json_object(response, what).get(key)
    if not isinstance(value, str) or not value:
        raise GithubUnavailable(f"{what} has no {key}")
    return value


def _path(url: str) -> str:
    """The URL's path (no query): what the log may show of a GitHub call."""
    return urlsplit(url).path


def app_jwt(app: GithubApp, now: float) -> str:
    """The App's RS256 JWT (`iss` = App id), valid for 9 minutes from a minute ago.

    Raises:
        GithubUnavailable: the private key is not an RSA key in PEM form.
    """
    import base64  # noqa: PLC0415

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
