"""A unit with backups, for the maintenance walks."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from ops import testing

import charm
from doubles.database_publication import database_secret
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from relations.peers.lease import Lease
from unit.doubles.fake_systemctl import TickMachine
from unit.walks.charm import bootstrap_secrets, bootstrapped
from workload.backup import BackupManifest

NEWER = "v0.2.1-96-gafda4e76"
PAUSED_AT = "2026-11-30T09:15:00+00:00"


@dataclasses.dataclass
class Unit:
    """The leader of a GARM an earlier leader bootstrapped, its workload and tick."""

    ctx: testing.Context[charm.GarmCharm]
    garm: GarmSim
    workload: RecordingWorkload
    machine: TickMachine
    resources: frozenset[testing.Resource]
    config: dict[str, Any]

    def state(
        self, app_data: dict[str, str] | None = None, *others: testing.RelationBase, leader=True
    ) -> testing.State:
        """The unit's state: its peers' app data is `app_data`."""
        # This unit holds GARM's lease (ADR 0019), as a leader that has run GARM does.
        lease = Lease("garm/0", datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1))
        peers = testing.PeerRelation(
            "garm-peers", local_app_data={**lease.as_app_data(), **(app_data or {})}
        )
        secrets = bootstrap_secrets()
        for relation in others:
            if isinstance(relation, testing.Relation) and relation.endpoint == "database":
                secrets.append(database_secret("garm", "pw"))
        return testing.State(
            leader=leader,
            resources=self.resources,
            config=self.config,
            secrets=frozenset(secrets),
            relations=frozenset({peers, *others}),
        )


@pytest.fixture
def unit(
    ctx: testing.Context[charm.GarmCharm],
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    tick_machine: TickMachine,
) -> Unit:
    """A bootstrapped GARM's leader; its workload installed and running."""
    bootstrapped(garm)
    workload.installed = True
    workload.running = True
    return Unit(ctx, garm, workload, tick_machine, resources, config)


def backup(name: str, version: str = NEWER, secret: str = "") -> BackupManifest:
    """A backup the workload holds."""
    return BackupManifest(name, PAUSED_AT, version, "0" * 64, 4096, secret)
