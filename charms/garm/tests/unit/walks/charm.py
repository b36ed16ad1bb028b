"""The charm's shared walks: a bootstrapped GARM simulator, secrets, types."""

from __future__ import annotations

from typing import Any

from ops import testing
from scenario.state import _Event

import charm
from doubles.database_publication import database_relation, database_secret
from garm_sim import GarmSim
from reconcile.bootstrap import ADMIN_LABEL, DB_PASSPHRASE_LABEL, JWT_SECRET_LABEL

Ctx = testing.Context[charm.GarmCharm]
Resources = frozenset[testing.Resource]
Config = dict[str, Any]

JWT = "existing-jwt-secret-" + "k3J9xQ" * 6
PASSPHRASE = "Xk3vQ9-rT7wLp2_Zm8Yc4NbH6sJd1FgA"
PASSWORD = "existing-admin-Password-9fK2mQ"
# Controller URLs an earlier configuration left (not the ones the charm derives).
OTHER_URLS = {"metadata_url": "https://x/api/v1/metadata", "callback_url": "https://x/cb"}
# The controller URLs the charm derives from external-url https://garm.example.com.
CONTROLLER_URLS = {
    "metadata_url": "https://garm.example.com/api/v1/metadata",
    "callback_url": "https://garm.example.com/api/v1/callbacks",
    "webhook_url": "https://garm.example.com/webhooks",
    "agent_url": "https://garm.example.com/agent",
}


def bootstrap_secrets() -> list[testing.Secret]:
    """The three app-owned secrets an earlier leader created."""
    return [
        testing.Secret({"secret": JWT}, owner="app", label=JWT_SECRET_LABEL),
        testing.Secret({"passphrase": PASSPHRASE}, owner="app", label=DB_PASSPHRASE_LABEL),
        testing.Secret(
            {"username": "admin", "password": PASSWORD}, owner="app", label=ADMIN_LABEL
        ),
    ]


def bootstrapped(garm: GarmSim, scalesets_body: str | None = None) -> None:
    """Make GARM one this charm already bootstrapped (admin and URLs set).

    Args:
        garm: the simulator.
        scalesets_body: what GARM answers to listing scale sets (a recorded answer).
    """
    garm.bootstrap("admin", PASSWORD, urls=OTHER_URLS)
    if scalesets_body is not None:
        garm.fault(method="GET", path="/api/v1/scalesets", status=200, body=scalesets_body)


def on_postgresql(
    resources: Resources,
    config: Config,
    *others: testing.RelationBase,
    leader: bool = True,
) -> tuple[testing.State, testing.Relation]:
    """A unit whose GARM state is in PostgreSQL (bootstrap secrets exist), with other relations.

    Returns:
        The state and its database relation.
    """
    secret = database_secret()
    relation = database_relation(secret)
    state = testing.State(
        leader=leader,
        resources=resources,
        config=config,
        relations=[relation, *others],
        secrets=[*bootstrap_secrets(), secret],
    )
    return state, relation


# What `JUJU_DISPATCH_PATH=hooks/reconcile-tick ./dispatch` makes ops emit: `charm.on.<name>`.
# ops.testing has no public way to dispatch a charm's own event the way Juju does.
RECONCILE_TICK = _Event("reconcile_tick")
