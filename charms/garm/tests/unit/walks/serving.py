"""A unit that serves two scale sets, for the bad-value walks."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Iterator
from typing import Any

import ops
import pytest
from ops import testing

import charm
from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.configurator_publication import pkcs1_app_key, published_databag
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from scaleset_reconciler.marker import parse_marker
from unit.walks.configurators import OPENSTACK_PASSWORD, garm_secrets

APPS = ("small", "large")


@pytest.fixture(scope="module")
def app_key() -> str:
    """A PKCS#1 key, as GitHub issues App keys."""
    return pkcs1_app_key()


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[GarmSim]:
    """A GARM started with both configurators' providers; the charm reads its frozen clock."""
    with GarmSim([f"openstack-{app}" for app in APPS], frozen_clock=True) as server:
        monkeypatch.setattr(
            charm,
            "utc_now",
            lambda: datetime.datetime.fromtimestamp(server.clock.now(), datetime.UTC),
        )
        yield server


@dataclasses.dataclass
class Serving:
    """A leader serving `small` and `large`, and what GARM and the workload held then."""

    ctx: testing.Context[charm.GarmCharm]
    state: testing.State
    garm: dict[str, Any]
    applied: int
    calls: int


@pytest.fixture
def serving(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
) -> Serving:
    """The leader after two hooks: both scale sets created in GARM and converged."""
    secrets = {app: _app_secrets(app, app_key) for app in APPS}
    relations = {
        testing.Relation(
            "garm-configurator",
            remote_app_name=app,
            remote_app_data=_databag(app, secrets[app]),
        )
        for app in APPS
    }
    state = testing.State(
        leader=True,
        resources=resources,
        config={
            "port": sim.port,
            "external-url": "https://garm.example.com",
            "handover-grace": "1s",
        },
        relations=relations,
        secrets={*secrets["small"], *secrets["large"], *garm_secrets()},
    )
    ctx = testing.Context(charm.GarmCharm)
    state = ctx.run(ctx.on.config_changed(), state)
    sim.clock.advance(1.1)  # past the hand-over grace, measured from GARM's created_at
    state = ctx.run(ctx.on.update_status(), state)
    assert state.unit_status == ops.ActiveStatus(), state.unit_status
    sim.reset_log()
    return Serving(ctx, state, garm_objects(sim), len(workload.applied), len(workload.calls))


class _Missing:
    """The field is taken out of where it is published."""

    def __repr__(self) -> str:
        """A stable test id."""
        return "MISSING"


MISSING = _Missing()


def changed_field(raw: str, path: str, value: Any) -> str:
    """A JSON object with the value at a dotted path replaced (or removed, for MISSING)."""
    document = json.loads(raw)
    *parents, leaf = path.split(".")
    target = document
    for parent in parents:
        target = target[parent]
    if value is MISSING:
        target.pop(leaf, None)
    else:
        target[leaf] = value
    return json.dumps(document)


RSA_FINGERPRINT = "SHA256:" + "R" * 43
ED25519_FINGERPRINT = "SHA256:" + "E" * 43
RELAY = {
    "host": "10.1.2.3",
    "port": "10022",
    "rsa_fingerprint": RSA_FINGERPRINT,
    "ed25519_fingerprint": ED25519_FINGERPRINT,
}


def _app_secrets(app: str, app_key: str) -> list[testing.Secret]:
    """The OpenStack password and App key secrets a configurator granted, naming it."""
    return [
        testing.Secret(tracked_content={"password": OPENSTACK_PASSWORD, "app": app}),
        testing.Secret(tracked_content={"private-key": app_key, "app": app}),
    ]


def _databag(app: str, secrets: list[testing.Secret]) -> dict[str, str]:
    """What configurator `app` publishes: a scale set named after it for org `acme`."""
    password, key = secrets
    data = published_databag(
        ("linux", app), password_secret_id=password.id, private_key_secret_id=key.id
    )
    data[interface.SCALESET_KEY] = changed_field(data[interface.SCALESET_KEY], "name", app)
    return data


def _logical(extended_state: str, name: str) -> str:
    """The logical name the charm's marker records (live names are too short to tell it)."""
    marker = parse_marker(extended_state)
    return marker.logical if marker is not None else name


def garm_objects(sim: GarmSim) -> dict[str, Any]:
    """What GARM holds that the charm writes, by logical scale-set name; not runner states."""
    scalesets = {
        _logical(scaleset.extended_state, scaleset.name): {
            "id": scaleset.id,
            "name": scaleset.name,
            "enabled": scaleset.enabled,
            "labels": sorted(scaleset.tag_ids),
            "min_idle_runners": scaleset.min_idle_runners,
            "max_runners": scaleset.max_runners,
            "image": scaleset.image,
            "flavor": scaleset.flavor,
            "extra_specs": scaleset.extra_specs,
            "extended_state": scaleset.extended_state,
            "template_id": scaleset.template_id,
        }
        for scaleset in sim.state.scalesets.values()
    }
    return {
        "scalesets": scalesets,
        "credentials": sorted(c.name for c in sim.state.credentials.values()),
        "entities": sorted(e.display_name for e in sim.state.entities.values()),
        "templates": sorted((t.name, t.data) for t in sim.state.templates.values()),
    }
