"""Every config option and relation field garm reads, with a bad value, on a unit that serves.

Each table is checked against where the names come from (charmcraft.yaml, the relation
interface's models), so a new option or field fails here until it has a row. The unit already
runs GARM (the simulator, over HTTP) with the scale sets of two configurators, `small` and
`large`. A bad value must block naming the option or the relation and field within 120
characters (wait, for a database field not published for garm yet; only log, for the optional
debug-ssh relay), and change nothing GARM holds nor anything the workload runs; a bad
configurator leaves the other one reconciled (docs/adr/0014-bad-input-changes-nothing.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

import ops
import pytest
import yaml
from charmlibs.interfaces.tls_certificates import CertificateSigningRequest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ops import testing

import charm
import unit.walks.serving as serving_walks
import unit.walks.tls as tls_walks
from charm_config import InvalidConfigError, parse_config
from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.database_publication import database_relation
from doubles.tls_publication import certificates_relation, csr_pem, requested
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile.bootstrap import ADMIN_LABEL
from relations import debug_ssh
from unit.doubles.fake_systemctl import TickMachine
from unit.walks.serving import MISSING, RELAY, Serving, changed_field, garm_objects
from unit.walks.tls import TlsWalk

garm_port = tls_walks.garm_port
tls_walk = tls_walks.tls_walk
app_key = serving_walks.app_key
serving = serving_walks.serving
sim = serving_walks.sim

CHARMCRAFT = Path(charm.__file__).resolve().parents[1] / "charmcraft.yaml"


@dataclasses.dataclass(frozen=True)
class Bad:
    """One row: an option or field, a bad value for it, words the status must hold, its kind."""

    name: str
    value: Any
    words: tuple[str, ...]
    status: type[ops.StatusBase] = ops.BlockedStatus

    def __str__(self) -> str:
        """The test id: the name and the start of the value."""
        return f"{self.name}={self.value!r}"[:60]


# Config options ----------------------------------------------------------------------------

CONFIG_ROWS = (
    Bad("external-url", "https://garm.example.com:99999", ("external-url", "port of 1-65535")),
    Bad("external-url", "https://admin@garm.example.com", ("external-url", "user or password")),
    Bad("external-url", "https://garm example.com", ("external-url", "spaces")),
    Bad("external-url", "https://garm.example.com/\x1b[0m", ("external-url", "control")),
    Bad("external-url", "ftp://garm.example.com", ("external-url", "http:// or https://")),
    Bad("external-url", "https://garm.example.com/" + "a" * 200_000, ("at most 1024 char",)),
    Bad("external-url", "https://garm.example.com:", ("external-url", "port of 1-65535")),
    Bad("external-url", "https://garm.example.com/a/../admin", ("external-url", ". or ..")),
    Bad("external-url", "https://garm.example.com/%2e%2e/x", ("external-url", ". or ..")),
    Bad("external-url", "https://garm!.example.com", ("external-url", "DNS name or an IP")),
    Bad("external-url", "https://xn--a.example.com", ("external-url", "DNS name or an IP")),
    Bad("port", 0, ("port", "1024-65535")),
    Bad("port", 80, ("port", "1024-65535", "unprivileged")),
    Bad("port", 65536, ("port", "1024-65535")),
    Bad("log-level", "verbose", ("log-level", "'debug', 'info', 'warn' or 'error'")),
    Bad("drain-timeout", "145h", ("drain-timeout", "at most 144h")),
    Bad("drain-timeout", "9" * 30 + "h", ("drain-timeout", "duration such as 7h")),
    Bad("handover-grace", "25h", ("handover-grace", "at most 24h")),
    Bad("handover-grace", "0s", ("handover-grace", "longer than zero")),
    Bad("handover-timeout", "169h", ("handover-timeout", "at most 168h")),
    Bad("handover-timeout", "soon", ("handover-timeout", "duration such as 7h")),
    Bad("reconcile-interval", "25h", ("reconcile-interval", "at most 24h")),
    Bad("reconcile-interval", "-1m", ("reconcile-interval", "duration such as 7h")),
    Bad("reconcile-interval", "1s", ("reconcile-interval", "0 or at least 30s")),
    Bad("reconcile-interval", "29s", ("reconcile-interval", "0 or at least 30s")),
    Bad("refresh-surge", 0, ("refresh-surge", "1-50")),
    Bad("changeover-surge", -1, ("changeover-surge", "0 (no bound) to 100000")),
    Bad("max-writes-per-pass", 10_001, ("max-writes-per-pass", "0 (no bound) to 10000")),
    Bad("runner-stuck-timeout", "169h", ("runner-stuck-timeout", "at most 168h")),
    Bad("runner-stuck-timeout", "1s", ("runner-stuck-timeout", "0 or at least 10m")),
    Bad("runner-stuck-timeout", "9m59s", ("runner-stuck-timeout", "0 or at least 10m")),
    Bad("drain-timeout", "\u0663h", ("drain-timeout", "duration such as 7h")),  # Arabic-Indic 3
    Bad("external-url", "http://[v1.fe]:9997", ("external-url", "DNS name or an IP")),
    Bad("external-url", "http://2130706433:9997", ("external-url", "DNS name or an IP")),
    Bad("external-url", "http://0x7f.0.0.1", ("external-url", "DNS name or an IP")),
    Bad("external-url", "https://garm.example.com/%00", ("external-url", "control")),
    Bad("external-url", "https://garm.example.com:\u00b2", ("external-url", "port of 1-65535")),
    Bad("teardown-timeout", "25h", ("teardown-timeout", "at most 24h")),
    Bad("backup-keep", 0, ("backup-keep", "1-1000")),
)


def test_every_config_option_has_a_row():
    """Arrange: the options charmcraft.yaml declares. Act: compare with the table.

    Assert: each option has at least one bad value below, and the table names no other.
    """
    declared = set(yaml.safe_load(CHARMCRAFT.read_text())["config"]["options"])

    assert {row.name for row in CONFIG_ROWS} == declared


@pytest.mark.parametrize("row", CONFIG_ROWS, ids=str)
def test_bad_config_blocks_and_changes_nothing(
    row: Bad,
    serving: Serving,
    sim: GarmSim,
    workload: RecordingWorkload,
    tick_machine: TickMachine,
):
    """Arrange: the leader serves `small` and `large`. Act: the bad value, config-changed.

    Then update-status.
    Assert: Blocked naming the option and its rule after each hook, within 120 characters;
    no write reached GARM and its objects are as they were; the workload was not applied,
    stopped or reinstalled; the reconcile tick's timer was left alone.
    """
    ctx, before = serving.ctx, serving.state
    bad = dataclasses.replace(before, config={**before.config, row.name: row.value})
    timer = len(tick_machine.systemctl.calls())

    changed = ctx.run(ctx.on.config_changed(), bad)
    ticked = ctx.run(ctx.on.update_status(), changed)

    for out in (changed, ticked):
        assert isinstance(out.unit_status, ops.BlockedStatus)
        message = out.unit_status.message
        assert message.startswith(f"invalid config {row.name}: "), message
        assert all(word in message for word in row.words), message
        assert len(message) <= 120
    assert sim.write_count() == 0
    assert garm_objects(sim) == serving.garm
    assert len(workload.applied) == serving.applied
    assert workload.calls[serving.calls :] == []
    assert workload.running
    assert len(tick_machine.systemctl.calls()) == timer


# garm-configurator relation fields ---------------------------------------------------------


SECTIONS = {
    interface.SCALESET_KEY: interface.ScaleSet,
    interface.OPENSTACK_KEY: interface.OpenStackProvider,
    interface.GITHUB_APP_KEY: interface.GitHubApp,
    interface.RUNNER_KEY: interface.RunnerOptions,
}
# Fields whose values are secret ids: their rows point at secrets garm must not or cannot use.
NOT_GRANTED = "secret:d1n3kb7mp25c78a8ob99"
ADMIN_SECRET = "<garm's admin secret>"
LARGES_SECRET = "<large's secret>"

RELATION_ROWS = (
    Bad("version", "3", ("unsupported version '3'", "upgrade the garm charm")),
    Bad("version", MISSING, ("'version' is missing",)),
    Bad("scaleset", "{not json", ("scaleset: Invalid JSON",)),
    Bad("scaleset", MISSING, ("'scaleset' is missing",)),
    Bad("openstack", "[]", ("openstack: Input should be an object",)),
    Bad("github-app", MISSING, ("'github-app' is missing",)),
    Bad("runner", '"proxy"', ("runner: Input should be an object",)),
    Bad("scaleset.name", "Small!", ("scaleset.name: must be 1-40 characters",)),
    Bad("scaleset.labels", [], ("scaleset.labels: Tuple should have at least 1 item",)),
    Bad("scaleset.labels", ["x64", "X64"], ("labels must be unique",)),
    Bad("scaleset.flavor", "m1\tsmall", ("scaleset.flavor: must be 1-255 printable",)),
    Bad("scaleset.image", "noble x64", ("scaleset.image: must be an image name",)),
    Bad("scaleset.os_type", "windows", ("scaleset.os_type: Input should be 'linux'",)),
    Bad("scaleset.os_arch", "riscv64", ("scaleset.os_arch: Input should be 'amd64'",)),
    Bad("scaleset.min_idle_runners", -1, ("scaleset.min_idle_runners", "greater than or")),
    Bad("scaleset.min_idle_runners", 5, ("min_idle_runners must not exceed max_runners",)),
    Bad("scaleset.max_runners", 10**6, ("scaleset.max_runners: Input should be less than",)),
    Bad("scaleset.max_runners", "4", ("scaleset.max_runners: Input should be a valid int",)),
    Bad("scaleset.runner_group", "my group", ("scaleset.runner_group: must be 1-64",)),
    Bad("scaleset.entity", MISSING, ("scaleset.entity: Field required",)),
    Bad("scaleset.entity.kind", "enterprise", ("scaleset.entity.kind: Input should be",)),
    Bad("scaleset.entity.owner", "-acme", ("scaleset.entity.owner: must be a GitHub account",)),
    Bad("scaleset.entity.repo", "runners", ("'repo' is required for kind 'repo' and forbidden",)),
    Bad("openstack.auth_url", "ftp://keystone", ("openstack.auth_url: must be an http://",)),
    Bad("openstack.auth_url", "http://169.254.169.254/v3", ("auth_url: must not be a cloud",)),
    Bad(
        "openstack.auth_url", "https://u:s3cret@keystone/v3", ("auth_url: must not carry a user",)
    ),
    Bad("openstack.username", " runners", ("openstack.username: must be 1-255 printable",)),
    Bad("openstack.password_secret_id", "password", ("password_secret_id: must be a Juju",)),
    Bad("openstack.password_secret_id", NOT_GRANTED, (f"secret {NOT_GRANTED} does not exist",)),
    Bad("openstack.password_secret_id", ADMIN_SECRET, ("is owned by this application: refused",)),
    Bad("openstack.project_name", "", ("openstack.project_name: must be 1-255 printable",)),
    Bad("openstack.user_domain_name", 7, ("openstack.user_domain_name: Input should be a",)),
    Bad("openstack.project_domain_name", "a" * 256, ("openstack.project_domain_name: must",)),
    Bad("openstack.region_name", "Region\x00One", ("openstack.region_name: must be 1-255",)),
    Bad("openstack.network", MISSING, ("openstack.network: Field required",)),
    Bad("github-app.app_id", 0, ("github-app.app_id: Input should be greater than",)),
    Bad("github-app.installation_id", 2**53, ("github-app.installation_id: Input should be",)),
    Bad("github-app.private_key_secret_id", LARGES_SECRET, ("does not name small: refused",)),
    Bad("runner.http_proxy", "proxy:3128", ("runner.http_proxy: must be an http://",)),
    Bad("runner.http_proxy", "http://[fe80::1]:3128", ("http_proxy: must not be a cloud",)),
    Bad("runner.http_proxy", "http://metadata.google.internal", ("http_proxy: must not be",)),
    Bad("runner.http_proxy", "http://u:s3cret@proxy:3128", ("http_proxy: must not carry a user",)),
    Bad("runner.aproxy_exclude_addresses", ["::1"], ("aproxy_exclude_addresses.0: must be IPv4",)),
    Bad("runner.aproxy_redirect_ports", ["0"], ("runner.aproxy_redirect_ports.0: must be ports",)),
    Bad("runner.aproxy_redirect_ports", ["\u00b2"], ("aproxy_redirect_ports.0: must be ports",)),
    Bad("runner.dockerhub_mirror", "mirror", ("runner.dockerhub_mirror: must be an http://",)),
    Bad("runner.dockerhub_mirror", "https://s3cret@mirror", ("dockerhub_mirror: must not carry",)),
    Bad("runner.otel_collector_endpoint", 4317, ("runner.otel_collector_endpoint: Input",)),
    Bad(
        "runner.otel_collector_endpoint",
        "http://u:s3cret@otel",
        ("otel_collector_endpoint: must",),
    ),
    Bad("runner.pre_job_script", "echo\x00", ("runner.pre_job_script: must be at most 16384",)),
    Bad("runner.pre_install_scripts", {".hidden": "true"}, ("script names must be 1-64",)),
    Bad(
        "runner.pre_install_scripts",
        {"a": "x" * 8000, "b": "x" * 8000},
        ("names and scripts together must be at most 15360",),
    ),
    Bad("runner.min_idle_schedule", "Mon 08:00-09:00 Mars/Olympus=1", ("unknown time zone",)),
    Bad("runner.min_idle_schedule", "Mon 08:00-09:00 localtime=1", ("no place's time zone",)),
    Bad("runner.min_idle_schedule", "Mon 08:00-09:00 UTC=\u00b2", ("entry 1: expected <window>",)),
)


def _schema_fields() -> set[str]:
    """Every databag key, and every field of the JSON objects under them, as rows name them."""
    fields = set(interface.DATA_KEYS)
    for key, model in SECTIONS.items():
        fields |= {f"{key}.{name}" for name in model.model_fields}
    fields |= {f"scaleset.entity.{name}" for name in interface.GitHubEntity.model_fields}
    return fields


def test_every_relation_field_has_a_row():
    """Arrange: the interface's databag keys and models. Act: compare with the table.

    Assert: each key and field has at least one bad value below, and the table names no other.
    """
    sections = {name.replace("_", "-") for name in interface.GarmConfiguratorData.model_fields}

    assert sections == set(SECTIONS)
    assert {row.name for row in RELATION_ROWS} == _schema_fields()


@pytest.mark.parametrize("row", RELATION_ROWS, ids=str)
def test_bad_relation_field_blocks_and_spares_the_other_configurator(
    row: Bad, serving: Serving, sim: GarmSim, workload: RecordingWorkload, app_key: str
):
    """Arrange: the leader serves `small` and `large`; `large` raises its max-runners to 5.

    Act: `small` publishes the bad value; relation-changed.
    Assert: Blocked naming the relation and the field, within 120 characters; `small`'s scale
    set, the credentials, entities and templates are as they were and the only writes to GARM
    are `large`'s update; `small`'s provider is still rendered.
    """
    ctx, before = serving.ctx, serving.state
    relations = {relation.remote_app_name: relation for relation in _configurators(before)}
    small = dataclasses.replace(
        relations["small"], remote_app_data=_with_bad_value(relations["small"], row, before)
    )
    large_data = dict(relations["large"].remote_app_data)
    large_data["scaleset"] = changed_field(large_data["scaleset"], "max_runners", 5)
    large = dataclasses.replace(relations["large"], remote_app_data=large_data)
    state = dataclasses.replace(before, relations={small, large})

    out = ctx.run(ctx.on.relation_changed(small), state)

    _assert_only_large_changed(out, row, small.id, serving, sim, workload)


SECRET_CONTENT_ROWS = (
    Bad(interface.OPENSTACK_PASSWORD_KEY, "", ("openstack.password_secret_id", "1-4096 char")),
    Bad(interface.OPENSTACK_PASSWORD_KEY, MISSING, ("has no key 'password'",)),
    Bad(interface.GITHUB_APP_PRIVATE_KEY_KEY, "garbage", ("private_key_secret_id: must be",)),
    Bad(interface.GITHUB_APP_PRIVATE_KEY_KEY, MISSING, ("has no key 'private-key'",)),
    Bad(interface.PUBLISHER_KEY, MISSING, ("does not name small: refused",)),
    Bad(interface.PUBLISHER_KEY, "large", ("does not name small: refused",)),
)


def test_every_secret_content_key_has_a_row():
    """Arrange: the content keys the interface reads. Act: compare with the table.

    Assert: each key has at least one bad value below, and the table names no other.
    """
    keys = {
        interface.OPENSTACK_PASSWORD_KEY,
        interface.GITHUB_APP_PRIVATE_KEY_KEY,
        interface.PUBLISHER_KEY,
    }

    assert {row.name for row in SECRET_CONTENT_ROWS} == keys


@pytest.mark.parametrize("row", SECRET_CONTENT_ROWS, ids=str)
def test_bad_secret_content_blocks_and_spares_the_other_configurator(
    row: Bad, serving: Serving, sim: GarmSim, workload: RecordingWorkload
):
    """Arrange: the leader serves `small` and `large`; `large` raises its max-runners to 5.

    Act: `small` puts the bad value into one of its secrets (the App key's for `private-key`,
    else the password's); secret-changed.
    Assert: as for a bad relation field: Blocked naming the relation and the secret's field,
    `small`'s scale set as it was, only `large`'s update written.
    """
    ctx, before = serving.ctx, serving.state
    holder = (
        interface.GITHUB_APP_PRIVATE_KEY_KEY
        if row.name == interface.GITHUB_APP_PRIVATE_KEY_KEY
        else interface.OPENSTACK_PASSWORD_KEY
    )
    secret = next(
        s
        for s in before.secrets
        if s.tracked_content.get("app") == "small" and holder in s.tracked_content
    )
    content = {k: v for k, v in secret.tracked_content.items() if k != row.name}
    if row.value is not MISSING:
        content[row.name] = row.value
    changed = dataclasses.replace(secret, tracked_content=content, latest_content=content)
    relations = {relation.remote_app_name: relation for relation in _configurators(before)}
    large_data = dict(relations["large"].remote_app_data)
    large_data["scaleset"] = changed_field(large_data["scaleset"], "max_runners", 5)
    large = dataclasses.replace(relations["large"], remote_app_data=large_data)
    state = dataclasses.replace(
        before,
        relations={relations["small"], large},
        secrets={*(s for s in before.secrets if s.id != secret.id), changed},
    )

    out = ctx.run(ctx.on.secret_changed(changed), state)

    _assert_only_large_changed(out, row, relations["small"].id, serving, sim, workload)


def _assert_only_large_changed(
    out: testing.State,
    row: Bad,
    small_id: int,
    serving: Serving,
    sim: GarmSim,
    workload: RecordingWorkload,
) -> None:
    """Blocked naming `small`'s relation and the row's words; in GARM only `large` changed."""
    assert isinstance(out.unit_status, ops.BlockedStatus)
    message = out.unit_status.message
    assert message.startswith(f"relation garm-configurator:{small_id} (small): "), message
    assert all(word in message for word in row.words), message
    assert len(message) <= 120
    assert "s3cret" not in message
    after = garm_objects(sim)
    assert after["scalesets"]["small"] == serving.garm["scalesets"]["small"]
    assert after["scalesets"]["large"]["max_runners"] == 5
    assert {key: after[key] for key in ("credentials", "entities", "templates")} == {
        key: serving.garm[key] for key in ("credentials", "entities", "templates")
    }
    large_id = after["scalesets"]["large"]["id"]
    writes = [e.path for e in sim.requests if e.method in ("POST", "PUT", "PATCH", "DELETE")]
    assert set(writes) <= {"/api/v1/auth/login", f"/api/v1/scalesets/{large_id}"}
    assert workload.running
    assert "openstack-small" in workload.rendered_provider_names()


def _with_bad_value(relation: testing.Relation, row: Bad, state: testing.State) -> dict[str, str]:
    """`small`'s databag with the row's bad value in place (a runner row makes it version 2)."""
    data = dict(relation.remote_app_data)
    key, _, path = row.name.partition(".")
    if key == interface.RUNNER_KEY:
        data[interface.VERSION_KEY] = interface.SCHEMA_VERSION
        data[key] = json.dumps({})
    value = _secret_value(row.value, state)
    if not path:
        if value is MISSING:
            del data[key]
        else:
            data[key] = value
        return data
    data[key] = changed_field(data[key], path, value)
    return data


def _secret_value(value: Any, state: testing.State) -> Any:
    """The id of the secret a placeholder names; other values as they are."""
    if value == ADMIN_SECRET:
        return next(s.id for s in state.secrets if s.label == ADMIN_LABEL)
    if value == LARGES_SECRET:
        return next(
            s.id
            for s in state.secrets
            if s.tracked_content.get("app") == "large" and "private-key" in s.tracked_content
        )
    return value


# database relation fields ------------------------------------------------------------------

CA = "-----BEGIN CERTIFICATE-----\nMIIBdummyCA\n-----END CERTIFICATE-----"
WAITING = "waiting for the database relation to share credentials"
DATABASE_ROWS = (
    Bad("version", "v9", ("database: the provider's version is malformed",)),
    Bad("requests", "not json", ("database: the provider's requests is malformed",)),
    Bad("resource", "other", (WAITING,), ops.WaitingStatus),
    Bad("endpoints", "10.0.0.5:99999", ("database: the endpoint's port is not 1-65535",)),
    Bad("endpoints", "10.0.0.5:\u00b2", ("database: the endpoint's port is not 1-65535",)),
    Bad("endpoints", MISSING, (WAITING,), ops.WaitingStatus),
    # The library keeps reading the secrets it was granted before (by its own label): GARM
    # runs on as it was, which is all a bad value may do.
    Bad("secret-user", NOT_GRANTED, ("",), ops.ActiveStatus),
    Bad("username", MISSING, (WAITING,), ops.WaitingStatus),
    Bad("password", MISSING, (WAITING,), ops.WaitingStatus),
    Bad("secret-tls", NOT_GRANTED, ("",), ops.ActiveStatus),
    # The library resolves the secret's content into the answer, so pydantic places it there.
    Bad("tls", "maybe", ("database: the provider's requests.0 is malformed",)),
    Bad("tls-ca", "not a certificate", ("database: the provider's tls-ca is not a PEM",)),
)
# What the provider may publish that garm never reads, so no value of it can be bad for garm.
DATABASE_UNREAD = {
    "request-id": "the library matches the answer to the request with it",
    "salt": "the library's own",
    "read-only-endpoints": "GARM writes; it has no use for replicas",
    "uris": "garm builds its connection from endpoints and the user secret",
    "read-only-uris": "as read-only-endpoints",
    "secret-extra": "nothing garm needs is in it",
    "secret-entity": "garm asks for no entity (role)",
    "entity-name": "in secret-entity",
    "entity-password": "in secret-entity",
}


def test_every_database_field_has_a_row():
    """Arrange: the provider model's fields (by their databag names) and `requests`.

    Act: compare with the table and the fields garm does not read.
    Assert: each field has a row or a reason it is not read, never both.
    """
    from dpcharmlibs.interfaces import ResourceProviderModel  # noqa: PLC0415 - as database.py

    published = {f.alias or n for n, f in ResourceProviderModel.model_fields.items()}
    rows = {row.name for row in DATABASE_ROWS}

    assert rows | set(DATABASE_UNREAD) == published | {"requests"}
    assert not rows & set(DATABASE_UNREAD)


@pytest.fixture
def on_postgres(serving: Serving, sim: GarmSim) -> Serving:
    """`serving`, with GARM moved onto a related PostgreSQL (with TLS) while it held nothing.

    The move happens before the scale sets exist, as GARM cannot carry data across backends.
    """
    user = testing.Secret(tracked_content={"username": "relation_7", "password": "pg-password"})
    tls = testing.Secret(tracked_content={"tls": "true", "tls-ca": CA})
    relation = database_relation(user, endpoints="db.example.com:5432")
    (response,) = json.loads(relation.remote_app_data["requests"])
    response["secret-tls"] = tls.id
    relation = dataclasses.replace(
        relation, remote_app_data={**relation.remote_app_data, "requests": json.dumps([response])}
    )
    state = dataclasses.replace(
        serving.state,
        relations={*serving.state.relations, relation},
        secrets={*serving.state.secrets, user, tls},
    )
    return dataclasses.replace(serving, state=state)


@pytest.mark.parametrize("row", DATABASE_ROWS, ids=str)
def test_bad_database_field_keeps_garm_as_it_runs(
    row: Bad, on_postgres: Serving, sim: GarmSim, workload: RecordingWorkload
):
    """Arrange: GARM runs on PostgreSQL with TLS, serving `small` and `large`.

    Act: the provider publishes the bad value; relation-changed.
    Assert: Blocked (an unusable value) or Waiting (not published for garm yet) naming the
    database relation and what is wrong, within 120 characters (or, for a secret the library
    no longer follows, Active as before); GARM's files as they were, no restart or stop, no
    write to GARM.
    """
    ctx = on_postgres.ctx
    running = ctx.run(ctx.on.update_status(), on_postgres.state)
    assert running.unit_status == ops.ActiveStatus(), running.unit_status
    assert workload.applied[-1].postgres is not None
    rendered, restarts, calls = workload.applied[-1], workload.restarts, len(workload.calls)
    sim.reset_log()
    state, relation = _with_bad_database_value(running, row)

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    message = out.unit_status.message
    assert isinstance(out.unit_status, row.status)
    assert all(word in message for word in row.words), message
    assert len(message) <= 120
    assert sim.write_count() == 0
    assert garm_objects(sim) == on_postgres.garm
    assert workload.applied[-1] == rendered
    assert workload.restarts == restarts
    assert not {"stop", "remove"} & set(workload.calls[calls:])
    assert workload.running


def _with_bad_database_value(
    state: testing.State, row: Bad
) -> tuple[testing.State, testing.Relation]:
    """`state` with the row's value in the provider's answer, its databag or its secrets."""
    relation = next(r for r in state.relations if r.endpoint == "database")
    assert isinstance(relation, testing.Relation)
    data = dict(relation.remote_app_data)
    (response,) = json.loads(data["requests"])
    secrets = {s.id: s for s in state.secrets}
    holders = {"username": "secret-user", "password": "secret-user", "tls": "secret-tls"}
    holders["tls-ca"] = "secret-tls"
    if row.name in holders:
        secret = secrets[response[holders[row.name]]]
        content = {k: v for k, v in secret.tracked_content.items() if k != row.name}
        if row.value is not MISSING:
            content[row.name] = row.value
        secrets[secret.id] = dataclasses.replace(
            secret, tracked_content=content, latest_content=content
        )
    elif row.name in ("version", "requests"):
        data[row.name] = row.value
    elif row.value is MISSING:
        del response[row.name]
    else:
        response[row.name] = row.value
    if row.name != "requests":
        data["requests"] = json.dumps([response])
    changed = dataclasses.replace(relation, remote_app_data=data)
    relations = {r for r in state.relations if r.endpoint != "database"} | {changed}
    return dataclasses.replace(state, relations=relations, secrets=set(secrets.values())), changed


# debug-ssh relation fields -----------------------------------------------------------------

DEBUG_SSH_ROWS = (
    Bad("host", "-relay", ("host",)),
    Bad("host", MISSING, ("host",)),
    Bad("host", "127.0.0.1", ("host is a loopback, link-local or cloud-metadata",)),
    Bad("host", "169.254.169.254", ("host is a loopback, link-local or cloud-metadata",)),
    Bad("host", "fe80::1", ("host is a loopback",)),
    Bad("host", "localhost", ("host is a loopback",)),
    Bad("host", "metadata.google.internal", ("host is a loopback",)),
    Bad("host", "2130706433", ("host is a loopback",)),
    Bad("port", "99999", ("port",)),
    Bad("port", "22 ", ("port",)),
    Bad("port", "\u00b2", ("port",)),  # superscript two: isdigit() is true, int() raises
    Bad("port", "\u0662\u0662", ("port",)),  # Arabic-Indic 22: int() reads it
    Bad("rsa_fingerprint", "MD5:aa:bb", ("rsa_fingerprint",)),
    Bad("ed25519_fingerprint", MISSING, ("ed25519_fingerprint",)),
)


def test_every_debug_ssh_field_has_a_row():
    """Arrange: the relay's fields as garm reads them. Act: compare with the table.

    Assert: each field has at least one bad value below, and the table names no other.
    """
    fields = {field.name for field in dataclasses.fields(debug_ssh.DebugSsh)}

    assert {row.name for row in DEBUG_SSH_ROWS} == fields == set(RELAY)


@pytest.mark.parametrize("row", DEBUG_SSH_ROWS, ids=str)
def test_bad_debug_ssh_field_is_logged_and_changes_nothing(
    row: Bad, serving: Serving, sim: GarmSim, workload: RecordingWorkload
):
    """Arrange: the leader serves `small` and `large` with a valid relay, runners refreshed.

    The new templates' rolling refresh of the runners has finished.
    Act: the relay's unit publishes the bad value; relation-changed.
    Assert: a warning names the relation, the unit and the field; the status is as before;
    no write reached GARM (the runners keep the relay they had).
    """
    ctx = serving.ctx
    relay = testing.Relation("debug-ssh", remote_units_data={0: dict(RELAY)})
    state = dataclasses.replace(serving.state, relations={*serving.state.relations, relay})
    with_relay = ctx.run(ctx.on.relation_changed(relay, remote_unit=0), state)
    sim.clock.advance(1.1)
    with_relay = ctx.run(ctx.on.update_status(), with_relay)
    for _ in range(10):
        if "refreshing" not in with_relay.unit_status.message:
            break
        sim.advance(61)
        with_relay = ctx.run(ctx.on.update_status(), with_relay)
    before = garm_objects(sim)
    sim.reset_log()
    data = {k: v for k, v in RELAY.items() if k != row.name}
    if row.value is not MISSING:
        data[row.name] = row.value
    bad = dataclasses.replace(relay, remote_units_data={0: data})
    state = dataclasses.replace(
        with_relay, relations={*(r for r in with_relay.relations if r.id != relay.id), bad}
    )

    out = ctx.run(ctx.on.relation_changed(bad, remote_unit=0), state)

    assert out.unit_status == with_relay.unit_status
    warnings = [log.message for log in ctx.juju_log if log.level == "WARNING"]
    assert any("debug-ssh" in w and all(word in w for word in row.words) for w in warnings)
    assert sim.write_count() == 0
    assert garm_objects(sim) == before


# Helpers -----------------------------------------------------------------------------------


def _configurators(state: testing.State) -> list[testing.Relation]:
    return [
        relation
        for relation in state.relations
        if isinstance(relation, testing.Relation) and relation.endpoint == "garm-configurator"
    ]


# --- Found by the hostile-input review (issue #20, "Input") ---
# (was test_hostile_input.py)
# Hostile values of external-url, port and reconcile-interval (issue #20, "Input").
#
# Each must end in a Blocked naming the option, or be normalised to a value every consumer (GARM,
# the certificate request) accepts; no hook may crash. The bad-value table
# (py) proves the Blocked side through a serving unit; these prove the
# normalisation and the crash that a non-ASCII host caused once `certificates` was related.


# The TLS walk's fixtures, shared rather than copied.


def test_a_non_ascii_external_url_host_is_requested_idna_encoded(tls_walk: TlsWalk):
    """Arrange: a leader with the certificates relation. Act: external-url with a non-ASCII host.

    Assert: the hook does not crash and GARM's status is not Blocked; the CSR names the host
    IDNA-encoded (X.509 takes A-labels only).
    """
    tls_walk.serve(None)
    tls_walk.state = dataclasses.replace(
        tls_walk.state,
        config={"port": tls_walk.port, "external-url": "https://gärm.example.com:8443"},
    )

    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.config_changed(), tls_walk.state)

    csr = CertificateSigningRequest.from_string(csr_pem(requested(tls_walk.state)))
    assert csr.sans_dns == {"xn--grm-qla.example.com", "localhost"}
    assert not isinstance(tls_walk.state.unit_status, testing.BlockedStatus)


def test_a_non_ascii_external_url_reaches_garm_idna_encoded(tls_walk: TlsWalk):
    """Arrange: a leader with the certificates relation; GARM on plain HTTP.

    Act: external-url with a non-ASCII host, then the certificate arrives.
    Assert: GARM's callback URL carries the IDNA-encoded host, port and path kept.
    """
    tls_walk.serve(None)
    tls_walk.state = dataclasses.replace(
        tls_walk.state,
        config={"port": tls_walk.port, "external-url": "https://GÄRM.example.com:8443/ci"},
    )
    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.config_changed(), tls_walk.state)
    tls_walk.issue()

    tls_walk.changed()

    assert tls_walk.garm.controller_urls()["callback_url"] == (
        "https://xn--grm-qla.example.com:8443/ci/api/v1/callbacks"
    )


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("https://gärm.example.com", "https://xn--grm-qla.example.com"),
        ("https://bücher.example:8443/x/", "https://xn--bcher-kva.example:8443/x"),
        ("https://GARM.example.com:8443/ci", "https://GARM.example.com:8443/ci"),
        ("https://garm.example.com./ci", "https://garm.example.com./ci"),
        ("http://[fd00::5]:9997", "http://[fd00::5]:9997"),
        ("http://10.1.2.3:9997/a.b/..c", "http://10.1.2.3:9997/a.b/..c"),
    ],
)
def test_external_url_hosts_are_normalised_to_a_labels(given: str, normalised: str):
    """Arrange: a URL whose host is non-ASCII, or ASCII. Act: parse.

    Assert: a non-ASCII host is IDNA-encoded; an ASCII URL stays as the operator spelled it.
    """
    assert parse_config({"external-url": given}).external_url == normalised


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("external-url", "https://g.example/" + "a" * 200_000, "must be at most 1024 characters"),
        ("external-url", "https://garm.example.com:", "must have a port of 1-65535, or none"),
        ("external-url", "http://[fd00::5]:", "must have a port of 1-65535, or none"),
        ("external-url", "https://garm.example.com/a/../admin", "must not have . or .. in its"),
        ("external-url", "https://garm.example.com/..", "must not have . or .. in its path"),
        ("external-url", "https://garm.example.com/./x", "must not have . or .. in its path"),
        ("external-url", "https://garm.example.com/%2E%2e/x", "must not have . or .. in its"),
        ("external-url", "https://garm!.example.com", "must have a DNS name or an IP address"),
        ("external-url", "https://garm..example.com", "must have a DNS name or an IP address"),
        ("external-url", "https://-garm.example.com", "must have a DNS name or an IP address"),
        ("external-url", "https://xn--a.example.com", "must have a DNS name or an IP address"),
        ("external-url", "https://" + "a" * 64 + ".example", "must have a DNS name or an IP"),
        ("external-url", "https://" + "a." * 130 + "example", "must have a DNS name or an IP"),
        ("port", 1, "must be 1024-65535 (GARM runs unprivileged)"),
        ("port", 1023, "must be 1024-65535 (GARM runs unprivileged)"),
        ("reconcile-interval", "1s", "must be 0 or at least 30s"),
        ("reconcile-interval", "29s", "must be 0 or at least 30s"),
    ],
)
def test_hostile_values_are_refused_naming_the_option(option: str, value: object, reason: str):
    """Arrange: a hostile value. Act: parse.

    Assert: InvalidConfigError naming the option and the rule, never echoing the value.
    """
    with pytest.raises(InvalidConfigError) as caught:
        parse_config({option: value})

    assert str(caught.value).startswith(f"invalid config {option}: {reason}")
    assert len(str(caught.value)) <= 120


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("port", 1024),
        ("reconcile-interval", "30s"),
        ("reconcile-interval", "0"),
        ("external-url", "https://g.example/" + "a" * (1024 - 18)),
    ],
)
def test_values_at_the_new_bounds_are_accepted(option: str, value: object):
    """Arrange: a value at a new lower or upper bound. Act: parse. Assert: no error."""
    parse_config({option: value})


# The census: every hostile config value, one outcome each ----------------------------------

# Values the charm normalises rather than refuses: (option, given, what GARM and the CA get).
NORMALISED = (
    ("external-url", "https://gärm.example.com", "https://xn--grm-qla.example.com"),
    ("external-url", "https://garm.example.com/", "https://garm.example.com"),
    ("external-url", " https://garm.example.com ", "https://garm.example.com"),
)


def test_hostile_config_values_report_no_crash_and_no_silent_accept(
    ctx: testing.Context[charm.GarmCharm],
    resources: frozenset[testing.Resource],
):
    """Arrange: every bad value of the bad-value table, and the values normalised instead.

    Act: config-changed on a leader with each (resources attached: an accepted value runs the
    whole reconcile, and meets no GARM; `certificates` related for the normalised ones).
    Assert: the report counts 0 crashes and 0 silent accepts: each bad value is Blocked naming
    its option, each normalised one is parsed to the form every consumer accepts (and its hook,
    with `certificates` related, completes).
    """
    report: dict[str, list[str]] = {"crash": [], "blocked": [], "normalised": [], "silent": []}
    for row in CONFIG_ROWS:
        state = testing.State(leader=True, config={row.name: row.value}, resources=resources)
        try:
            out = ctx.run(ctx.on.config_changed(), state)
        except testing.errors.UncaughtCharmError:
            report["crash"].append(str(row))
            continue
        status = out.unit_status
        named = status.message.startswith(f"invalid config {row.name}: ")
        kind = "blocked" if isinstance(status, testing.BlockedStatus) and named else "silent"
        report[kind].append(str(row))
    for option, value, normalised in NORMALISED:
        # With `certificates` related, the host goes into the certificate request too.
        state = testing.State(
            leader=True,
            config={option: value},
            resources=resources,
            relations=[certificates_relation()],
        )
        try:
            ctx.run(ctx.on.config_changed(), state)
        except testing.errors.UncaughtCharmError:
            report["crash"].append(f"{option}={value!r}")
            continue
        parsed = parse_config({option: value})
        kind = "normalised" if parsed.external_url == normalised else "silent"
        report[kind].append(f"{option}={value!r}")

    counts = {kind: len(values) for kind, values in report.items()}
    assert (report["crash"], report["silent"]) == ([], []), counts
    assert counts == {
        "crash": 0,
        "blocked": len(CONFIG_ROWS),
        "normalised": len(NORMALISED),
        "silent": 0,
    }


# --- Found by the hostile-numbers review (issue #31) ---
# (was test_numeric_fields_hostile.py)
# No value of a numeric field crashes a hook or an action (issue #31, "no hostile value").
#
# Every field garm reads a number from (its config options, the debug-ssh, database and
# garm-configurator relation fields, the times and the kept relay in the peer relation's
# application data) and every action parameter is fed arbitrary Unicode, with a
# bias to the digits `str.isdigit()` and `int()` disagree on ("²" is a digit to one and not to
# the other, "٣" is a digit to both, neither is ASCII). The unit serves two scale sets from the
# simulator, so an accepted value runs the whole reconcile. The property: the hook or action ends
# without an uncaught exception (a refusal is fine, a crash is not); an option of Juju type `int`
# only ever carries an integer, so those get arbitrary integers. The workload is the recording
# double, so the backup actions' names reach the charm's handlers, not `workload.backup`'s own
# name check (a regex of letters, digits, '.', '_' and '-'; no number is read from a name).


# Every kind of Unicode digit (decimal, superscript and other, letterlike), with the characters
# numbers are written with, so most examples look like a number and many nearly parse.
_DIGITS = st.characters(categories=("N",))  # decimal, letterlike and other digits
_NUMBER_PARTS = st.sampled_from(list("0123456789:-+._ hms[]/%x"))
NUMBERISH = st.one_of(
    st.text(alphabet=st.one_of(_DIGITS, _NUMBER_PARTS), max_size=12),
    st.text(max_size=24),
    st.builds("{}{}".format, st.sampled_from(["", "1", "10.0.0.5:", "h"]), st.text(max_size=6)),
)
_RUN = settings(
    max_examples=15,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)

# Options of Juju type string that carry a number (a duration, a URL's port).
TEXT_OPTIONS = (
    "external-url",
    "drain-timeout",
    "handover-grace",
    "handover-timeout",
    "reconcile-interval",
    "runner-stuck-timeout",
    "teardown-timeout",
)
INT_OPTIONS = ("port", "refresh-surge", "changeover-surge", "max-writes-per-pass", "backup-keep")
# Options that hold no number at all, with why.
NOT_NUMERIC = {"log-level": "one of four words"}


def test_every_option_is_fed():
    """Arrange: the options charmcraft.yaml declares. Act: compare with the fed ones.

    Assert: each option is fed (as text or as an integer) or named as holding no number.
    """
    declared = set(yaml.safe_load(CHARMCRAFT.read_text())["config"]["options"])

    assert {*TEXT_OPTIONS, *INT_OPTIONS, *NOT_NUMERIC} == declared


@pytest.mark.parametrize("option", TEXT_OPTIONS)
@_RUN
@given(value=NUMBERISH)
@example(value="²").via("superscript two: isdigit() says digit, int() refuses")
@example(value="²h").via("a duration of superscript hours")
@example(value="٣h").via("a duration of Arabic-Indic hours")
@example(value="https://garm.example.com:²").via("a URL's port")
def test_no_config_value_crashes_a_hook(option: str, value: str, serving: Serving):
    """Arrange: the leader serves `small` and `large`. Act: config-changed with the value.

    Assert: the hook ends without an uncaught exception.
    """
    state = dataclasses.replace(serving.state, config={**serving.state.config, option: value})

    serving.ctx.run(serving.ctx.on.config_changed(), state)


@pytest.mark.parametrize("option", INT_OPTIONS)
@_RUN
@given(value=st.integers())
def test_no_integer_option_crashes_a_hook(option: str, value: int, serving: Serving):
    """Arrange: the leader serves. Act: config-changed with any integer. Assert: no crash."""
    state = dataclasses.replace(serving.state, config={**serving.state.config, option: value})

    serving.ctx.run(serving.ctx.on.config_changed(), state)


@pytest.mark.parametrize("field", sorted(RELAY))
@_RUN
@given(value=NUMBERISH)
@example(value="²")
@example(value="٣")
def test_no_debug_ssh_value_crashes_a_hook(field: str, value: str, serving: Serving):
    """Arrange: the leader serves. Act: a relay publishes the value in one field.

    Assert: relation-changed ends without an uncaught exception.
    """
    relay = testing.Relation("debug-ssh", remote_units_data={0: {**RELAY, field: value}})
    state = dataclasses.replace(serving.state, relations={*serving.state.relations, relay})

    serving.ctx.run(serving.ctx.on.relation_changed(relay, remote_unit=0), state)


@_RUN
@given(value=NUMBERISH)
@example(value="db.example.com:²")
@example(value="[::1]:²")
@example(value="db.example.com:٣")
def test_no_database_endpoint_crashes_a_hook(value: str, serving: Serving):
    """Arrange: the leader serves. Act: the database provider publishes the endpoint.

    Assert: relation-changed ends without an uncaught exception.
    """
    user = testing.Secret(tracked_content={"username": "relation_7", "password": "pg-password"})
    relation = database_relation(user, endpoints=value)
    state = dataclasses.replace(
        serving.state,
        relations={*serving.state.relations, relation},
        secrets={*serving.state.secrets, user},
    )

    serving.ctx.run(serving.ctx.on.relation_changed(relation, remote_unit=0), state)


# The configurator's fields that hold a number, and where in the databag they are.
CONFIGURATOR_FIELDS = (
    "scaleset.min_idle_runners",
    "scaleset.max_runners",
    "github-app.app_id",
    "github-app.installation_id",
    "openstack.auth_url",
    "runner.http_proxy",
    "runner.dockerhub_mirror",
    "runner.otel_collector_endpoint",
    "runner.aproxy_redirect_ports",
    "runner.min_idle_schedule",
)
JSON_VALUES = st.one_of(
    NUMBERISH,
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(NUMBERISH, max_size=3),
    st.builds("Mon 08:00-18:00 UTC={}".format, NUMBERISH),
    st.builds("Mon {}-18:00 UTC=1".format, NUMBERISH),
    st.builds("http://proxy.example:{}".format, NUMBERISH),
)


@pytest.mark.parametrize("field", CONFIGURATOR_FIELDS)
@_RUN
@given(value=JSON_VALUES)
@example(value="Mon 08:00-18:00 UTC=²")
@example(value="Mon \u0660\u0668:\u0660\u0660-18:00 UTC=1")  # Arabic-Indic 08:00
@example(value=["²"])
@example(value=["٨٠"])
def test_no_configurator_value_crashes_a_hook(field: str, value: Any, serving: Serving):
    """Arrange: the leader serves `small` and `large`. Act: `small` publishes the value.

    Assert: relation-changed ends without an uncaught exception.
    """
    relations = _configurators(serving.state)  # pyright: ignore[reportPrivateUsage]
    small = next(r for r in relations if r.remote_app_name == "small")
    data = dict(small.remote_app_data)
    key, _, path = field.partition(".")
    if key == interface.RUNNER_KEY:
        data[interface.VERSION_KEY] = interface.SCHEMA_VERSION
        data[key] = json.dumps({})
    data[key] = changed_field(data[key], path, value)  # pyright: ignore[reportPrivateUsage]
    changed = dataclasses.replace(small, remote_app_data=data)
    others = {r for r in serving.state.relations if r.id != small.id}
    state = dataclasses.replace(serving.state, relations={*others, changed})

    serving.ctx.run(serving.ctx.on.relation_changed(changed), state)


ACTIONS_WITH_TEXT = (
    ("refresh-runners", "scaleset"),
    ("create-backup", "name"),
    ("restore-backup", "name"),
)


def test_every_action_parameter_is_fed():
    """Arrange: the actions charmcraft.yaml declares. Act: compare with the fed parameters.

    Assert: every string parameter is fed; the others are booleans (no number to misread).
    """
    actions = yaml.safe_load(CHARMCRAFT.read_text())["actions"]
    params = {
        (name, param): spec["type"]
        for name, action in actions.items()
        for param, spec in action.get("params", {}).items()
    }

    assert {key for key, kind in params.items() if kind != "boolean"} == set(ACTIONS_WITH_TEXT)


@pytest.mark.parametrize(("action", "param"), ACTIONS_WITH_TEXT)
@_RUN
@given(value=NUMBERISH)
@example(value="²")
def test_no_action_parameter_crashes_an_action(
    action: str, param: str, value: str, serving: Serving
):
    """Arrange: the leader serves. Act: run the action with the parameter's value.

    Assert: the action ends as a result or a failure, never an uncaught exception.
    """
    with contextlib.suppress(testing.ActionFailed):  # a refusal, as the action reports it
        serving.ctx.run(serving.ctx.on.action(action, params={param: value}), serving.state)


# The peer relation's application data: times (the pause, the lease, the hand-over claim) and
# the kept relay, with its port. Only this application writes there, yet a value a former
# revision or a hand edit left is read back untrusted.
PEER_FIELDS = ("maintenance-since", "garm-lease-until", "garm-host-since", "debug-ssh-relay")
TIMES = st.one_of(
    NUMBERISH,
    st.datetimes().map(datetime.datetime.isoformat),
    st.datetimes(timezones=st.just(datetime.UTC)).map(datetime.datetime.isoformat),
    st.builds(lambda port: json.dumps({**RELAY, "port": port}), NUMBERISH),
)


@pytest.mark.parametrize("field", PEER_FIELDS)
@_RUN
@given(value=TIMES)
@example(value="9999-12-31T23:59:59+00:00").via("no time after it: a margin added overflows")
@example(value="0001-01-01T00:00:00+00:00")
@example(value="2026-12-02T10:00:00").via("naive: compared with an aware time, TypeError")
@example(value=json.dumps({**RELAY, "port": "\u00b2"}))
def test_no_peer_value_crashes_a_hook(field: str, value: str, serving: Serving):
    """Arrange: the leader serves. Act: the peer application data holds the value.

    Assert: update-status ends without an uncaught exception.
    """
    peers = next(
        (r for r in serving.state.relations if isinstance(r, testing.PeerRelation)),
        testing.PeerRelation("garm-peers"),
    )
    changed = dataclasses.replace(peers, local_app_data={**peers.local_app_data, field: value})
    others = {r for r in serving.state.relations if r.id != peers.id}
    state = dataclasses.replace(serving.state, relations={*others, changed})

    serving.ctx.run(serving.ctx.on.update_status(), state)
