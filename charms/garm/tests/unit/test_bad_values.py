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

import dataclasses
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ops
import pytest
import yaml
from conftest import TickMachine
from ops import testing
from test_charm_configurators import OPENSTACK_PASSWORD, garm_secrets

import charm
from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.configurator_publication import pkcs1_app_key, published_databag
from doubles.database_publication import database_relation
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile.bootstrap import ADMIN_LABEL
from relations import debug_ssh
from scaleset_reconciler.marker import parse_marker

CHARMCRAFT = Path(charm.__file__).resolve().parents[1] / "charmcraft.yaml"
APPS = ("small", "large")


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
    return Serving(ctx, state, _garm_objects(sim), len(workload.applied), len(workload.calls))


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
    assert _garm_objects(sim) == serving.garm
    assert len(workload.applied) == serving.applied
    assert workload.calls[serving.calls :] == []
    assert workload.running
    assert len(tick_machine.systemctl.calls()) == timer


# garm-configurator relation fields ---------------------------------------------------------


class _Missing:
    """The field is taken out of where it is published."""

    def __repr__(self) -> str:
        """A stable test id."""
        return "MISSING"


MISSING = _Missing()
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
    large_data["scaleset"] = _changed(large_data["scaleset"], "max_runners", 5)
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
    large_data["scaleset"] = _changed(large_data["scaleset"], "max_runners", 5)
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
    after = _garm_objects(sim)
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
    data[key] = _changed(data[key], path, value)
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


def _changed(raw: str, path: str, value: Any) -> str:
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
    assert _garm_objects(sim) == on_postgres.garm
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

RSA_FINGERPRINT = "SHA256:" + "R" * 43
ED25519_FINGERPRINT = "SHA256:" + "E" * 43
RELAY = {
    "host": "10.1.2.3",
    "port": "10022",
    "rsa_fingerprint": RSA_FINGERPRINT,
    "ed25519_fingerprint": ED25519_FINGERPRINT,
}
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
    before = _garm_objects(sim)
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
    assert _garm_objects(sim) == before


# Helpers -----------------------------------------------------------------------------------


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
    data[interface.SCALESET_KEY] = _changed(data[interface.SCALESET_KEY], "name", app)
    return data


def _configurators(state: testing.State) -> list[testing.Relation]:
    return [
        relation
        for relation in state.relations
        if isinstance(relation, testing.Relation) and relation.endpoint == "garm-configurator"
    ]


def _logical(extended_state: str, name: str) -> str:
    """The logical name the charm's marker records (live names are too short to tell it)."""
    marker = parse_marker(extended_state)
    return marker.logical if marker is not None else name


def _garm_objects(sim: GarmSim) -> dict[str, Any]:
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
