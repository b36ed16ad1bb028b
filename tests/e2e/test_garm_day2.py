"""Day-2 operations end to end on one machine with a real GARM (ADR 0024, ADR 0025).

The same machine as `test_garm_machine.py` (the charm's hooks, the real GARM binary, the
provider stand-in, the fake GitHub on loopback), plus the peer relation the pause lives in.

- Backup round trip, on both binaries: a bootstrapped GARM with a live scale set, credentials
  and an organization is backed up; under `pause` an endpoint is created by hand; the restore
  (GARM stopped under the pause, started by `resume`) brings back exactly what was backed up,
  and a second restore without a pause does the pause, stop, start and resume itself.
- Upgrade: v0.2.1 runs the scale set; the newer binary is attached; the charm backs up first,
  the newer GARM migrates the database and keeps every scale set, credential and entity;
  attaching v0.2.1 again is refused, naming both versions, and the newer GARM keeps running.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from ops import testing

from contract.conftest import NEWER, V021
from contract.garm_http import call
from doubles.workload_double import MACHINE_PATHS
from e2e import test_garm_machine as machine_walk
from e2e.conftest import Case, GarmTarballs
from e2e.container_machine import tick_event
from e2e.test_garm_machine import (
    Walk,
    install_and_bootstrap,
    point_github_at_the_fake,
    relate_configurator,
)

# The walk's fixtures, shared with test_garm_machine.py (pytest finds them by these names).
github = machine_walk.github
database = machine_walk.database
unused_port = machine_walk.unused_port
walk = machine_walk.walk


def test_backup_pause_change_restore_round_trip(walk: Walk, case: Case):
    """Arrange: a bootstrapped GARM running a scale set with an idle runner; the peer relation.

    Act: create-backup; pause; an endpoint created by hand; hooks; restore-backup (under the
    pause); resume; restore-backup again without a pause.
    Assert: the backup is root-only with a true sha256 and the GARM version; while paused no
    hook restarts or changes GARM; after each restore GARM holds exactly what was backed up.
    On PostgreSQL both actions are refused, naming the database charm's backups.
    """
    install_and_bootstrap(walk)
    point_github_at_the_fake(walk)
    relate_configurator(walk)
    with_peers(walk)
    if case.backend == "postgresql":
        for action in ("create-backup", "restore-backup"):
            with pytest.raises(testing.ActionFailed, match="database charm's backups"):
                run_action(walk, action, name="before")
        return
    before = garm_objects(walk)

    made = run_action(walk, "create-backup", name="before")
    backup_is_private_and_true(walk, made, case)

    hand_work_while_paused(walk)
    restarts = walk.machine.restarts()
    run_action(walk, "restore-backup", name="before")
    assert not walk.machine.is_running(), "an operator's pause keeps GARM stopped"
    assert walk.machine.restarts() == restarts
    resumed = run_action(walk, "resume")

    assert resumed["status"] == "active: "
    assert garm_objects(walk) == before

    again = run_action(walk, "restore-backup", name="before")
    # The backup knows the runner GARM has: the restore kills none.
    assert again == {
        "restored": "before",
        "status": "active: ",
        "unknown-runners": "[]",
        "unknown-runners-busy": 0,
    }
    assert garm_objects(walk) == before
    assert walk.machine.is_running()


@pytest.mark.parametrize("case", [Case(V021, "sqlite")], ids=["v0.2.1-to-newer"])
def test_upgrade_keeps_everything_and_a_downgrade_is_refused(
    walk: Walk, case: Case, garm_tarballs: GarmTarballs
):
    """Arrange: v0.2.1 runs a scale set with credentials and an organization.

    Act: attach the newer garm-binary (upgrade-charm), then v0.2.1 again.
    Assert: a pre-upgrade backup of the v0.2.1 database exists; the newer GARM runs with
    every scale set, credential and entity kept; the downgrade is Blocked naming both versions
    and the newer GARM keeps running, not restarted.
    """
    newer = garm_tarballs.of(NEWER)
    install_and_bootstrap(walk)
    point_github_at_the_fake(walk)
    relate_configurator(walk)
    before = garm_objects(walk)
    old_version = walk.state.workload_version

    attach_garm(walk, newer)
    walk.update_status_until(lambda: walk.statuses[-1] == "active: ", "the newer GARM Active")

    new_version = walk.state.workload_version
    assert new_version != old_version
    shown = [status.message for status in walk.ctx.unit_status_history]
    assert f"upgrading GARM {old_version} -> {new_version}: backing up, then restarting" in shown
    backups = walk.machine.paths.charm_state / "backups"
    (pre_upgrade,) = backups.iterdir()
    manifest = json.loads((pre_upgrade / "manifest.json").read_text())
    assert manifest["garm_version"] == old_version
    assert garm_objects(walk) == before

    restarts = walk.machine.restarts()
    attach_garm(walk, garm_tarballs.of(V021))

    assert walk.statuses[-1] == (
        f"blocked: downgrade refused: GARM {old_version} is older than {new_version}, which "
        "ran last; attach that garm-binary again"
    )
    assert walk.machine.restarts() == restarts
    assert garm_objects(walk) == before, "the newer GARM still answers"


# The steps -----------------------------------------------------------------------------------


def with_peers(walk: Walk) -> None:
    """The peer relation Juju always gives a unit (the pause lives in its app data)."""
    peers = testing.PeerRelation("garm-peers")
    walk.state = dataclasses.replace(walk.state, relations={*walk.state.relations, peers})
    # The first hook with it takes GARM's lease; GARM runs from the next (ADR 0019).
    walk.hook(walk.ctx.on.update_status())
    walk.hook(walk.ctx.on.update_status())


def run_action(walk: Walk, action: str, **params: Any) -> dict[str, Any]:
    """Run an action on the leader; its results."""
    walk.state = walk.ctx.run(walk.ctx.on.action(action, params=params), walk.state)
    status = walk.state.unit_status
    walk.statuses.append(f"{status.name}: {status.message}")
    return dict(walk.ctx.action_results or {})


def attach_garm(walk: Walk, tarball: Path) -> None:
    """`juju attach-resource garm garm-binary=...`: a new resource, then upgrade-charm."""
    others = {r for r in walk.state.resources if r.name != "garm-binary"}
    resource = testing.Resource(name="garm-binary", path=tarball)
    walk.state = dataclasses.replace(walk.state, resources=frozenset({*others, resource}))
    walk.hook(walk.ctx.on.upgrade_charm())


def backup_is_private_and_true(walk: Walk, made: dict[str, Any], case: Case) -> None:
    """The copy is 0600 in a 0700 directory; its sha256 and version are what the results say."""
    assert Path(made["path"]).is_relative_to(MACHINE_PATHS.charm_state / "backups")
    copy = walk.machine.container.host_path(made["path"])
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o700
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == made["sha256"]
    assert made["garm-version"] == walk.state.workload_version
    passphrase = next(s for s in walk.state.secrets if s.label == "garm-db-passphrase")
    assert made["passphrase-secret"] == passphrase.id
    assert case.backend == "sqlite"


def hand_work_while_paused(walk: Walk) -> None:
    """Pause, create an endpoint by hand; hooks and ticks change nothing and restart nothing."""
    run_action(walk, "pause")
    assert walk.statuses[-1].startswith("maintenance: paused since ")
    # The tick stays, at most a minute apart, to renew GARM's lease under the pause (ADR 0042).
    timer = walk.machine.tick_paths.timer_file.read_text()
    period = int(timer.split("OnUnitInactiveSec=", 1)[1].split("s", 1)[0])
    assert period <= 60
    api = walk.client()
    endpoint = {
        "name": "by-hand",
        "description": "made under maintenance",
        "base_url": walk.github.url,
        "api_base_url": f"{walk.github.url}/api/v3/",
        "upload_base_url": f"{walk.github.url}/api/uploads/",
    }
    reply = call(walk.url, "POST", "/github/endpoints", endpoint, token=api.token)
    assert reply.status == 200, reply.raw
    restarts = walk.machine.restarts()
    changed = garm_objects(walk)
    for _ in range(2):
        walk.hook(walk.ctx.on.update_status())
        walk.hook(walk.ctx.on.config_changed())
        walk.hook(tick_event())
    assert walk.machine.restarts() == restarts
    assert garm_objects(walk) == changed
    assert "by-hand" in changed["endpoints"]


def garm_objects(walk: Walk) -> dict[str, Any]:
    """What GARM holds that a restore or an upgrade must keep (ids, names, labels, state)."""
    api = walk.client()
    endpoints = call(walk.url, "GET", "/github/endpoints", token=api.token)
    organizations = call(walk.url, "GET", "/organizations", token=api.token)
    return {
        "credentials": sorted((c.id, c.name) for c in api.list_github_credentials()),
        "scalesets": sorted(
            (s.id, s.name, s.normalised_labels, s.enabled, s.provider_name)
            for s in api.list_scalesets()
        ),
        "runners": sorted(
            runner.name
            for s in api.list_scalesets()
            for runner in api.list_scaleset_instances(s.id)
        ),
        "organizations": sorted(org["id"] for org in endpoints_or_empty(organizations.json)),
        "endpoints": sorted(e["name"] for e in endpoints_or_empty(endpoints.json)),
    }


def endpoints_or_empty(body: Any) -> list[dict[str, Any]]:
    """A listing's items; GARM answers `null` for none."""
    return list(body or [])
