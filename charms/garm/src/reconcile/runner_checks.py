"""Asks GitHub which busy runners of retired scale sets it no longer lists (ADR 0015).

A retired (disabled) scale set has no message listener in GARM, so GARM learns that a runner's
job ended only at its 5-minute consolidation (garm-behaviour, "A finished job on a retired scale
set is noticed late"). GitHub deletes an ephemeral runner when its job ends; asking GitHub lets
the charm remove the runner, and delete the emptied scale set, a few minutes sooner.

One job: given busy runners, answer with the names of those GitHub positively no longer lists.
The calls go where GARM asks GitHub, as the entity's GitHub App installation, within one time
budget for the whole pass (`github_http`). Any doubt (no App for the entity, GitHub unreachable,
a refusal, an unexpected answer, the budget spent) leaves the runner out: GARM or the drain
deadline removes it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from garm_api import GarmApiError
from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github_http import (
    Findings,
    GithubUnavailable,
    Http,
    QuotaReserved,
    Quotas,
    ask_within,
    entity_path,
    session,
)
from reconcile.github_objects import GithubApp
from scaleset_reconciler.needs import BusyRunner, entity_key
from workload.config import ProxyConfig

logger = logging.getLogger(__name__)

# All of one pass's GitHub calls, together: a hook (or tick) must not wait on GitHub for longer.
# Far above what a pass needs (a token, a list probe and one GET per runner, each well under a
# second) and under the default reconcile-interval (1m).
BUDGET_SECONDS = 30.0
GITHUB_ENDPOINT = "github.com"


@dataclasses.dataclass(frozen=True)
class RunnerCheck:
    """Asks GitHub about busy runners; called as `finished_at_github` by the reconciler.

    Attributes:
        endpoint: returns GARM's `github.com` endpoint (None: none); called only when asked.
        apps: the GitHub App of each entity, keyed by `scaleset_reconciler.needs.entity_key`.
        proxy: the model's proxy.
        clock: seconds since the epoch, for the App's JWT.
        budget_seconds: how long the whole pass may wait on GitHub; the runners not confirmed
            by then are left out (unknown), never named.
        quotas: the installations' REST quotas; an entity whose installation's reserve for
            GARM cannot spare a call is not asked (ADR 0039).
    """

    endpoint: Callable[[], GithubEndpoint | None]
    apps: Mapping[tuple[EntityKind, str], GithubApp]
    proxy: ProxyConfig
    clock: Callable[[], float] = time.time
    budget_seconds: float = BUDGET_SECONDS
    quotas: Quotas = dataclasses.field(default_factory=Quotas)

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
        """Ask in a worker thread; at the budget's end, return what GitHub confirmed so far."""
        progress = Findings[str](
            time.monotonic() + self.budget_seconds,
            "GitHub runners: GitHub did not answer within the pass's time budget; "
            "the runners not yet confirmed are left to GARM",
        )
        try:
            ask_within(
                progress,
                self.budget_seconds,
                lambda: self._ask_each_entity(endpoint, by_entity, progress),
                "github-runner-check",
            )
        finally:
            finished = progress.finish()
        return finished

    def _ask_each_entity(
        self,
        endpoint: GithubEndpoint,
        by_entity: Mapping[tuple[EntityKind, str], Sequence[BusyRunner]],
        progress: Findings[str],
    ) -> None:
        with session(endpoint, self.proxy, progress, self.quotas) as http:
            for key, busy in by_entity.items():
                app = self.apps.get(key)
                if app is None:
                    logger.info("GitHub runners: no GitHub App for %s; GARM removes them", key[1])
                    continue
                try:
                    self._finished(http, app, busy, progress)
                except QuotaReserved as error:
                    self.quotas.skip(app.installation_id, f"finished jobs of {key[1]}")
                    logger.warning("GitHub runners of %s: not asked: %s", key[1], error)
                except GithubUnavailable as error:
                    logger.warning(
                        "GitHub runners of %s: %s; GARM removes them in time", key[1], error
                    )

    def _finished(
        self, http: Http, app: GithubApp, busy: Sequence[BusyRunner], progress: Findings[str]
    ) -> None:
        """Ask about each runner of one entity, once GitHub showed it can see the entity's."""
        installation = app.installation_id
        self.quotas.require(installation)
        token = http.installation_token(app, self.clock())
        entity = entity_path(busy[0].entity_kind, busy[0].entity_name)
        # A 404 for a repository the installation cannot see would look like a finished job:
        # only a readable runner list makes a runner's 404 mean that the runner is gone.
        http.get(
            f"{entity}/actions/runners?per_page=1", token, expect=(200,), installation=installation
        )
        for runner in busy:
            path = f"{entity}/actions/runners/{runner.agent_id}"
            if http.get(path, token, expect=(200, 404), installation=installation) == 404:
                progress.add(runner.name)
