"""What the three checks that ask GitHub share: GARM's endpoint, the entities, one budget.

`runner_checks.RunnerCheck` (ADR 0015), `scalesets.ScaleSetCheck` (ADR 0029) and
`offline_runners.OfflineCheck` (ADR 0040) each ask GitHub about some of GARM's objects, the
same way (ADR 0046): GARM's `github.com` endpoint first (refused, missing or without an API
URL: nothing is asked); the objects grouped by entity; one worker thread, within one time
budget (`http.ask_within`); per entity, its App installation's quota checked (ADR 0039) and a
token taken. An entity without an App, one whose quota is kept for GARM, and one GitHub did
not answer for are logged and left out. A check says only what it asks one entity
(`_ask_entity`) and what it makes of what GitHub confirmed (`_confirmed`).
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, Generic, Protocol, TypeVar

from garm_api import GarmApiError
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github.http import (
    Findings,
    GithubUnavailable,
    Http,
    QuotaReserved,
    Quotas,
    ask_within,
    session,
)
from reconcile.github_objects import GithubApp
from scaleset_reconciler.needs import entity_key
from workload.config import ProxyConfig

logger = logging.getLogger(__name__)

# All of one pass's GitHub calls, together: a hook (or tick) must not wait on GitHub for longer.
# Far above what a pass needs (a token, a list probe and one GET per runner, each well under a
# second) and under the default reconcile-interval (1m).
BUDGET_SECONDS = 30.0
GITHUB_ENDPOINT = "github.com"

EntityKey = tuple[EntityKind, str]


class OfEntity(Protocol):
    """What a check asks about: something of one entity (a runner, a scale set)."""

    @property
    def entity_kind(self) -> EntityKind:
        """The entity's kind."""
        ...

    @property
    def entity_name(self) -> str:
        """The entity's name (`owner/repo` for a repository)."""
        ...


ItemT = TypeVar("ItemT", bound=OfEntity)
FoundT = TypeVar("FoundT")


@dataclasses.dataclass(frozen=True)
class Installation:
    """One entity's App installation, as a check asks GitHub with it.

    Attributes:
        http: the pass's session with GitHub (budget, proxy, CA bundle, quotas).
        endpoint: GARM's `github.com` endpoint.
        app: the entity's GitHub App installation.
        token: the installation's access token, taken for this check.
    """

    http: Http
    endpoint: GithubEndpoint
    app: GithubApp
    token: str = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True)
class GithubCheck(abc.ABC, Generic[ItemT, FoundT]):
    """A check that asks GitHub about items of GARM's entities; never raises for GitHub.

    Attributes:
        endpoint: returns GARM's `github.com` endpoint (None: none); called only when asked.
        apps: the GitHub App of each entity, keyed by `scaleset_reconciler.needs.entity_key`.
        proxy: the model's proxy.
        clock: seconds since the epoch, for the App's JWT.
        budget_seconds: how long the whole pass may wait on GitHub; what is not confirmed by
            then is left out (unknown), never named.
        quotas: the installations' REST quotas; an entity whose installation's reserve for
            GARM cannot spare a call is not asked (ADR 0039).
    """

    endpoint: Callable[[], GithubEndpoint | None]
    apps: Mapping[EntityKey, GithubApp]
    proxy: ProxyConfig
    clock: Callable[[], float] = time.time
    budget_seconds: float = BUDGET_SECONDS
    quotas: Quotas = dataclasses.field(default_factory=Quotas)

    # How each check words its log lines and names its worker; each check sets its own.
    LABEL: ClassVar[str]
    THREAD: ClassVar[str]
    # What is left when the budget runs out, and what the quota skip is recorded for.
    LATE: ClassVar[str]
    ASKED_ABOUT: ClassVar[str]
    # What follows an entity without an App, and the error of one GitHub did not answer for.
    NO_APP: ClassVar[str] = "not asked"
    UNANSWERED: ClassVar[str] = "not asked: %s"
    # Whether the check needs the endpoint's web URL too (the scale-set check registers).
    NEEDS_BASE_URL: ClassVar[bool] = False

    def _confirmed(self, items: Sequence[ItemT]) -> frozenset[FoundT]:
        """What GitHub confirmed about `items` within the budget (none: GARM has no endpoint).

        Raises:
            GarmUnreachable: GARM did not answer when asked for its endpoint.
        """
        endpoint = self._github_endpoint()
        if endpoint is None:
            return frozenset()
        by_entity: dict[EntityKey, list[ItemT]] = {}
        for item in items:
            by_entity.setdefault(entity_key(item.entity_kind, item.entity_name), []).append(item)
        found = Findings[FoundT](
            time.monotonic() + self.budget_seconds,
            f"{self.LABEL}: GitHub did not answer within the pass's time budget; {self.LATE}",
        )
        try:
            ask_within(
                found,
                self.budget_seconds,
                lambda: self._ask_each_entity(endpoint, by_entity, found),
                self.THREAD,
            )
        finally:
            confirmed = found.finish()
        return confirmed

    @abc.abstractmethod
    def _ask_entity(
        self, installation: Installation, items: Sequence[ItemT], found: Findings[FoundT]
    ) -> None:
        """Ask GitHub about one entity's `items`, adding what it confirms to `found`.

        Raises:
            GithubUnavailable: GitHub did not answer as needed (QuotaReserved: not asked).
        """

    def _github_endpoint(self) -> GithubEndpoint | None:
        try:
            endpoint = self.endpoint()
        except GarmApiError as error:
            logger.warning("%s: GARM refused its endpoints: %s", self.LABEL, error)
            return None
        if (
            endpoint is None
            or not endpoint.api_base_url
            or (self.NEEDS_BASE_URL and not endpoint.base_url)
        ):
            logger.warning("%s: GARM has no %s endpoint to ask", self.LABEL, GITHUB_ENDPOINT)
            return None
        return endpoint

    def _ask_each_entity(
        self,
        endpoint: GithubEndpoint,
        by_entity: Mapping[EntityKey, Sequence[ItemT]],
        found: Findings[FoundT],
    ) -> None:
        with session(endpoint, self.proxy, found, self.quotas) as http:
            for key, items in by_entity.items():
                app = self.apps.get(key)
                if app is None:
                    logger.info("%s: no GitHub App for %s; %s", self.LABEL, key[1], self.NO_APP)
                    continue
                try:
                    self.quotas.require(app.installation_id)
                    token = http.installation_token(app, self.clock())
                    self._ask_entity(Installation(http, endpoint, app, token), items, found)
                except QuotaReserved as error:
                    self.quotas.skip(app.installation_id, f"{self.ASKED_ABOUT} of {key[1]}")
                    logger.warning("%s of %s: not asked: %s", self.LABEL, key[1], error)
                except GithubUnavailable as error:
                    logger.warning(f"%s of %s: {self.UNANSWERED}", self.LABEL, key[1], error)
