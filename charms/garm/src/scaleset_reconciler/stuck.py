"""Stuck runners: a live scale set's runners that stay in a state that is not final (ADR 0023).

A runner that never finishes booting, never registers at GitHub, errors, or never finishes
being deleted holds a place under `max_runners` and GARM does not replace it: scaling stalls
until someone restarts GARM. GARM itself reaps, past the scale set's `runner_bootstrap_timeout`
counted from `created_at`, only runners GitHub does not list online that are still `pending` or
`installing`, and on builds after v0.2.1 `failed` too (garm-behaviour B43); nothing else.
Everything here is pure and re-derived from what GARM shows each pass:

- a runner is stuck when its state is not final and its instance was last written
  (`updated_at`: a state change, or any report of the runner, B43) longer ago than the timeout;
  for a runner a GARM the charm supports may reap itself the timeout is at least the scale
  set's bootstrap timeout plus `BOOT_REAP_GRACE`, so GARM's own reaping goes first and the
  charm never does its work twice (`updated_at` is never before GARM's `created_at` clock);
- a runner with a job (`active`) is never stuck, whatever its state;
- a stuck runner in a state GARM removes is force-removed (it has no job; force ignores the
  provider's errors); GARM refuses removals while `pending_create`, `creating` or `deleting`
  (garm-behaviour B18), so those are only counted;
- a scale set whose runners keep failing (`FAILING_RUNNERS` or more in `error`/`failed` and none
  online) is reported with the provider's last fault.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence

from garm_api.models import Instance
from scaleset_reconciler.runners import REMOVABLE, is_booting, is_busy, is_online

# Instance states that are not final; `running` only with one of the runner states below.
STUCK_STATUSES = frozenset(
    {"pending_create", "creating", "error", "pending_delete", "pending_force_delete", "deleting"}
)
# runner_status of a running runner that has not (or no longer) registered at GitHub.
STUCK_RUNNER_STATUSES = frozenset({"pending", "installing", "failed"})
# runner_status of a runner GARM removes itself past the bootstrap timeout: `pending` and
# `installing` on v0.2.1, `failed` too on later builds (garm-behaviour B43).
GARM_REAPED_RUNNER_STATUSES = frozenset({"pending", "installing", "failed"})
# Instance states GARM's reaping skips: the runner is already being deleted.
DELETING_STATUSES = frozenset({"pending_delete", "pending_force_delete", "deleting"})
# How long after the bootstrap timeout GARM is left to reap a runner itself.
BOOT_REAP_GRACE = datetime.timedelta(minutes=5)
FAILING_RUNNERS = 2
FAULT_LIMIT = 60


@dataclasses.dataclass(frozen=True)
class StuckStep:
    """What one pass does about one live scale set's stuck runners.

    Attributes:
        removals: names of stuck runners to force-remove now.
        unremovable: stuck runners GARM does not let anyone remove in their state.
        failing_fault: the provider's last fault when the set's runners keep failing, else "".
    """

    removals: tuple[str, ...] = ()
    unremovable: int = 0
    failing_fault: str = ""


def plan_stuck(
    runners: Sequence[Instance],
    *,
    now: datetime.datetime,
    timeout: datetime.timedelta,
    bootstrap_timeout: datetime.timedelta,
) -> StuckStep:
    """Decide which of one scale set's runners are stuck, and whether the set keeps failing."""
    stuck = [r for r in runners if is_stuck(r, now, timeout, bootstrap_timeout)]
    removals = tuple(sorted(r.name for r in stuck if r.status in REMOVABLE))
    return StuckStep(removals, len(stuck) - len(removals), failing_fault(runners))


def is_stuck(
    runner: Instance,
    now: datetime.datetime,
    timeout: datetime.timedelta,
    bootstrap_timeout: datetime.timedelta,
) -> bool:
    """Whether the runner has stayed in a state that is not final for too long."""
    if is_busy(runner):
        return False
    if runner.status == "running":
        if runner.runner_status not in STUCK_RUNNER_STATUSES:
            return False
    elif runner.status not in STUCK_STATUSES:
        return False
    reaped = garm_reaps(runner)
    limit = max(timeout, bootstrap_timeout + BOOT_REAP_GRACE) if reaped else timeout
    return now - runner.updated_at >= limit


def garm_reaps(runner: Instance) -> bool:
    """Whether a GARM the charm supports may remove the runner itself (garm-behaviour B43).

    A runner still being made counts too: on later builds the provider's create deadline,
    derived from the bootstrap timeout, fails it and GARM deletes it.
    """
    if runner.status in DELETING_STATUSES:
        return False
    return is_booting(runner) or runner.runner_status in GARM_REAPED_RUNNER_STATUSES


def failing_fault(runners: Sequence[Instance]) -> str:
    """The provider's last fault when the runners keep failing and none is online, else ""."""
    failed = [r for r in runners if r.status == "error" or r.runner_status == "failed"]
    online = any(is_online(r) for r in runners)
    if len(failed) < FAILING_RUNNERS or online:
        return ""
    last = max(failed, key=lambda r: (r.updated_at, r.name))
    text = last.provider_fault.decode("utf-8", errors="replace").strip()
    first_line = text.splitlines()[0] if text else "no fault recorded"
    return first_line if len(first_line) <= FAULT_LIMIT else first_line[: FAULT_LIMIT - 3] + "..."
