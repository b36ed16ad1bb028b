"""GARM's runner states, and what the charm reads from them, in one place (pure).

An instance has GARM's `status` (the machine: garm-behaviour B17) and a `runner_status` (what
the runner reported: `pending` until it registers at GitHub, then `idle` or `active`). The
planner, the rolling refresh and the stuck-runner check all ask the same questions of them, so
they ask them here.
"""

from __future__ import annotations

from collections.abc import Iterable

from garm_api.models import Instance

# Instance states of a runner still being made (garm-behaviour B17).
BOOTING_STATUSES = frozenset({"pending_create", "creating"})
# runner_status of a running runner that has not registered at GitHub yet; "" before the first
# report.
BOOTING_RUNNER_STATUSES = frozenset({"", "pending", "installing"})
# runner_status of a runner registered at GitHub that can take a job (garm-behaviour B17).
ONLINE_RUNNER_STATUSES = frozenset({"idle", "active"})
# GARM refuses to remove an instance in any other state, forced or not (garm-behaviour B18).
REMOVABLE = frozenset({"running", "error", "pending_delete", "pending_force_delete"})


def is_idle(runner: Instance) -> bool:
    """Whether the runner is up, registered at GitHub and waiting for a job."""
    return runner.status == "running" and runner.runner_status == "idle"


def idle_capacity(runners: Iterable[Instance]) -> int:
    """How many runners can take the next job: up, registered at GitHub and idle.

    The one notion of capacity the surge budget, the hand-over gate and the rolling refresh's
    "never below min idle" count (ADR 0038): a busy runner serves its job, not the next one.
    """
    return sum(1 for runner in runners if is_idle(runner))


def is_busy(runner: Instance) -> bool:
    """Whether the runner has a job, whatever GARM's state of its machine.

    The runner's own report is what counts: a runner with a job is never removed by the
    charm's choice (only past a drain deadline), so any instance state qualifies.
    """
    return runner.runner_status == "active"


def is_online(runner: Instance) -> bool:
    """Whether the runner is up and registered at GitHub (idle or running a job)."""
    return runner.status == "running" and runner.runner_status in ONLINE_RUNNER_STATUSES


def is_booting(runner: Instance) -> bool:
    """Whether the runner is still being made or has not registered at GitHub yet."""
    if runner.status in BOOTING_STATUSES:
        return True
    return runner.status == "running" and runner.runner_status in BOOTING_RUNNER_STATUSES
