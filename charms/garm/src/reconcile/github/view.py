"""GitHub's view of each live scale set beside GARM's, from the scale-set check (ADR 0041).

GARM v0.2.1 exports no job-queue metrics. GitHub's Actions service gives each scale set's
statistics (`RunnerScaleSetStatistic`: jobs available, acquired, assigned and running; runners
registered, busy and idle) in the answer to the lookup the scale-set check already makes every
15 minutes (ADR 0029): one call per scale set, whatever the number of runners or jobs, and no
REST quota. This module turns those counts and GARM's runners into what operators see (pure):

- jobs waiting: assigned and not running, plus available and not yet taken by GARM's listener;
- runners GitHub shows registered but neither busy nor idle (offline, or still starting);
- whether GitHub and GARM disagree: other busy or idle counts, or jobs waiting while GARM has
  idle runners (jobs GitHub assigned that no GARM runner takes);
- since when jobs have been waiting, and since when they disagree, at every check without a
  break (a check that saw none starts over): no call gives a job's own queue time, so the
  oldest waiting job's age is known to a check's interval, while the queue does not drain.

A scale set GitHub did not answer for keeps its last view, with its check time.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping
from typing import Any, cast

from garm_api import Instance, ScaleSet
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.runners import is_busy, is_idle

_STATISTICS = (
    "totalAvailableJobs",
    "totalAcquiredJobs",
    "totalAssignedJobs",
    "totalRunningJobs",
    "totalRegisteredRunners",
    "totalBusyRunners",
    "totalIdleRunners",
)


@dataclasses.dataclass(frozen=True)
class ScaleSetStats:
    """A scale set's `RunnerScaleSetStatistic`, as the Actions service answered it."""

    available: int
    acquired: int
    assigned: int
    running: int
    registered: int
    busy: int
    idle: int

    @classmethod
    def from_wire(cls, value: Any) -> ScaleSetStats | None:
        """The statistics of a lookup's scale set; None unless every count is an integer >= 0."""
        if not isinstance(value, dict):
            return None
        fields = cast(dict[str, Any], value)
        counts: list[int] = []
        for key in _STATISTICS:
            count: Any = fields.get(key)
            if type(count) is not int or count < 0:
                return None
            counts.append(count)
        return cls(*counts)

    @property
    def waiting(self) -> int:
        """Jobs waiting: assigned and not running, and available but not yet acquired."""
        return max(self.assigned - self.running, 0) + self.available

    @property
    def not_ready(self) -> int:
        """Runners registered at GitHub that are neither busy nor idle (offline, starting)."""
        return max(self.registered - self.busy - self.idle, 0)


@dataclasses.dataclass(frozen=True)
class GithubView:
    """One live scale set, as GitHub and GARM see it at the last check that GitHub answered.

    Attributes:
        scaleset: the spec's logical name.
        application: its configurator.
        checked_at: when GitHub answered (ISO 8601).
        jobs_waiting: jobs waiting at GitHub (`ScaleSetStats.waiting`).
        jobs_running: jobs running at GitHub.
        runners_busy: runners GitHub shows busy.
        runners_idle: runners GitHub shows idle.
        runners_not_ready: runners GitHub shows registered, neither busy nor idle.
        garm_busy: GARM's runners of the scale set reporting a job.
        garm_idle: GARM's idle runners of it.
        disagree: whether GitHub and GARM disagree (see the module's docstring).
        waiting_since: since when jobs have been waiting at every check ("" none waiting).
        disagree_since: since when they have disagreed at every check ("" they agree).
    """

    scaleset: str
    application: str
    checked_at: str
    jobs_waiting: int
    jobs_running: int
    runners_busy: int
    runners_idle: int
    runners_not_ready: int
    garm_busy: int
    garm_idle: int
    disagree: bool
    waiting_since: str
    disagree_since: str

    @property
    def key(self) -> str:
        """`<application>/<scale set>`: one entry per spec."""
        return f"{self.application}/{self.scaleset}"

    def row(self) -> dict[str, Any]:
        """The view as `list-scalesets` shows it (dashes in the names)."""
        return {
            field.replace("_", "-"): value for field, value in dataclasses.asdict(self).items()
        }


def combine(
    previous: Mapping[str, GithubView],
    stats: Mapping[int, ScaleSetStats],
    held: Iterable[ScaleSet],
    instances: Iterable[Instance],
    *,
    now: datetime.datetime,
) -> dict[str, GithubView]:
    """The views after a check: GitHub's counts beside GARM's for each live scale set answered.

    `held` are GARM's scale sets after the pass; a spec whose live set GitHub did not answer for
    keeps its previous view, and a spec no longer live is dropped.
    """
    live: dict[int, tuple[str, str]] = {}
    for scaleset in held:
        marker = parse_marker(scaleset.extended_state)
        if marker is not None and scaleset.enabled:
            live[scaleset.id] = (marker.logical, marker.application)
    runners = [r for r in instances if r.scale_set_id in live]
    views: dict[str, GithubView] = {}
    for scaleset_id, (logical, application) in live.items():
        key = f"{application}/{logical}"
        found = stats.get(scaleset_id)
        if found is None:
            if key in previous:
                views[key] = previous[key]
            continue
        mine = [r for r in runners if r.scale_set_id == scaleset_id]
        views[key] = _view((logical, application), found, mine, previous.get(key), now=now)
    return views


def _view(
    owner: tuple[str, str],
    stats: ScaleSetStats,
    runners: list[Instance],
    previous: GithubView | None,
    *,
    now: datetime.datetime,
) -> GithubView:
    logical, application = owner
    garm_busy = sum(1 for r in runners if is_busy(r))
    garm_idle = sum(1 for r in runners if is_idle(r))
    disagree = (
        stats.busy != garm_busy or stats.idle != garm_idle or (stats.waiting > 0 and garm_idle > 0)
    )
    stamp = now.isoformat()
    return GithubView(
        scaleset=logical,
        application=application,
        checked_at=stamp,
        jobs_waiting=stats.waiting,
        jobs_running=stats.running,
        runners_busy=stats.busy,
        runners_idle=stats.idle,
        runners_not_ready=stats.not_ready,
        garm_busy=garm_busy,
        garm_idle=garm_idle,
        disagree=disagree,
        waiting_since=_since(stats.waiting > 0, previous and previous.waiting_since, stamp),
        disagree_since=_since(disagree, previous and previous.disagree_since, stamp),
    )


def _since(now_true: bool, before: str | None, stamp: str) -> str:
    if not now_true:
        return ""
    return before or stamp


def to_json(views: Mapping[str, GithubView]) -> dict[str, dict[str, Any]]:
    """The views as kept in the stored state."""
    return {key: dataclasses.asdict(view) for key, view in sorted(views.items())}


def from_json(data: Any) -> dict[str, GithubView]:
    """The kept views; an unreadable entry is dropped (its clocks start again)."""
    views: dict[str, GithubView] = {}
    if not isinstance(data, dict):
        return views
    for key, value in cast(dict[Any, Any], data).items():
        try:
            views[str(key)] = GithubView(**value)
        except TypeError:
            continue
    return views
