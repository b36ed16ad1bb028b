"""The database relation: endpoints validated, sslmode and CA from the provider's TLS fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ops
import pytest
from ops import testing

from doubles.database_publication import database_relation, database_secret
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from relations import database
from relations.database import InvalidDatabaseError, parse_endpoint
from unit.walks.charm import Config, Ctx, Resources, bootstrap_secrets

CA = "-----BEGIN CERTIFICATE-----\nMIIBdummyCA\n-----END CERTIFICATE-----"


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("10.0.0.5:5433", ("10.0.0.5", 5433)),
        ("10.0.0.5", ("10.0.0.5", 5432)),
        (" db-1.example.com:1 ", ("db-1.example.com", 1)),
        ("[fd00::5]:65535", ("fd00::5", 65535)),
        ("[::1]", ("::1", 5432)),
    ],
)
def test_endpoint_parses_host_and_port(endpoint: str, expected: tuple[str, int]):
    """Arrange: a well-formed endpoint. Act: parse. Assert: its host and port (5432 if none)."""
    assert parse_endpoint(endpoint) == expected


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ("fd00::5:5432", "must be in brackets"),
        ("[fd00::5:5432", "IPv6 address is malformed"),
        ("[db.example.com]:5432", "IPv6 address is malformed"),
        ("[fd00::5]5432", "IPv6 address is malformed"),
        ("db:0", "port is not 1-65535"),
        ("db:65536", "port is not 1-65535"),
        ("db:99999999999999999999", "port is not 1-65535"),
        ("db:", "port is not 1-65535"),
        ("db:54x", "port is not 1-65535"),
        ("evil host:5432", "not a host name"),
        ("db\n.example.com", "not a host name"),
        ("-db:5432", "not a host name"),
        ("user@db:5432", "not a host name"),
        ("", "not a host name"),
        ("a" * 254, "not a host name"),
    ],
)
def test_bad_endpoint_is_refused_without_echoing_it(endpoint: str, problem: str):
    """Arrange: a malformed endpoint. Act: parse.

    Assert: InvalidDatabaseError saying what is wrong, never echoing the value.
    """
    with pytest.raises(InvalidDatabaseError, match=problem) as caught:
        parse_endpoint(endpoint)

    assert endpoint.strip() == "" or endpoint.strip() not in str(caught.value)


def test_bad_endpoint_blocks_and_renders_nothing(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: the provider shares an endpoint with port 99999. Act: relation-changed.

    Assert: Blocked naming the database and the fix; nothing rendered, no GARM call.
    """
    secret = database_secret()
    relation = database_relation(secret, endpoints="10.0.0.5:99999")
    state = testing.State(
        leader=True,
        resources=resources,
        config=config,
        relations=[relation],
        secrets=[*bootstrap_secrets(), secret],
    )

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    assert out.unit_status == ops.BlockedStatus(
        "database: the endpoint's port is not 1-65535; fix the PostgreSQL endpoint or remove "
        "the relation"
    )
    assert workload.applied == []
    assert garm.calls() == []


@pytest.mark.parametrize(
    ("tls", "expected_sslmode", "expected_ca"),
    [
        ({"tls": "true", "tls-ca": CA}, "verify-full", CA),
        ({"tls": "true"}, "require", ""),
        ({"tls": "false", "tls-ca": CA}, "prefer", ""),
        (None, "prefer", ""),
    ],
    ids=["tls-with-ca", "tls-without-ca", "tls-off", "no-tls-secret"],
)
def test_sslmode_follows_the_providers_tls(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    tls: dict[str, str] | None,
    expected_sslmode: str,
    expected_ca: str,
):
    """Arrange: the provider's answer with (or without) its TLS secret. Act: relation-changed.

    Assert: GARM's PostgreSQL sslmode and CA follow `tls` and `tls-ca`.
    """
    user = database_secret()
    relation = database_relation(user, endpoints="db.example.com:5432")
    secrets = [*bootstrap_secrets(), user]
    if tls is not None:
        tls_secret = testing.Secret(tracked_content=tls)
        secrets.append(tls_secret)
        (response,) = json.loads(relation.remote_app_data["requests"])
        response["secret-tls"] = tls_secret.id
        data = {**relation.remote_app_data, "requests": json.dumps([response])}
        relation = testing.Relation("database", remote_app_name="postgresql", remote_app_data=data)
    state = testing.State(
        leader=True, resources=resources, config=config, relations=[relation], secrets=secrets
    )

    ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    postgres = workload.applied[-1].postgres
    assert postgres is not None
    assert (postgres.sslmode, postgres.ca_cert) == (expected_sslmode, expected_ca)


def test_importing_the_charm_does_not_load_the_database_library():
    """Arrange: a fresh interpreter. Act: import charm.

    Assert: dpcharmlibs is not loaded (only a hook with the relation needs it).
    """
    src = Path(database.__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(src.parent / "lib")])}
    code = "import sys, charm; print('dpcharmlibs' in sys.modules)"

    output = subprocess.run(
        [sys.executable, "-c", code], cwd=src, capture_output=True, text=True, check=True, env=env
    ).stdout

    assert output.strip() == "False"
