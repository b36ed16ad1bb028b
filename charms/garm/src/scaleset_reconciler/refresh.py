"""Rolling refresh: idle runners made before an in-place change are replaced, a few at a time.

GARM changes image, flavor, extra specs and the template in place, but the runners it made
before keep what they booted with until each takes a job. Runners carry no generation on either
GARM release (garm-behaviour, "Runners carry no generation"), so the charm stamps the moment of
the change in the scale set's marker (`refresh-from`, ADR 0022) and counts every runner GARM
made before it as outdated. Everything here is pure and re-derived from what GARM shows:

- while a refresh runs, the scale set's min idle and max are raised by `surge`, so GARM boots
  replacements before anything is removed;
- an idle outdated runner is removed (not forced: GARM then refuses one that just took a job)
  only while the idle runners left stay at or above the spec's min idle, and only while fewer
  than `surge` replacements are booting;
- a runner with a job is never touched: it goes with its job (runners are ephemeral);
- once no outdated runner is left but busy ones, the counts go back and `refresh-from` is
  dropped, so a converged pass lists no instances.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence

from garm_api.models import Instance
from scaleset_reconciler.runners import idle_capacity, is_booting, is_busy, is_idle

# Update fields whose change reaches only runners GARM makes afterwards. The template is named
# only by id in GARM's lists, so a change of it shows as `extra_specs` (the marker's hash).
RUNNER_FIELDS = frozenset({"image", "flavor", "os_type", "os_arch", "extra_specs"})
DEFAULT_SURGE = 1


@dataclasses.dataclass(frozen=True)
class RefreshStep:
    """What one pass does for one live scale set's refresh.

    Attributes:
        refresh_from: what the marker keeps: None once the refresh is over (or none ran).
        outdated: runners made before `refresh_from` that are not running a job.
        busy_outdated: outdated runners running a job (left alone; they go with their job).
        removals: names of idle outdated runners to remove now.
    """

    refresh_from: datetime.datetime | None = None
    outdated: int = 0
    busy_outdated: int = 0
    removals: tuple[str, ...] = ()


def changes_runners(fields: Iterable[str]) -> bool:
    """Whether an update of these fields leaves GARM's existing runners outdated."""
    return not RUNNER_FIELDS.isdisjoint(fields)


def raised_counts(min_idle: int, max_runners: int, surge: int) -> tuple[int, int]:
    """The (min idle, max) a scale set runs with while it refreshes: room for `surge` more."""
    return min_idle + surge, max_runners + surge


def plan_step(
    runners: Sequence[Instance],
    refresh_from: datetime.datetime | None,
    *,
    min_idle: int,
    surge: int,
    serving: bool,
) -> RefreshStep:
    """Decide one pass of a refresh from the scale set's runners.

    Args:
        runners: every runner GARM lists for the scale set.
        refresh_from: the marker's `refresh-from`; None: no refresh runs.
        min_idle: the spec's min idle runners (never the raised one).
        surge: how many replacements may boot at a time.
        serving: whether the scale set serves (enabled, not retired, no changeover in flight);
            otherwise nothing is removed and the refresh waits.
    """
    if refresh_from is None:
        return RefreshStep()
    outdated = [r for r in runners if r.created_at < refresh_from]
    busy = [r for r in outdated if is_busy(r)]
    waiting = [r for r in outdated if not is_busy(r)]
    if not waiting:
        return RefreshStep(None, 0, len(busy))
    removable = sorted((r for r in waiting if is_idle(r)), key=lambda r: (r.created_at, r.name))
    booting = sum(1 for r in runners if r.created_at >= refresh_from and is_booting(r))
    idle = idle_capacity(runners)
    room = min(surge - booting, idle - min_idle, len(removable)) if serving else 0
    names = tuple(r.name for r in removable[: max(0, room)])
    return RefreshStep(refresh_from, len(waiting), len(busy), names)
