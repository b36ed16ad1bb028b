"""GARM's runner states, read one way by the planner, the refresh and the stuck check."""

from __future__ import annotations

import datetime

import pytest

from garm_api.models import Instance
from scaleset_reconciler.runners import REMOVABLE, is_booting, is_busy, is_idle, is_online

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def _runner(status: str, runner_status: str) -> Instance:
    return Instance(
        id="r",
        name="r",
        status=status,
        runner_status=runner_status,
        scale_set_id=1,
        pool_id="",
        provider_name="lxd",
        provider_id="r",
        agent_id=0,
        provider_fault=b"",
        created_at=NOW,
        updated_at=NOW,
    )


@pytest.mark.parametrize(
    ("status", "runner_status", "expected"),
    [
        ("running", "idle", (True, False, True, False)),
        ("running", "active", (False, True, True, False)),
        ("running", "pending", (False, False, False, True)),
        ("running", "installing", (False, False, False, True)),
        ("running", "", (False, False, False, True)),
        ("running", "failed", (False, False, False, False)),
        ("pending_create", "pending", (False, False, False, True)),
        ("creating", "", (False, False, False, True)),
        ("pending_delete", "active", (False, True, False, False)),
        ("pending_delete", "idle", (False, False, False, False)),
        ("error", "failed", (False, False, False, False)),
    ],
)
def test_each_state_reads_one_way(status: str, runner_status: str, expected: tuple[bool, ...]):
    """Arrange: a runner in one of GARM's (status, runner_status) pairs.

    Act: ask whether it is idle, busy, online and booting.

    Assert: idle and online need a running machine; busy is the runner's own report (a job
    counts whatever the machine's state); booting includes a running machine that has not
    reported yet ("") and excludes `failed`.
    """
    runner = _runner(status, runner_status)

    answers = (is_idle(runner), is_busy(runner), is_online(runner), is_booting(runner))

    assert answers == expected


def test_removable_states_are_the_ones_garm_accepts_a_removal_in():
    """Arrange: GARM's instance states (garm-behaviour B17).

    Act: keep those the charm may ask GARM to remove.

    Assert: exactly the four GARM accepts (garm-behaviour B18); never one being made or deleted.
    """
    states = {"pending_create", "creating", "running", "stopped", "error", "pending_delete"}
    states |= {"pending_force_delete", "deleting", "deleted", "unknown"}

    removable = states & REMOVABLE

    assert removable == {"running", "error", "pending_delete", "pending_force_delete"}
