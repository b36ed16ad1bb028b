"""End to end: restore-backup names the runners it will kill and keeps their jobs unless forced.

The day-2 machine (`test_garm_day2.py`): the charm's hooks, the real GARM binary (both, on
SQLite), the provider stand-in, the fake GitHub, the peer relation. A backup is taken while the
scale set has one runner; then that runner takes a job, GARM makes a new idle runner the backup
does not know, and that one takes a job too. `restore-backup` refuses, naming the new busy
runner, with GARM running and untouched; `force=true` restores and names it in its results.
"""

from __future__ import annotations

import json

import pytest
from ops import testing

from e2e import test_garm_machine as machine_walk
from e2e.conftest import SQLITE_CASES, Case, available_case
from e2e.test_garm_day2 import run_action, with_peers
from e2e.test_garm_machine import (
    Walk,
    install_and_bootstrap,
    point_github_at_the_fake,
    relate_configurator,
    start_job,
)
from garm_api import ScaleSet

# The walk's fixtures, shared with test_garm_machine.py (pytest finds them by these names).
github = machine_walk.github
database = machine_walk.database
unused_port = machine_walk.unused_port
walk = machine_walk.walk


@pytest.fixture(params=SQLITE_CASES)
def case(request: pytest.FixtureRequest) -> Case:
    """Each GARM binary on SQLite (backups are SQLite's)."""
    return available_case(request.param)


def test_restore_refuses_to_kill_a_job_the_backup_does_not_know(walk: Walk):
    """Arrange: a backup with one runner; since then a new runner, with a job, and the old busy.

    Act: restore-backup; then restore-backup force=true.

    Assert: the first is refused naming the new busy runner only (the backup knows the old
    one); its results list every runner but the old one, the busy one first; GARM runs on, not
    restarted, the database not swapped. The forced one restores and lists that runner first.
    """
    install_and_bootstrap(walk)
    point_github_at_the_fake(walk)
    scaleset = relate_configurator(walk)
    with_peers(walk)
    run_action(walk, "create-backup", name="before")
    old = start_job(walk, scaleset)
    new = busy_new_runner(walk, scaleset)
    # GARM keeps one idle runner beside the busy ones (min idle 1): wait for it, so the list
    # before the action holds a runner the backup does not know that has no job.
    api = walk.client()
    walk.update_status_until(
        lambda: any(
            i.runner_status == "idle" and i.name not in {old, new}
            for i in api.list_scaleset_instances(scaleset.id)
        ),
        "GARM makes an idle runner beside the two busy ones",
    )
    restarts = walk.machine.restarts()
    # GARM may add more while the action runs: the action's list holds every runner GARM had
    # before it, and none GARM did not have after it.
    live_before = {i.name for i in walk.client().list_instances()}

    with pytest.raises(testing.ActionFailed, match=f"does not know 1 runners with a job .{new}"):
        run_action(walk, "restore-backup", name="before")

    listed = json.loads((walk.ctx.action_results or {})["unknown-runners"])
    live_after = {i.name for i in walk.client().list_instances()}
    # Idle runners made since the backup are listed after the busy one.
    assert (listed[0]["runner"], listed[0]["busy"]) == (new, True)
    assert not any(r["busy"] for r in listed[1:])
    assert live_before - {old} <= {r["runner"] for r in listed} <= live_after - {old}
    assert walk.machine.is_running()
    assert walk.machine.restarts() == restarts
    assert new in {i.name for i in walk.client().list_instances()}, "the database is GARM's own"

    forced = run_action(walk, "restore-backup", name="before", force=True)

    assert forced["restored"] == "before"
    assert forced["unknown-runners-busy"] == 1
    assert json.loads(forced["unknown-runners"])[0]["runner"] == new
    assert new not in {i.name for i in walk.client().list_instances()}, "the backup's database"


def busy_new_runner(walk: Walk, scaleset: ScaleSet) -> str:
    """GARM makes a new idle runner beside the busy one; it takes a job. Its name."""
    api = walk.client()
    walk.update_status_until(
        lambda: any(i.runner_status == "idle" for i in api.list_scaleset_instances(scaleset.id)),
        "GARM makes a new idle runner beside the busy one",
    )
    runners = api.list_scaleset_instances(scaleset.id)
    (new,) = [i.name for i in runners if i.runner_status == "idle"]
    walk.github.start_job(scaleset.github_scale_set_id, new)
    walk.update_status_until(
        lambda: any(
            (i.name, i.runner_status) == (new, "active")
            for i in api.list_scaleset_instances(scaleset.id)
        ),
        "GARM sees the new runner's job",
    )
    return new
