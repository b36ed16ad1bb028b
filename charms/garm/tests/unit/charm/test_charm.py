"""The charm through ops.testing state transitions: a recording workload, the GARM simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import ops
import pytest
from ops import testing

from contract.garm_http import recording
from doubles.database_publication import database_relation, database_secret
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile import bootstrap as garm_bootstrap
from reconcile.bootstrap import ADMIN_LABEL, DB_PASSPHRASE_LABEL, JWT_SECRET_LABEL
from relations import cos_agent
from unit.walks.charm import (
    CONTROLLER_URLS,
    JWT,
    PASSPHRASE,
    PASSWORD,
    Config,
    Ctx,
    Resources,
    bootstrap_secrets,
    bootstrapped,
    on_postgresql,
)
from workload.host import CommandError, ResourceError


def recorded_scalesets() -> str:
    """What a real GARM answered to listing a repository's two scale sets (one disabled)."""
    return recording("21_6b_list_repo_scalesets")["raw_response"]


def leader_with_cos_agent(
    resources: Resources, config: Config, published: dict[str, str] | None = None
) -> tuple[testing.State, testing.Relation]:
    """A leader (bootstrap secrets exist) with grafana-agent related on cos-agent.

    Args:
        resources: the attached resources.
        config: the charm config.
        published: what this unit had already written into the relation.
    """
    relation = testing.Relation(
        "cos-agent", remote_app_name="grafana-agent", local_unit_data=published or {}
    )
    state = testing.State(
        leader=True,
        resources=resources,
        config=config,
        secrets=bootstrap_secrets(),
        relations=[relation],
    )
    return state, relation


def secret_by_label(state: testing.State, label: str) -> testing.Secret:
    """The secret with this label in the output state."""
    (secret,) = [secret for secret in state.secrets if secret.label == label]
    return secret


# Install and bootstrap ----------------------------------------------------------------------


