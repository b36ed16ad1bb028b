"""Asks GitHub which busy runners of retired scale sets it no longer lists (ADR 0015).

A retired (disabled) scale set has no message listener in GARM, so GARM learns that a runner's
job ended only at its 5-minute consolidation (garm-behaviour, "A finished job on a retired scale
set is noticed late"). GitHub deletes an ephemeral runner when its job ends; asking GitHub lets
the charm remove the runner, and delete the emptied scale set, a few minutes sooner.

One job: given busy runners, answer with the names of those GitHub positively no longer lists.
The calls go where GARM asks GitHub, as the entity's GitHub App installation, within one time
budget for the whole pass (`check`, `http`). Any doubt (no App for the entity, GitHub unreachable,
a refusal, an unexpected answer, the budget spent) leaves the runner out: GARM or the drain
deadline removes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

from reconcile.github.check import GithubCheck, Installation
from reconcile.github.http import Findings, entity_path
from scaleset_reconciler.needs import BusyRunner


@dataclasses.dataclass(frozen=True)
class RunnerCheck(GithubCheck[BusyRunner, str]):
    """Asks GitHub about busy runners; called as `finished_at_github` by the reconciler.

    Its attributes are `check.GithubCheck`'s; the runners not confirmed within the budget are
    left out (unknown), never named.
    """

    LABEL: ClassVar[str] = "GitHub runners"
    THREAD: ClassVar[str] = "github-runner-check"
    LATE: ClassVar[str] = "the runners not yet confirmed are left to GARM"
    ASKED_ABOUT: ClassVar[str] = "finished jobs"
    NO_APP: ClassVar[str] = "GARM removes them"
    UNANSWERED: ClassVar[str] = "%s; GARM removes them in time"

    def __call__(self, runners: Sequence[BusyRunner]) -> frozenset[str]:
        """Return the names of `runners` that GitHub no longer lists; never raises for GitHub.

        Raises:
            GarmUnreachable: GARM did not answer when asked for its endpoint.
        """
        return self._confirmed(runners)

    def _ask_entity(
        self, installation: Installation, items: Sequence[BusyRunner], found: Findings[str]
    ) -> None:
        """Ask about each runner of one entity, once GitHub showed it can see the entity's."""
        http, token = installation.http, installation.token
        asking = installation.app.installation_id
        entity = entity_path(items[0].entity_kind, items[0].entity_name)
        # A 404 for a repository the installation cannot see would look like a finished job:
        # only a readable runner list makes a runner's 404 mean that the runner is gone.
        http.get(f"{entity}/actions/runners?per_page=1", token, expect=(200,), installation=asking)
        for runner in items:
            path = f"{entity}/actions/runners/{runner.agent_id}"
            if http.get(path, token, expect=(200, 404), installation=asking) == 404:
                found.add(runner.name)
