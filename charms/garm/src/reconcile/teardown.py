"""Tear down every scale set the charm made, before the application goes (ADR 0036).

A teardown retires each scale set carrying the charm's marker (disabled, no idle minimum, no
maximum: GARM then removes its idle runners, garm-behaviour B14), asks GARM to remove the
runners that are idle or failed, deletes each scale set once it has no runner, and waits, up to
a deadline the operator sets, for the runners that have a job. It never forces a runner with a
job and never touches a scale set without the marker (hand-made). Whatever remains at the
deadline is reported runner by runner (its scale set, its job, its VM) with how to remove it.

Each pass is re-derived from what GARM lists, so a pass can be repeated, interrupted or run by
another hook: the `retired-at` time it writes in the marker is the same one a changeover
writes. No ops here: the charm hands in a logged-in client, a clock and a sleep.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from garm_api import GarmApiError, Instance, ScaleSet, ScaleSetUpdate
from scaleset_reconciler.marker import Marker, parse_marker
from scaleset_reconciler.runners import is_busy, is_idle
from status_text import clock_time

logger = logging.getLogger(__name__)

# How often a waiting teardown lists GARM again: GARM removes idle runners within seconds (B14).
POLL: Final = datetime.timedelta(seconds=5)
# Runner states GARM removes without stopping a job: up and idle, or a VM that failed.
_REMOVABLE_WITHOUT_A_JOB: Final = frozenset({"error"})


class TeardownApi(Protocol):
    """The GARM calls a teardown makes (`garm_api.GarmClient` has them all)."""

    def list_scalesets(self) -> list[ScaleSet]:
        """Return every scale set."""
        ...

    def list_instances(self) -> list[Instance]:
        """Return every instance."""
        ...

    def update_scaleset(self, scaleset_id: int, params: ScaleSetUpdate) -> ScaleSet:
        """Change a scale set's mutable fields."""
        ...

    def delete_scaleset(self, scaleset_id: int) -> None:
        """Ask GARM to delete a scale set (a new listing proves it, B15)."""
        ...

    def delete_instance(self, name: str, *, force: bool = True) -> None:
        """Remove a runner; without `force` GARM refuses one with a job (B32)."""
        ...


@dataclasses.dataclass(frozen=True)
class Leftover:
    """A runner still there when the teardown stopped waiting: what it is and where it runs."""

    runner: str
    scaleset: str
    status: str
    runner_status: str
    job: str
    vm: str
    provider: str

    def as_result(self) -> dict[str, str]:
        """The runner as the teardown action lists it."""
        return {
            "runner": self.runner,
            "scaleset": self.scaleset,
            "status": f"{self.status}/{self.runner_status or '-'}",
            "job": self.job or ("a job (GARM records none)" if self.busy else "none"),
            "vm": self.vm or "(none yet)",
            "provider": self.provider,
            "remove": self.how_to_remove(),
        }

    @property
    def busy(self) -> bool:
        """Whether the runner reports a job."""
        return self.runner_status == "active"

    def how_to_remove(self) -> str:
        """What the operator runs to remove it, while GARM runs and once it is gone."""
        vm = f"openstack server delete {self.vm}" if self.vm else "nothing (no VM yet)"
        return (
            f"now: wait for its job, or stop it: DELETE /api/v1/instances/{self.runner}"
            "?forceRemove=true&bypassGHUnauthorized=true on GARM's API; after removal: "
            f"{vm} in the provider's project, and remove "
            f"runner {self.runner} at GitHub (Settings > Actions > Runners)"
        )


@dataclasses.dataclass(frozen=True)
class TeardownReport:
    """One teardown pass, or the last of a waiting teardown.

    Attributes:
        deleted: the charm's scale sets gone from GARM since the teardown began.
        remaining: the charm's scale sets GARM still lists.
        leftovers: the runners those scale sets still have.
        hand_made: scale sets without the charm's marker, left as they are.
        problems: GARM's refusals, by scale set or runner name (retried at the next pass).
    """

    deleted: tuple[str, ...] = ()
    remaining: tuple[str, ...] = ()
    leftovers: tuple[Leftover, ...] = ()
    hand_made: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        """Whether none of the charm's scale sets is left in GARM."""
        return not self.remaining

    def status_message(self, deadline: datetime.datetime) -> str:
        """What `juju status` shows (at most 120 characters)."""
        if self.done:
            return "torn down: no scale set of the charm is left; remove garm, or run resume"
        busy = sum(1 for leftover in self.leftovers if leftover.busy)
        until = clock_time(deadline)
        return (
            f"tearing down: {len(self.remaining)} scale sets, {len(self.leftovers)} runners "
            f"({busy} busy) left, waiting until {until}; run teardown to see them"
        )

    def log_leftovers(self) -> None:
        """Log each leftover runner with how to remove it (what the operator reads after)."""
        for leftover in self.leftovers:
            logger.error(
                "teardown left runner %s of scale set %s (%s/%s, job %s, VM %s, provider %s): %s",
                leftover.runner,
                leftover.scaleset,
                leftover.status,
                leftover.runner_status,
                leftover.job or "-",
                leftover.vm or "-",
                leftover.provider,
                leftover.how_to_remove(),
            )