def test_install_creates_secrets_and_never_uses_them_in_the_same_hook(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a fresh leader with both resources attached and a GARM before first-run.

    Act: install (Juju discards its secrets if it fails later).
    Assert: three app-owned secrets created; GARM installed but neither configured nor
    first-run with them; Waiting saying the next hook configures GARM.
    """
    state = testing.State(leader=True, resources=resources, config=config)

    out = ctx.run(ctx.on.install(), state)

    assert out.unit_status == ops.WaitingStatus(
        "created GARM's secrets; GARM is configured at the next hook"
    )
    assert {secret.label for secret in out.secrets} == {
        JWT_SECRET_LABEL,
        DB_PASSPHRASE_LABEL,
        ADMIN_LABEL,
    }
    assert workload.calls == ["install"]
    assert garm.calls() == []


def test_a_failed_first_hook_leaves_garm_untouched_and_the_next_bootstraps(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a fresh leader whose install hook failed after creating its secrets.

    (Juju discarded them: the next hook starts from the same state.)

    Act: install again, then config-changed.
    Assert: GARM was never first-run with the discarded secrets; it is with the kept ones.
    """
    fresh = testing.State(leader=True, resources=resources, config=config)
    discarded = ctx.run(ctx.on.install(), fresh)
    assert garm.admin_credentials is None

    kept = ctx.run(ctx.on.install(), fresh)
    ctx.run(ctx.on.config_changed(), kept)

    admin = secret_by_label(kept, ADMIN_LABEL).tracked_content
    lost = secret_by_label(discarded, ADMIN_LABEL).tracked_content
    assert garm.admin_credentials == (admin["username"], admin["password"])
    assert garm.admin_credentials != (lost["username"], lost["password"])


def test_second_hook_bootstraps_garm(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a leader whose install hook created the secrets; a GARM before first-run.

    Act: config-changed.
    Assert: installed from the resources, configured on SQLite, first-run, login and controller
    URLs from external-url; the three app-owned secrets; Active with the workload version.
    """
    state = ctx.run(
        ctx.on.install(), testing.State(leader=True, resources=resources, config=config)
    )

    out = ctx.run(ctx.on.config_changed(), state)

    assert out.unit_status == ops.ActiveStatus()
    assert out.app_status == ops.ActiveStatus()
    assert out.workload_version == "v0.2.1-96-gafda4e76"
    garm_path, provider_path, _ = workload.installs[0]
    assert garm_path is not None
    assert garm_path.name == "garm-linux-amd64.tgz"
    assert provider_path is not None
    assert provider_path.name == "garm-provider-openstack-linux-amd64.tgz"
    applied = workload.applied[-1]
    assert applied.postgres is None
    assert applied.port == config["port"]
    assert workload.backend == "sqlite3"
    assert garm.write_calls() == [
        "POST /api/v1/auth/login",
        "POST /api/v1/first-run",
        "POST /api/v1/auth/login",
        "PUT /api/v1/controller",
    ]
    assert garm.controller_urls() == {
        "metadata_url": "https://garm.example.com/api/v1/metadata",
        "callback_url": "https://garm.example.com/api/v1/callbacks",
        "webhook_url": "https://garm.example.com/webhooks",
        "agent_url": "https://garm.example.com/agent",
    }
    assert {secret.label for secret in out.secrets} == {
        JWT_SECRET_LABEL,
        DB_PASSPHRASE_LABEL,
        ADMIN_LABEL,
    }
    assert all(secret.owner == "app" for secret in out.secrets)


def test_maintenance_while_installing(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a fresh unit. Act: install. Assert: Maintenance was shown while installing."""
    ctx.run(ctx.on.install(), testing.State(leader=True, resources=resources, config=config))

    assert ops.MaintenanceStatus("installing GARM") in ctx.unit_status_history


def test_generated_secrets_meet_garm_rules(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a fresh leader. Act: install, then config-changed.

    Assert: passphrase exactly 32 characters, username letters/digits, long random password and
    JWT secret, and the rendered config uses the secrets' values.
    """
    created = ctx.run(
        ctx.on.install(), testing.State(leader=True, resources=resources, config=config)
    )
    out = ctx.run(ctx.on.config_changed(), created)

    passphrase = secret_by_label(out, DB_PASSPHRASE_LABEL).tracked_content["passphrase"]
    admin = secret_by_label(out, ADMIN_LABEL).tracked_content
    jwt = secret_by_label(out, JWT_SECRET_LABEL).tracked_content["secret"]
    assert len(passphrase) == 32
    assert admin["username"].isalnum()
    assert len(admin["password"]) >= 32
    assert len(jwt) >= 48
    assert workload.applied[-1].db_passphrase == passphrase
    assert workload.applied[-1].jwt_secret == jwt
    assert garm.admin_credentials == (admin["username"], admin["password"])


def test_existing_secrets_are_reused_and_bootstrap_is_idempotent(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: secrets exist; GARM was initialised with them and has its URLs.

    Act: config-changed. Assert: no new secret, no first-run, no PUT: only a login.
    """
    garm.bootstrap("admin", PASSWORD, urls=CONTROLLER_URLS)
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    out = ctx.run(ctx.on.config_changed(), state)

    assert out.unit_status == ops.ActiveStatus()
    assert len(out.secrets) == 3
    assert workload.applied[-1].jwt_secret == JWT
    assert workload.applied[-1].db_passphrase == PASSPHRASE
    assert garm.write_calls() == ["POST /api/v1/auth/login"]


def test_second_first_run_conflict_means_initialised(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: GARM answers init_required, then 409 Conflict to first-run (a race).

    Act: install. Assert: treated as initialised; login again; Active.
    """
    # Another unit's first-run lands between the charm's login and its own first-run.
    garm.fault(
        "before",
        method="POST",
        path="/api/v1/first-run",
        times=1,
        action=lambda: garm.bootstrap("admin", PASSWORD, set_urls=False),
    )
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    out = ctx.run(ctx.on.install(), state)

    assert out.unit_status == ops.ActiveStatus()
    assert garm.write_calls().count("POST /api/v1/first-run") == 1


def test_upgrade_charm_reinstalls_and_keeps_running(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a bootstrapped leader. Act: upgrade-charm.

    Assert: install ran again (a new resource revision may come with it), config applied,
    still Active, no second first-run.
    """
    garm.bootstrap("admin", PASSWORD, set_urls=False)
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    out = ctx.run(ctx.on.upgrade_charm(), state)

    assert out.unit_status == ops.ActiveStatus()
    assert workload.calls[:2] == ["install", "apply"]
    assert "POST /api/v1/first-run" not in garm.calls()


def test_waiting_while_garm_does_not_answer(
    ctx: Ctx,
    workload: RecordingWorkload,
    resources: Resources,
    unused_port: int,
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: GARM's port has nobody listening (the service is still starting).

    Act: start. Assert: Waiting, with GARM configured and started.
    """
    monkeypatch.setattr(garm_bootstrap, "START_TIMEOUT_SECONDS", 0.5)
    state = testing.State(
        leader=True,
        resources=resources,
        config={"port": unused_port},
        secrets=bootstrap_secrets(),
    )

    out = ctx.run(ctx.on.start(), state)

    assert out.unit_status == ops.WaitingStatus("waiting for GARM to start")
    assert workload.calls == ["install", "apply"]


def test_wrong_admin_password_blocks_without_leaking_it(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: GARM was initialised with another admin password (e.g. an old database).

    Act: config-changed. Assert: Blocked pointing at the how-to; no password in the message.
    """
    garm.bootstrap("admin", "some-other-password", set_urls=False)
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    out = ctx.run(ctx.on.config_changed(), state)

    assert out.unit_status == ops.BlockedStatus(
        "GARM refuses the admin password; see https://github.com/canonical/garm-operator/blob/"
        "main/docs/how-to/admin-password.md"
    )
    assert len(out.unit_status.message) <= 120
    assert garm.write_calls() == ["POST /api/v1/auth/login"]
    assert PASSWORD not in out.unit_status.message
    assert "some-other-password" not in out.unit_status.message


# Config and resources -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("port", 0),
        ("port", 70000),
        ("log-level", "trace"),
        ("external-url", "garm.example.com"),
        ("external-url", "ftp://garm.example.com"),
        ("drain-timeout", "7 hours"),
        ("drain-timeout", "99999999999999999999h"),
        ("drain-timeout", "999999999h"),
        ("handover-grace", "soon"),
        ("handover-grace", "2562048h"),
        ("external-url", "https://garm.example.com\r\nX-Evil: 1"),
        ("external-url", "https://user:pw@garm.example.com"),
        ("external-url", "https://garm.example.com:65536"),
    ],
)
def test_bad_config_blocks_naming_the_option(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    option: str,
    value: Any,
):
    """Arrange: a bootstrapped leader; one option set to a bad value. Act: config-changed.

    Assert: Blocked naming the option and what it must be; nothing installed, applied, stopped
    or removed, and no call reaches GARM.
    """
    bootstrapped(garm)
    state = testing.State(
        leader=True,
        resources=resources,
        config={**config, option: value},
        secrets=bootstrap_secrets(),
    )

    out = ctx.run(ctx.on.config_changed(), state)

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert out.unit_status.message.startswith(f"invalid config {option}: ")
    assert "must" in out.unit_status.message
    assert len(out.unit_status.message) <= 120
    assert workload.calls == []
    assert garm.calls() == []


def test_config_change_reaches_garm_config(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a bootstrapped leader. Act: config-changed with log-level debug.

    Assert: GARM's config carries debug.
    """
    garm.bootstrap("admin", PASSWORD, set_urls=False)
    state = testing.State(
        leader=True,
        resources=resources,
        config={**config, "log-level": "debug"},
        secrets=bootstrap_secrets(),
    )

    ctx.run(ctx.on.config_changed(), state)

    assert workload.applied[-1].log_level == "debug"


def test_resource_problem_blocks_naming_the_resource(
    ctx: Ctx, workload: RecordingWorkload, resources: Resources, config: Config
):
    """Arrange: the workload cannot install GARM (no resource, no pinned hash).

    Act: install. Assert: Blocked naming garm-binary; nothing configured.
    """
    workload.install_error = ResourceError(
        "garm-binary", "not attached, and no sha256 is pinned for v0.2.1 on amd64"
    )
    state = testing.State(leader=True, resources=resources, config=config)

    out = ctx.run(ctx.on.install(), state)

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert out.unit_status.message.startswith("resource garm-binary:")
    assert "apply" not in workload.calls


def test_proxy_reaches_install_and_garm(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: the model has an HTTPS proxy. Act: install.

    Assert: the proxy is used for the install and written into GARM's config.
    """
    monkeypatch.setenv("JUJU_CHARM_HTTPS_PROXY", "http://squid.internal:3128")
    monkeypatch.setenv("JUJU_CHARM_NO_PROXY", "127.0.0.1,localhost")

    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )
    ctx.run(ctx.on.install(), state)

    assert workload.installs[0][2].https_proxy == "http://squid.internal:3128"
    assert workload.applied[-1].proxy.no_proxy == "127.0.0.1,localhost"


# Units and leadership -------------------------------------------------------------------------


def test_non_leader_on_sqlite_stands_by_blocked(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a second unit, no database relation. Act: config-changed.

    Assert: binaries installed, GARM stopped, no GARM call, Blocked explaining SQLite.
    """
    state = testing.State(
        leader=False, resources=resources, config=config, secrets=bootstrap_secrets()
    )

    out = ctx.run(ctx.on.config_changed(), state)

    assert workload.calls == ["stop", "install"]
    assert garm.calls() == []
    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert "SQLite cannot be shared" in out.unit_status.message


def test_non_leader_with_postgresql_is_a_standby(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a second unit with the database related. Act: update-status.

    Assert: GARM stopped, Active standby, no GARM call.
    """
    state, _ = on_postgresql(resources, config, leader=False)

    out = ctx.run(ctx.on.update_status(), state)

    assert out.unit_status == ops.ActiveStatus("standby: the leader runs GARM")
    assert "stop" in workload.calls
    assert garm.calls() == []


def test_leader_elected_takes_over_with_the_same_secrets(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a standby becomes leader; secrets exist; PostgreSQL holds GARM's state.

    Act: leader-elected. Assert: GARM configured with the existing secrets and PostgreSQL,
    no new secret, no first-run (the shared database is initialised), Active.
    """
    garm.bootstrap("admin", PASSWORD, set_urls=False)
    state, _ = on_postgresql(resources, config)

    out = ctx.run(ctx.on.leader_elected(), state)

    assert out.unit_status == ops.ActiveStatus()
    assert len(out.secrets) == 4
    assert workload.applied[-1].jwt_secret == JWT
    assert workload.applied[-1].postgres is not None
    assert "POST /api/v1/first-run" not in garm.calls()


# Database -----------------------------------------------------------------------------------


def test_database_relation_configures_postgresql(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a fresh leader; the database provider has answered. Act: relation-changed.

    Assert: GARM runs on PostgreSQL with the provider's endpoint and credentials.
    """
    secret = database_secret()
    relation = database_relation(secret, endpoints="10.0.0.5:5433,10.0.0.6:5433")
    state = testing.State(
        leader=True,
        resources=resources,
        config=config,
        relations=[relation],
        secrets=[*bootstrap_secrets(), secret],
    )

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    assert out.unit_status == ops.ActiveStatus()
    postgres = workload.applied[-1].postgres
    assert postgres is not None
    assert (postgres.hostname, postgres.port) == ("10.0.0.5", 5433)
    assert (postgres.username, postgres.password, postgres.database) == (
        "relation_7",
        "pg-password",
        "garm",
    )
    assert workload.backend == "postgresql"


def test_postgresql_with_a_garm_that_lacks_it_is_blocked_and_keeps_sqlite(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: the pinned GARM v0.2.1 runs on SQLite; PostgreSQL is then related.

    Act: relation-changed. Assert: Blocked naming the database and the fix; nothing rendered,
    GARM untouched (still on SQLite), no GARM call.
    """
    workload.garm_version = "v0.2.1"
    workload.installed = True
    workload.running = True
    workload.backend = "sqlite3"
    state, relation = on_postgresql(resources, config)

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    assert out.unit_status == ops.BlockedStatus(
        "database: GARM v0.2.1 has no PostgreSQL backend; attach a garm-binary built after "
        "v0.2.1 or remove the relation"
    )
    assert "apply" not in workload.calls
    assert "stop" not in workload.calls
    assert workload.running
    assert workload.backend == "sqlite3"
    assert garm.calls() == []


@pytest.mark.parametrize("version", ["v0.0.0-unknown", "v0.3.0"])
def test_postgresql_runs_when_garm_has_it_or_cannot_tell(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    version: str,
):
    """Arrange: a GARM build that has PostgreSQL, or an unstamped one. Act: relation-changed.

    Assert: GARM configured on PostgreSQL (an unknown version is not refused).
    """
    workload.garm_version = version
    secret = database_secret()
    relation = database_relation(secret)
    state = testing.State(
        leader=True,
        resources=resources,
        config=config,
        relations=[relation],
        secrets=[*bootstrap_secrets(), secret],
    )

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    assert out.unit_status == ops.ActiveStatus()
    assert workload.applied[-1].postgres is not None


def test_database_relation_created_requests_the_database(
    ctx: Ctx, workload: RecordingWorkload, resources: Resources, config: Config
):
    """Arrange: a leader; a database relation is created. Act: relation-created.

    Assert: the library wrote a request for the `garm` database into our app data.
    """
    relation = testing.Relation("database", remote_app_name="postgresql")
    state = testing.State(leader=True, resources=resources, config=config, relations=[relation])

    out = ctx.run(ctx.on.relation_created(relation), state)

    requests = json.loads(out.get_relation(relation.id).local_app_data["requests"])
    assert [request["resource"] for request in requests] == ["garm"]


def test_database_joined_but_not_answered_waits(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a database relation without the provider's answer. Act: relation-changed.

    Assert: Waiting for credentials; GARM not reconfigured.
    """
    relation = testing.Relation("database", remote_app_name="postgresql")
    state = testing.State(
        leader=True,
        resources=resources,
        config=config,
        relations=[relation],
        secrets=bootstrap_secrets(),
    )

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    assert out.unit_status == ops.WaitingStatus(
        "waiting for the database relation to share credentials"
    )
    assert "apply" not in workload.calls


def test_switch_to_postgresql_with_sqlite_data_blocks(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: GARM ran on SQLite and holds scale sets; the database relation then answers.

    Act: relation-changed. Assert: Blocked naming the way forward; GARM not reconfigured.
    """
    workload.backend = "sqlite3"
    workload.sqlite_state = True
    bootstrapped(garm, scalesets_body=recorded_scalesets())
    state, relation = on_postgresql(resources, config)

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    assert out.unit_status == ops.BlockedStatus(
        "GARM's data is in SQLite, which cannot move to PostgreSQL: remove the database relation"
    )
    logged = " ".join(line.message for line in ctx.juju_log)
    assert "docs/how-to/switch-database.md" in logged
    assert "apply" not in workload.calls
    assert workload.backend == "sqlite3"


def test_switch_to_postgresql_without_data_proceeds(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: GARM ran on SQLite but holds only its bootstrap (no credentials, no scale sets).

    Act: the database relation answers. Assert: GARM moves to PostgreSQL; Active.
    """
    workload.backend = "sqlite3"
    workload.sqlite_state = True
    bootstrapped(garm)
    state, relation = on_postgresql(resources, config)

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    assert out.unit_status == ops.ActiveStatus()
    assert workload.backend == "postgresql"


def test_database_broken_with_postgresql_data_blocks(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: GARM runs on PostgreSQL and holds scale sets. Act: the relation is broken.

    Assert: Blocked asking to relate the database again; GARM not moved to SQLite.
    """
    workload.backend = "postgresql"
    bootstrapped(garm, scalesets_body=recorded_scalesets())
    state, relation = on_postgresql(resources, config)

    out = ctx.run(ctx.on.relation_broken(relation), state)

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert "relate the database again" in out.unit_status.message
    assert "apply" not in workload.calls


# Actions --------------------------------------------------------------------------------------


def test_get_credentials_returns_admin_and_url(ctx: Ctx, workload: RecordingWorkload):
    """Arrange: the bootstrap secrets exist. Act: run get-credentials on a non-leader.

    Assert: username, password and the external URL.
    """
    state = testing.State(
        config={"external-url": "https://garm.example.com/"}, secrets=bootstrap_secrets()
    )

    ctx.run(ctx.on.action("get-credentials"), state)

    assert ctx.action_results == {
        "username": "admin",
        "password": PASSWORD,
        "url": "https://garm.example.com",
    }


def test_get_credentials_fails_before_they_exist(ctx: Ctx, workload: RecordingWorkload):
    """Arrange: no secrets yet. Act: get-credentials. Assert: a clear failure."""
    with pytest.raises(testing.ActionFailed, match="do not exist yet"):
        ctx.run(ctx.on.action("get-credentials"), testing.State(leader=True))


def test_list_scalesets_lists_garms_scale_sets(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, config: Config
):
    """Arrange: GARM holds the recorded scale sets. Act: list-scalesets on the leader.

    Assert: one row per scale set, with GARM's normalised values.
    """
    bootstrapped(garm, scalesets_body=recorded_scalesets())
    state = testing.State(leader=True, config=config, secrets=bootstrap_secrets())

    ctx.run(ctx.on.action("list-scalesets"), state)

    assert ctx.action_results is not None
    rows = json.loads(ctx.action_results["scalesets"])
    assert ctx.action_results["count"] == len(rows) == 2
    disabled = next(row for row in rows if not row["enabled"])
    assert disabled["min-idle-runners"] == 0
    assert disabled["labels"] == ["harness", "x64"]


def test_list_scalesets_on_non_leader_fails(ctx: Ctx, workload: RecordingWorkload):
    """Arrange: a non-leader. Act: list-scalesets. Assert: fails naming the leader."""
    with pytest.raises(testing.ActionFailed, match="garm/leader"):
        ctx.run(ctx.on.action("list-scalesets"), testing.State(secrets=bootstrap_secrets()))


def test_list_scalesets_fails_when_garm_is_down(
    ctx: Ctx, workload: RecordingWorkload, unused_port: int
):
    """Arrange: nothing answers on GARM's port. Act: list-scalesets. Assert: fails clearly."""
    state = testing.State(leader=True, config={"port": unused_port}, secrets=bootstrap_secrets())

    with pytest.raises(testing.ActionFailed, match="unreachable"):
        ctx.run(ctx.on.action("list-scalesets"), state)


# Remove -------------------------------------------------------------------------------------


def test_remove_stops_garm_and_removes_the_unit(ctx: Ctx, workload: RecordingWorkload):
    """Arrange: any unit. Act: remove. Assert: the workload was asked to remove GARM's unit."""
    ctx.run(ctx.on.remove(), testing.State(leader=True))

    assert workload.calls == ["remove"]


# cos-agent ----------------------------------------------------------------------------------


def cos_agent_config(state: testing.State, relation: testing.Relation) -> dict[str, Any]:
    """The decoded `config` this unit published on a cos-agent relation."""
    return json.loads(state.get_relation(relation.id).local_unit_data["config"])


def test_leader_publishes_garms_scrape_job_on_cos_agent(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a bootstrapped leader; grafana-agent joins cos-agent. Act: relation-joined.

    Assert: a scrape job for localhost:<port>/metrics, alert rules with the model's topology;
    GARM's reconcile ran as usual (Active).
    """
    bootstrapped(garm)
    state, relation = leader_with_cos_agent(resources, config)

    out = ctx.run(ctx.on.relation_joined(relation, remote_unit=0), state)

    published = cos_agent_config(out, relation)
    job, exporter_job = published["metrics_scrape_jobs"]
    assert exporter_job == cos_agent.exporter_scrape_job()
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"] == [{"targets": [f"localhost:{config['port']}"]}]
    rule = published["metrics_alert_rules"]["groups"][0]["rules"][0]
    assert rule["labels"]["juju_model"] == state.model.name
    assert rule["labels"]["juju_application"] == "garm"
    assert published["dashboards"]
    assert out.unit_status == ops.ActiveStatus()
    assert "POST /api/v1/auth/login" in garm.calls()


def test_port_change_moves_the_scrape_target(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: the leader published a scrape job for port 9997; the port is then changed.

    Act: config-changed. Assert: the scrape target follows the new port.
    """
    bootstrapped(garm)
    earlier = {"metrics_scrape_jobs": [cos_agent.scrape_job(9997)], "log_slots": []}
    state, relation = leader_with_cos_agent(
        resources, config, published={"config": json.dumps(earlier)}
    )

    out = ctx.run(ctx.on.config_changed(), state)

    job, _ = cos_agent_config(out, relation)["metrics_scrape_jobs"]
    assert job["static_configs"] == [{"targets": [f"localhost:{config['port']}"]}]


def test_standby_publishes_rules_but_no_scrape_job(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a non-leader with PostgreSQL and a cos-agent relation. Act: relation-changed.

    Assert: no scrape job (its GARM is stopped), the same alert rules; no GARM call.
    """
    secret = database_secret()
    relation = testing.Relation("cos-agent", remote_app_name="grafana-agent")
    state = testing.State(
        leader=False,
        resources=resources,
        config=config,
        relations=[database_relation(secret), relation],
        secrets=[*bootstrap_secrets(), secret],
    )

    out = ctx.run(ctx.on.relation_changed(relation, remote_unit=0), state)

    published = cos_agent_config(out, relation)
    assert published["metrics_scrape_jobs"] == []
    alerts = {
        rule["alert"]
        for group in published["metrics_alert_rules"]["groups"]
        for rule in group["rules"]
    }
    assert "GarmTargetDown" in alerts
    assert out.unit_status == ops.ActiveStatus("standby: the leader runs GARM")
    assert garm.calls() == []


def test_cos_agent_problem_does_not_break_the_reconcile(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    """Arrange: a bootstrapped leader whose dashboard directory holds a broken file.

    Act: cos-agent relation-joined. Assert: GARM reconciled (Active), nothing published.
    """
    sources = cos_agent.Sources.of_charm(tmp_path)
    sources.dashboards.mkdir(parents=True)
    (sources.dashboards / "broken.json").write_text("{not json")
    monkeypatch.setattr(cos_agent, "SOURCES", sources)
    bootstrapped(garm)
    state, relation = leader_with_cos_agent(resources, config)

    out = ctx.run(ctx.on.relation_joined(relation, remote_unit=0), state)

    assert out.unit_status == ops.ActiveStatus()
    assert "apply" in workload.calls
    assert "config" not in out.get_relation(relation.id).local_unit_data


# rotate-credentials ---------------------------------------------------------------------------


def _garm_set_password(garm: GarmSim):
    """What `garm admin password-reset` does to GARM: its admin gets the password."""
    return garm.reset_admin_password


def _bootstrapped_leader(garm: GarmSim, resources: Resources, config: Config) -> testing.State:
    garm.bootstrap("admin", PASSWORD, urls=CONTROLLER_URLS)
    return testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )


def test_rotate_credentials_renews_the_jwt_key_with_one_restart(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a bootstrapped leader. Act: rotate-credentials, then another hook.

    Assert: a new revision of the JWT secret reaches GARM's config with exactly one restart;
    the charm logged in again; the admin password is unchanged; no secret in the results.
    """
    state = ctx.run(ctx.on.config_changed(), _bootstrapped_leader(garm, resources, config))
    restarts = workload.restarts
    logins = garm.calls().count("POST /api/v1/auth/login")

    out = ctx.run(ctx.on.action("rotate-credentials"), state)
    ctx.run(ctx.on.update_status(), out)

    new_jwt = secret_by_label(out, JWT_SECRET_LABEL).latest_content["secret"]
    assert new_jwt != JWT
    assert workload.applied[-1].jwt_secret == new_jwt
    assert workload.restarts == restarts + 1
    assert ctx.action_results is not None
    assert ctx.action_results["rotated"] == "jwt-secret"
    assert new_jwt not in json.dumps(ctx.action_results)
    assert secret_by_label(out, ADMIN_LABEL).latest_content["password"] == PASSWORD
    assert garm.calls().count("POST /api/v1/auth/login") > logins
    assert out.unit_status == ops.ActiveStatus()


def test_rotate_credentials_with_admin_password_changes_it_in_garm_and_the_secret(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a bootstrapped leader on a GARM built after v0.2.1.

    Act: rotate-credentials admin-password=true.
    Assert: GARM has the new password, the secret holds it (nothing pending), the charm logs in
    with it and is active; neither password is in the results.
    """
    state = ctx.run(ctx.on.config_changed(), _bootstrapped_leader(garm, resources, config))
    workload.on_password_reset = _garm_set_password(garm)

    out = ctx.run(ctx.on.action("rotate-credentials", params={"admin-password": True}), state)

    admin = secret_by_label(out, ADMIN_LABEL).latest_content
    assert admin["password"] != PASSWORD
    assert "pending-password" not in admin
    assert garm.admin_credentials == ("admin", admin["password"])
    assert out.unit_status == ops.ActiveStatus()
    assert ctx.action_results is not None
    assert ctx.action_results["rotated"] == "jwt-secret,admin-password"
    assert admin["password"] not in json.dumps(ctx.action_results)
    assert PASSWORD not in json.dumps(ctx.action_results)


def test_rotate_credentials_finishes_a_half_way_password_rotation(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a bootstrapped leader; `garm admin` fails once after GARM took the password.

    Act: rotate-credentials admin-password=true; a hook; the action again.
    Assert: the first run fails and keeps the pending password; the hook logs in with the
    pending one GARM has and makes it the secret's; the rerun reuses that same password.
    """
    state = ctx.run(ctx.on.config_changed(), _bootstrapped_leader(garm, resources, config))
    set_password = _garm_set_password(garm)
    attempts: list[str] = []

    def flaky_reset(username: str, password: str) -> None:
        attempts.append(password)
        set_password(username, password)
        if len(attempts) == 1:
            raise CommandError("garm admin password-reset failed with exit status 1")

    workload.on_password_reset = flaky_reset
    action = ctx.on.action("rotate-credentials", params={"admin-password": True})

    with pytest.raises(testing.ActionFailed, match="run the action again") as failed:
        ctx.run(action, state)
    assert failed.value.state is not None
    half_way = cast("testing.State", failed.value.state)
    pending = secret_by_label(half_way, ADMIN_LABEL).latest_content
    hook = ctx.run(ctx.on.update_status(), half_way)
    done = ctx.run(action, hook)

    assert (pending["password"], pending["pending-password"]) == (PASSWORD, attempts[0])
    assert hook.unit_status == ops.ActiveStatus()
    assert secret_by_label(hook, ADMIN_LABEL).latest_content["password"] == attempts[0]
    assert attempts == [attempts[0], attempts[0]]
    assert secret_by_label(done, ADMIN_LABEL).latest_content == {
        "username": "admin",
        "password": attempts[0],
    }
    assert garm.admin_credentials == ("admin", attempts[0])


def test_rotate_admin_password_needs_a_garm_built_after_v0_2_1(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: a bootstrapped leader on GARM v0.2.1. Act: rotate the admin password.

    Assert: refused, naming the version and the fix; nothing rotated.
    """
    workload.garm_version = "v0.2.1"
    state = ctx.run(ctx.on.config_changed(), _bootstrapped_leader(garm, resources, config))

    with pytest.raises(testing.ActionFailed, match=r"attach a garm-binary built after v0\.2\.1"):
        ctx.run(ctx.on.action("rotate-credentials", params={"admin-password": True}), state)

    assert "reset_admin_password" not in workload.calls


def test_rotate_credentials_on_a_non_leader_fails(ctx: Ctx, workload: RecordingWorkload):
    """Arrange: a non-leader. Act: rotate-credentials. Assert: refused, naming the leader."""
    state = testing.State(secrets=bootstrap_secrets())

    with pytest.raises(testing.ActionFailed, match="garm/leader rotate-credentials"):
        ctx.run(ctx.on.action("rotate-credentials"), state)


# Ports --------------------------------------------------------------------------------------


@pytest.mark.parametrize("leader", [True, False], ids=["leader", "standby"])
def test_the_api_port_is_open_where_garm_runs(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    leader: bool,
):
    """Arrange: a unit (GARM on the configured port) that had port 9997 open before.

    Act: config-changed. Assert: the leader opens the configured port only, so `juju expose`
    reaches GARM; a standby, which runs no GARM, opens nothing.
    """
    bootstrapped(garm)
    state = testing.State(
        leader=leader,
        resources=resources,
        config=config,
        secrets=bootstrap_secrets(),
        opened_ports={testing.TCPPort(9997)},
    )

    out = ctx.run(ctx.on.config_changed(), state)

    expected = {testing.TCPPort(int(config["port"]))} if leader else set()
    assert set(out.opened_ports) == expected
