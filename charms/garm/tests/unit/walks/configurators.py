"""A unit serving garm-configurator relations, against the GARM simulator."""

from __future__ import annotations

import dataclasses
import datetime
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from ops import testing

import charm
from doubles.configurator_publication import pkcs1_app_key, published_databag
from garm_sim import GarmSim
from reconcile.bootstrap import (
    ADMIN_LABEL,
    ADMIN_USERNAME,
    DB_PASSPHRASE_LABEL,
    JWT_SECRET_LABEL,
    new_passphrase,
)

OPENSTACK_PASSWORD = "openstack-Pa55word-of-the-cloud"


@pytest.fixture(scope="module")
def app_key() -> str:
    """A PKCS#1 key, as GitHub issues App keys."""
    return pkcs1_app_key()


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[GarmSim]:
    """A fresh GARM that was started with the provider the charm renders for `small`.

    Its clock is frozen and the charm reads it (`charm.utc_now`, the charm's clock seam), so a
    test moves time with `sim.clock.advance` instead of sleeping.
    """
    with GarmSim(["openstack-small"], frozen_clock=True) as server:
        monkeypatch.setattr(charm, "utc_now", lambda: sim_now(server))
        yield server


def sim_now(sim: GarmSim) -> datetime.datetime:
    """GARM's clock, which the charm shares on the same machine."""
    return datetime.datetime.fromtimestamp(sim.clock.now(), datetime.UTC)


@dataclasses.dataclass
class Configurator:
    """A related garm-configurator: its relation and the secrets it granted."""

    relation: testing.Relation
    secrets: list[testing.Secret]


def configurator(
    app_key: str,
    labels: tuple[str, ...] = ("linux", "x64"),
    secrets: list[testing.Secret] | None = None,
) -> Configurator:
    """A configurator `small` that published a scale set for org `acme`."""
    password, key = secrets or (
        testing.Secret(tracked_content={"password": OPENSTACK_PASSWORD, "app": "small"}),
        testing.Secret(tracked_content={"private-key": app_key, "app": "small"}),
    )
    relation = testing.Relation(
        "garm-configurator",
        remote_app_name="small",
        remote_app_data=published_databag(
            labels, password_secret_id=password.id, private_key_secret_id=key.id
        ),
    )
    return Configurator(relation, [password, key])


def leader_state(
    sim: GarmSim, resources: frozenset[testing.Resource], related: Configurator, **extra: Any
) -> testing.State:
    """The leader, configured to reach the simulator, with one configurator related.

    garm's own secrets exist, as an earlier hook created them.
    """
    return testing.State(
        leader=True,
        resources=resources,
        config={"port": sim.port, "external-url": "https://garm.example.com", **extra},
        relations={related.relation},
        secrets={*related.secrets, *garm_secrets()},
    )


def relabelled(
    sim: GarmSim, resources: frozenset[testing.Resource], app_key: str
) -> tuple[testing.Context[charm.GarmCharm], testing.State]:
    """`small` served with linux,x64, then its configurator publishes linux,x64,gpu.

    Returns:
        The context and the state whose relation-changed has not run yet.
    """
    ctx = testing.Context(charm.GarmCharm)
    original = configurator(app_key)
    served = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, original))
    changed = configurator(app_key, labels=("linux", "x64", "gpu"), secrets=original.secrets)
    relation = dataclasses.replace(
        next(iter(served.relations)), remote_app_data=changed.relation.remote_app_data
    )
    return ctx, dataclasses.replace(served, relations={relation})


def garm_secrets() -> list[testing.Secret]:
    """The garm app's own bootstrap secrets, as strong as GARM (and the simulator) wants them."""
    return [
        testing.Secret({"secret": secrets.token_urlsafe(48)}, owner="app", label=JWT_SECRET_LABEL),
        testing.Secret({"passphrase": new_passphrase()}, owner="app", label=DB_PASSPHRASE_LABEL),
        testing.Secret(
            {"username": ADMIN_USERNAME, "password": secrets.token_urlsafe(32)},
            owner="app",
            label=ADMIN_LABEL,
        ),
    ]