def teardown(
    api: TeardownApi,
    *,
    deadline: datetime.datetime,
    clock: Callable[[], datetime.datetime],
    sleep: Callable[[float], None],
) -> TeardownReport:
    """Pass after pass until none of the charm's scale sets is left or `deadline` passes.

    Returns:
        The last pass's report, `deleted` naming the scale sets gone since the first listing.
    """
    first = teardown_pass(api, now=clock())
    report = first
    while not report.done and clock() < deadline:
        sleep(min(POLL, deadline - clock()).total_seconds())
        report = teardown_pass(api, now=clock())
    gone = sorted(set(first.remaining) - set(report.remaining))
    return dataclasses.replace(report, deleted=tuple(gone))


def teardown_pass(api: TeardownApi, *, now: datetime.datetime) -> TeardownReport:
    """Retire, empty and delete what it can of the charm's scale sets in one pass."""
    scalesets = api.list_scalesets()
    instances = api.list_instances()
    mine = [(s, m) for s in scalesets if (m := parse_marker(s.extended_state)) is not None]
    hand_made = tuple(sorted(s.name for s in scalesets if parse_marker(s.extended_state) is None))
    problems: list[str] = []
    leftovers: list[Leftover] = []
    for scaleset, marker in sorted(mine, key=lambda pair: pair[0].name):
        runners = [i for i in instances if i.scale_set_id == scaleset.id]
        problem = _empty(api, scaleset, marker, runners, now=now)
        if problem:
            problems.append(problem)
        leftovers += [_leftover(scaleset, runner) for runner in runners]
    return TeardownReport(
        # One whose delete GARM answered 200 to is there until a listing lacks it (B15).
        remaining=tuple(sorted(scaleset.name for scaleset, _ in mine)),
        leftovers=tuple(sorted(leftovers, key=lambda left: (not left.busy, left.runner))),
        hand_made=hand_made,
        problems=tuple(problems),
    )


def _empty(
    api: TeardownApi,
    scaleset: ScaleSet,
    marker: Marker,
    runners: Sequence[Instance],
    *,
    now: datetime.datetime,
) -> str:
    """Retire the scale set, remove its runners without a job, delete it once empty.

    Returns:
        GARM's refusal, "" when none: a refused delete leaves the set for the next pass.
    """
    try:
        if scaleset.enabled or scaleset.min_idle_runners or scaleset.max_runners:
            retired = marker if marker.retired else dataclasses.replace(marker, retired_at=now)
            api.update_scaleset(
                scaleset.id,
                ScaleSetUpdate(
                    enabled=False,
                    min_idle_runners=0,
                    max_runners=0,
                    extended_state=retired.render(),
                ),
            )
        if not runners:
            api.delete_scaleset(scaleset.id)
            return ""
    except GarmApiError as error:
        return f"{scaleset.name}: {error}"
    for runner in runners:
        if is_idle(runner) or (runner.status in _REMOVABLE_WITHOUT_A_JOB and not is_busy(runner)):
            try:
                # Not forced: GARM refuses a runner that took a job since the listing (B32).
                api.delete_instance(runner.name, force=False)
            except GarmApiError as error:
                logger.info("teardown: runner %s kept for now: %s", runner.name, error)
    return ""


def _leftover(scaleset: ScaleSet, runner: Instance) -> Leftover:
    return Leftover(
        runner=runner.name,
        scaleset=scaleset.name,
        status=runner.status,
        runner_status=runner.runner_status,
        job=runner.job,
        vm=runner.provider_id,
        provider=runner.provider_name or scaleset.provider_name,
    )
