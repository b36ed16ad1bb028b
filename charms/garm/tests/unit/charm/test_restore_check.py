"""restore-backup names the runners the restored database does not know, and refuses to kill jobs.

GARM is the simulator with runners up (one of them busy); the backup's runner names are what
the workload double says the copy holds. The check runs before GARM is stopped.
"""

from __future__ import annotations

import json

import pytest
from ops import testing

import unit.walks.maintenance as maintenance_walks
from contract.garm_http import call
from unit.walks.maintenance import Unit, backup

unit = maintenance_walks.unit


def _runners(leader: Unit, count: int) -> list[str]:
    """A scale set with `count` idle runners in GARM; their names, oldest first."""
    garm = leader.garm
    repo = garm.seed_entity("repository", "fake-repo", "fake-org")
    body = {
        "name": "small-0123a",
        "provider_name": "openstack",
        "image": "ubuntu:22.04",
        "flavor": "small",
        "os_type": "linux",
        "labels": ["x64"],
        "min_idle_runners": count,
        # No room for more: GitHub counts a job as assigned, and GARM would boot a runner beside.
        "max_runners": count,
        "enabled": True,
    }
    created = call(garm.url, "POST", f"/repositories/{repo}/scalesets", body, token=garm.token())
    assert created.status == 200, created.raw
    for _ in range(3):
        garm.advance(1)
    return sorted(i.name for i in garm.instances(created.json["id"]))


def _restore(leader: Unit, **params: str | bool) -> testing.State:
    """restore-backup of `b1`, a backup made with this application's passphrase secret."""
    state = leader.state()
    secret = next(s for s in state.secrets if s.label == "garm-db-passphrase")
    leader.workload.backups["b1"] = backup("b1", secret=secret.id)
    action = leader.ctx.on.action("restore-backup", params={"name": "b1", **params})
    return leader.ctx.run(action, state)


def test_restore_refuses_while_a_runner_the_backup_does_not_know_has_a_job(
    unit: Unit,
):
    """Arrange: three runners in GARM; the backup knows the first; a job on one of the others.

    Act: restore-backup.

    Assert: refused naming the busy runner; GARM neither stopped nor swapped; the results list
    both unknown runners, the busy one first.
    """
    runners = _runners(unit, 3)
    busy = unit.garm.start_job("small-0123a")
    known, *_ = [name for name in runners if name != busy]
    unit.workload.backup_runner_names["b1"] = frozenset({known})

    refused = f"does not know 1 runners with a job \\({busy}"
    with pytest.raises(testing.ActionFailed, match=refused):
        _restore(unit)

    assert "stop" not in unit.workload.calls
    assert not any(c.startswith("restore_backup") for c in unit.workload.calls)
    listed = json.loads((unit.ctx.action_results or {})["unknown-runners"])
    assert (listed[0]["runner"], listed[0]["busy"]) == (busy, True)
    assert {r["runner"] for r in listed} == set(runners) - {known}
    assert all(not r["busy"] for r in listed[1:])


def test_restore_with_force_goes_on_and_says_what_garm_will_delete(unit: Unit):
    """Arrange: two runners GARM has, one busy; the backup knows neither.

    Act: restore-backup force=true. Assert: restored; the results name both, busy one first.
    """
    _runners(unit, 2)
    busy = unit.garm.start_job("small-0123a")

    _restore(unit, force=True)

    assert "restore_backup b1" in unit.workload.calls
    results = unit.ctx.action_results or {}
    assert results["restored"] == "b1"
    assert results["unknown-runners-busy"] == 1
    listed = json.loads(results["unknown-runners"])
    assert listed[0]["runner"] == busy
    assert len(listed) == 2


def test_restore_of_a_backup_knowing_every_runner_names_none(unit: Unit):
    """Arrange: a busy runner the backup knows. Act: restore-backup.

    Assert: restored, no runner named.
    """
    names = _runners(unit, 1)
    unit.garm.start_job("small-0123a")
    unit.workload.backup_runner_names["b1"] = frozenset(names)

    _restore(unit)

    assert (unit.ctx.action_results or {})["unknown-runners"] == "[]"
    assert "restore_backup b1" in unit.workload.calls


def test_restore_refuses_when_garm_cannot_say_which_runners_it_has(unit: Unit):
    """Arrange: GARM fails listing its runners (500). Act: restore-backup, then force=true.

    Assert: refused first (nothing stopped or swapped), saying force=true; restored when forced.
    """
    unit.garm.fault(method="GET", path="/api/v1/instances", status=500)

    with pytest.raises(testing.ActionFailed, match=r"GARM did not list its runners.*force=true"):
        _restore(unit)
    assert "stop" not in unit.workload.calls

    _restore(unit, force=True)
    assert "restore_backup b1" in unit.workload.calls
