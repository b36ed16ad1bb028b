"""The charm through ops.testing state transitions: status, publication, secrets, image."""

import dataclasses
import json
from typing import Any

import ops
import pytest
from conftest import OPENSTACK_PASSWORD, PASSWORD_SECRET_ID, PRIVATE_KEY_SECRET_ID
from ops import testing

from charm import GarmConfiguratorCharm
from charms.garm_configurator.v0.garm_configurator import parse_app_data

GARM_RELATION = "garm-configurator"


@pytest.fixture
def ctx() -> testing.Context[GarmConfiguratorCharm]:
    """A context for the charm, with its charmcraft.yaml."""
    return testing.Context(GarmConfiguratorCharm)


@pytest.fixture
def secrets(user_secrets: dict[str, dict[str, str]]) -> list[testing.Secret]:
    """The operator's user secrets, readable by the charm."""
    return [testing.Secret(content, id=secret_id) for secret_id, content in user_secrets.items()]


@pytest.fixture
def garm() -> testing.Relation:
    """A garm-configurator relation to a garm application with one unit."""
    return testing.Relation(GARM_RELATION, remote_app_name="garm")


def test_fresh_unit_is_blocked_on_the_first_missing_option(
    ctx: testing.Context[GarmConfiguratorCharm],
):
    """Arrange: a fresh unit, default config. Act: config-changed. Assert: blocked on 'name'."""
    state = ctx.run(ctx.on.config_changed(), testing.State(leader=True))

    assert isinstance(state.unit_status, ops.BlockedStatus)
    assert state.unit_status.message.startswith("config 'name' is not set: name the scale set")
    assert "more in juju debug-log" in state.unit_status.message
    assert state.app_status == state.unit_status


def test_every_problem_goes_to_the_log(ctx: testing.Context[GarmConfiguratorCharm]):
    """Arrange: default config. Act: config-changed. Assert: the log lists every problem."""
    ctx.run(ctx.on.config_changed(), testing.State(leader=True))

    errors = [line.message for line in ctx.juju_log if line.level == "ERROR"]
    assert len(errors) == 1
    assert "config 'name' is not set" in errors[0]
    assert "config 'github-app-private-key' is not set" in errors[0]


def test_waits_for_an_image(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: valid config, no image option, no image relation. Act: config-changed.

    Assert: waiting for an image; nothing published.
    """
    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))

    assert state.unit_status == ops.WaitingStatus(
        "waiting for an image: relate to github-runner-image-builder or set 'image'"
    )
    assert not state.get_relation(garm.id).local_app_data


def test_leader_publishes_with_secret_ids_only(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
    pkcs1_pem: str,
):
    """Arrange: valid config with an image, leader, related. Act: config-changed.

    Assert: active; the databag holds version 1 and the data with secret ids; app-owned
    copies of both secrets hold the values and are granted to the relation.
    """
    valid_config["image"] = "noble-x64"

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))

    assert state.unit_status == ops.ActiveStatus("scale set 'small' published")
    databag = state.get_relation(garm.id).local_app_data
    assert databag["version"] == "1"
    scaleset = json.loads(databag["scaleset"])
    assert scaleset["labels"] == ["noble", "x64", "large"]
    assert scaleset["image"] == "noble-x64"
    assert scaleset["entity"] == {"kind": "org", "owner": "canonical", "repo": None}
    password = state.get_secret(label="openstack-password")
    private_key = state.get_secret(label="github-app-private-key")
    assert password.owner == "app"
    assert password.latest_content == {"password": OPENSTACK_PASSWORD, "app": "garm-configurator"}
    assert private_key.latest_content == {"private-key": pkcs1_pem, "app": "garm-configurator"}
    assert json.loads(databag["openstack"])["password_secret_id"] == password.id
    assert json.loads(databag["github-app"]) == {
        "app_id": 123456,
        "installation_id": 7890123,
        "private_key_secret_id": private_key.id,
    }
    assert password.remote_grants == {garm.id: frozenset({"garm"})}
    assert private_key.remote_grants == {garm.id: frozenset({"garm"})}
    visible = _everything_visible(ctx, state)
    assert OPENSTACK_PASSWORD not in visible
    assert pkcs1_pem.splitlines()[1] not in visible


def test_published_data_reads_back_on_the_requirer_side(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: a published relation. Act: parse the databag with the library's reader.

    Assert: the requirer sees the same scale set.
    """
    valid_config["image"] = "noble-x64"
    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))

    data = parse_app_data(state.get_relation(garm.id).local_app_data)

    assert data.scaleset.name == "small"
    assert data.scaleset.labels == ("noble", "x64", "large")
    assert data.openstack.auth_url == "https://keystone.example:5000/v3"


def test_runner_options_are_published_as_version_2(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: valid config with a proxy and a pre-job script. Act: config-changed.

    Assert: version 2 with the runner section, which the requirer reads back.
    """
    valid_config |= {
        "image": "noble-x64",
        "runner-http-proxy": "http://squid.internal:3128",
        "pre-job-script": "echo ready",
    }

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))

    databag = state.get_relation(garm.id).local_app_data
    assert databag["version"] == "2"
    runner = parse_app_data(databag).runner
    assert runner.http_proxy == "http://squid.internal:3128"
    assert runner.pre_job_script == "echo ready"
    assert runner.aproxy_redirect_ports == ("80", "443")


def test_image_relation_provides_the_image(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: an image relation whose unit publishes an id. Act: its relation-changed.

    Assert: that image is published.
    """
    image = testing.Relation(
        "image",
        remote_app_name="image-builder",
        remote_units_data={0: {"id": "c0ffee-1234", "tags": "amd64,noble"}},
    )

    state = ctx.run(
        ctx.on.relation_changed(image, remote_unit=0),
        _state(valid_config, secrets, [garm, image]),
    )

    assert state.unit_status == ops.ActiveStatus("scale set 'small' published")
    scaleset = json.loads(state.get_relation(garm.id).local_app_data["scaleset"])
    assert scaleset["image"] == "c0ffee-1234"


def test_image_option_overrides_the_relation(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: an image relation and the image option. Act: config-changed.

    Assert: the option's image is published.
    """
    image = testing.Relation("image", remote_units_data={0: {"id": "from-relation"}})
    valid_config["image"] = "from-option"

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm, image]))

    scaleset = json.loads(state.get_relation(garm.id).local_app_data["scaleset"])
    assert scaleset["image"] == "from-option"


def test_malformed_image_id_is_ignored(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: the image unit publishes an id with spaces. Act: relation-changed.

    Assert: ignored with a warning; still waiting for an image.
    """
    image = testing.Relation("image", remote_units_data={0: {"id": "rm -rf /"}})

    state = ctx.run(
        ctx.on.relation_changed(image, remote_unit=0),
        _state(valid_config, secrets, [garm, image]),
    )

    assert isinstance(state.unit_status, ops.WaitingStatus)
    assert any("ignoring the image id" in line.message for line in ctx.juju_log)


def test_image_relation_broken_keeps_the_last_publication(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: published with the relation's image. Act: the image relation breaks.

    Assert: waiting for an image, and the published data is unchanged.
    """
    image = testing.Relation("image", remote_units_data={0: {"id": "c0ffee-1234"}})
    published = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm, image]))
    before = dict(published.get_relation(garm.id).local_app_data)

    state = ctx.run(ctx.on.relation_broken(published.get_relation(image.id)), published)

    assert isinstance(state.unit_status, ops.WaitingStatus)
    assert dict(state.get_relation(garm.id).local_app_data) == before


def test_non_leader_validates_but_does_not_publish(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: valid config on a non-leader unit. Act: config-changed.

    Assert: active naming the leader; no databag written, no secret created.
    """
    valid_config["image"] = "noble-x64"

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm], leader=False))

    assert state.unit_status == ops.ActiveStatus(
        "scale set 'small' valid; the leader publishes it"
    )
    assert not state.get_relation(garm.id).local_app_data
    assert all(secret.owner is None for secret in state.secrets)


def test_non_leader_reports_invalid_config(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
):
    """Arrange: an invalid name on a non-leader. Act: config-changed. Assert: blocked too."""
    valid_config["name"] = "Not_Valid"

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [], leader=False))

    assert isinstance(state.unit_status, ops.BlockedStatus)
    assert state.unit_status.message.startswith("config 'name' is invalid")


def test_leader_elected_publishes(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: a unit that just became leader. Act: leader-elected. Assert: it publishes."""
    valid_config["image"] = "noble-x64"

    state = ctx.run(ctx.on.leader_elected(), _state(valid_config, secrets, [garm]))

    assert state.get_relation(garm.id).local_app_data["version"] == "1"


def test_valid_config_without_relation_waits_for_garm(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
):
    """Arrange: valid config, no garm relation. Act: config-changed.

    Assert: waiting for the relation; no secret copies yet.
    """
    valid_config["image"] = "noble-x64"

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, []))

    assert state.unit_status == ops.WaitingStatus(
        "scale set 'small' ready; waiting for a relation to garm"
    )
    assert all(secret.owner is None for secret in state.secrets)


def test_relation_created_publishes(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: valid config. Act: garm-configurator relation-created. Assert: published."""
    valid_config["image"] = "noble-x64"

    state = ctx.run(ctx.on.relation_created(garm), _state(valid_config, secrets, [garm]))

    assert state.get_relation(garm.id).local_app_data["version"] == "1"
    assert state.unit_status == ops.ActiveStatus("scale set 'small' published")


def test_second_relation_gets_the_same_data_and_grants(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: published to one garm. Act: a second garm relation joins.

    Assert: same data in both; both secrets granted to both relations.
    """
    valid_config["image"] = "noble-x64"
    published = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))
    other = testing.Relation(GARM_RELATION, remote_app_name="garm-b")
    state_in = dataclasses.replace(published, relations=[*published.relations, other])

    state = ctx.run(ctx.on.relation_joined(other, remote_unit=0), state_in)

    assert state.get_relation(other.id).local_app_data == (
        state.get_relation(garm.id).local_app_data
    )
    password = state.get_secret(label="openstack-password")
    assert password.remote_grants == {
        garm.id: frozenset({"garm"}),
        other.id: frozenset({"garm-b"}),
    }


def test_relation_changed_republishes_nothing_new(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: a published relation. Act: relation-changed from garm.

    Assert: data and secret revisions unchanged.
    """
    valid_config["image"] = "noble-x64"
    published = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))

    state = ctx.run(ctx.on.relation_changed(published.get_relation(garm.id)), published)

    assert state.get_relation(garm.id).local_app_data == (
        published.get_relation(garm.id).local_app_data
    )
    assert state.get_secret(label="openstack-password")._latest_revision == 1
    assert state.get_secret(label="github-app-private-key")._latest_revision == 1


def test_relation_broken_leaves_the_charm_waiting(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: a published relation. Act: relation-broken. Assert: waiting for garm, no error."""
    valid_config["image"] = "noble-x64"
    published = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))

    state = ctx.run(ctx.on.relation_broken(published.get_relation(garm.id)), published)

    assert state.unit_status == ops.WaitingStatus(
        "scale set 'small' ready; waiting for a relation to garm"
    )


def test_bad_edit_keeps_the_last_good_publication(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
    pkcs8_pem: str,
):
    """Arrange: a published relation, then an invalid label and a PKCS#8 key. Act: events.

    Assert: blocked naming the option; databag and secret copies are unchanged.
    """
    valid_config["image"] = "noble-x64"
    published = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))
    before = dict(published.get_relation(garm.id).local_app_data)
    bad_config = {**valid_config, "labels": "ok,not ok"}

    state = ctx.run(ctx.on.config_changed(), dataclasses.replace(published, config=bad_config))

    assert isinstance(state.unit_status, ops.BlockedStatus)
    assert state.unit_status.message.startswith("config 'labels' has an invalid label 'not ok'")
    assert dict(state.get_relation(garm.id).local_app_data) == before
    assert state.get_secret(label="github-app-private-key")._latest_revision == 1


def test_pkcs8_key_blocks_with_the_conversion_command(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    garm: testing.Relation,
    pkcs8_pem: str,
):
    """Arrange: the App key secret holds a PKCS#8 key. Act: config-changed.

    Assert: blocked naming the option and PKCS#8 within 120 characters; the log has the
    openssl conversion; the key is nowhere.
    """
    secrets = [
        testing.Secret({"password": OPENSTACK_PASSWORD}, id=PASSWORD_SECRET_ID),
        testing.Secret({"private-key": pkcs8_pem}, id=PRIVATE_KEY_SECRET_ID),
    ]
    valid_config["image"] = "noble-x64"

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))

    assert isinstance(state.unit_status, ops.BlockedStatus)
    assert state.unit_status.message.startswith("config 'github-app-private-key' names secret")
    assert "PKCS#8" in state.unit_status.message
    assert len(state.unit_status.message) <= 120
    errors = [line.message for line in ctx.juju_log if line.level == "ERROR"]
    assert "openssl pkcs8 -in key.pem -traditional -nocrypt" in errors[0]
    assert not state.get_relation(garm.id).local_app_data
    assert pkcs8_pem.splitlines()[1] not in _everything_visible(ctx, state)


def test_ungranted_secret_blocks_with_the_grant_command(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    pkcs1_pem: str,
):
    """Arrange: the password secret is not granted (absent). Act: config-changed.

    Assert: blocked naming the option and juju grant-secret.
    """
    secrets = [testing.Secret({"private-key": pkcs1_pem}, id=PRIVATE_KEY_SECRET_ID)]

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, []))

    assert state.unit_status == ops.BlockedStatus(
        "config 'openstack-password' cannot read its secret: "
        f"juju grant-secret {PASSWORD_SECRET_ID} garm-configurator"
    )


def test_user_secret_rotation_updates_the_copy_once(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: published; the operator sets a new password. Act: secret-changed, twice.

    Assert: the copy gets one new revision with the new password; ids in the databag are
    unchanged; the second run adds no revision.
    """
    valid_config["image"] = "noble-x64"
    published = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))
    before = dict(published.get_relation(garm.id).local_app_data)
    rotated = testing.Secret(
        {"password": OPENSTACK_PASSWORD},
        latest_content={"password": "new-password"},
        id=PASSWORD_SECRET_ID,
    )
    others = [secret for secret in published.secrets if secret.id != PASSWORD_SECRET_ID]
    state_in = dataclasses.replace(published, secrets=[*others, rotated])

    once = ctx.run(ctx.on.secret_changed(rotated), state_in)
    twice = ctx.run(ctx.on.secret_changed(once.get_secret(id=PASSWORD_SECRET_ID)), once)

    for state in (once, twice):
        copy = state.get_secret(label="openstack-password")
        assert copy.latest_content == {"password": "new-password", "app": "garm-configurator"}
        assert copy._latest_revision == 2
        assert dict(state.get_relation(garm.id).local_app_data) == before
        assert state.get_secret(label="github-app-private-key")._latest_revision == 1
    assert "new-password" not in _everything_visible(ctx, twice)


def test_switching_to_an_identical_user_secret_adds_no_revision(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: published; a second user secret with the same password. Act: point config to it.

    Assert: the copy keeps revision 1 and the databag is unchanged.
    """
    valid_config["image"] = "noble-x64"
    published = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))
    twin = testing.Secret({"password": OPENSTACK_PASSWORD})
    state_in = dataclasses.replace(
        published,
        config={**valid_config, "openstack-password": twin.id},
        secrets=[*published.secrets, twin],
    )

    state = ctx.run(ctx.on.config_changed(), state_in)

    assert state.get_secret(label="openstack-password")._latest_revision == 1
    assert state.get_relation(garm.id).local_app_data == (
        published.get_relation(garm.id).local_app_data
    )


def test_secret_remove_drops_the_old_revision(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: the password copy rotated to revision 3. Act: secret-remove for revision 2.

    Assert: the charm removes revision 2.
    """
    valid_config["image"] = "noble-x64"
    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [garm]))
    for password in ("rotated-once", "rotated-twice"):
        state = ctx.run(ctx.on.config_changed(), _with_user_password(state, password))
    copy = state.get_secret(label="openstack-password")
    assert copy._latest_revision == 3

    ctx.run(ctx.on.secret_remove(copy, revision=2), state)

    assert ctx.removed_secret_revisions == [2]


def test_secret_remove_ignores_other_secrets(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
):
    """Arrange: an app secret this charm does not manage. Act: secret-remove for it.

    Assert: nothing is removed.
    """
    foreign = testing.Secret({"other": "x"}, owner="app", label="not-ours")

    ctx.run(
        ctx.on.secret_remove(foreign, revision=1),
        _state(valid_config, [*secrets, foreign], []),
    )

    assert ctx.removed_secret_revisions == []


def _with_user_password(state: testing.State, password: str) -> testing.State:
    others = [secret for secret in state.secrets if secret.id != PASSWORD_SECRET_ID]
    user_secret = testing.Secret({"password": password}, id=PASSWORD_SECRET_ID)
    return dataclasses.replace(state, secrets=[*others, user_secret])


def _state(
    config: dict[str, Any],
    secrets: list[testing.Secret],
    relations: list[testing.RelationBase],
    *,
    leader: bool = True,
) -> testing.State:
    return testing.State(config=config, secrets=secrets, relations=relations, leader=leader)


def _everything_visible(ctx: testing.Context[GarmConfiguratorCharm], state: testing.State) -> str:
    """Everything an operator or the remote side can see: logs, statuses, relation data."""
    parts = [line.message for line in ctx.juju_log]
    parts += [str(state.unit_status), str(state.app_status)]
    for relation in state.relations:
        parts.append(json.dumps(dict(relation.local_app_data)))
        parts.append(json.dumps(dict(relation.local_unit_data)))
    return "\n".join(parts)


def test_image_builder_gets_the_cloud_credentials_only_on_its_relation(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
    garm: testing.Relation,
):
    """Arrange: valid config, no image yet; related to garm and to an image builder.

    Act: the image relation's relation-joined.
    Assert: waiting for an image; this unit's image databag holds the interface's six
    credential keys, password included; the garm relation still holds no password.
    """
    image = testing.Relation("image", remote_app_name="image-builder")

    state = ctx.run(ctx.on.relation_joined(image), _state(valid_config, secrets, [garm, image]))

    assert isinstance(state.unit_status, ops.WaitingStatus)
    assert state.get_relation(image.id).local_unit_data == {
        **state.get_relation(image.id).local_unit_data,
        "auth_url": "https://keystone.example:5000/v3",
        "username": "runner-bot",
        "password": OPENSTACK_PASSWORD,
        "project_name": "runners",
        "user_domain_name": "Default",
        "project_domain_name": "Default",
    }
    garm_data = json.dumps(dict(state.get_relation(garm.id).local_app_data))
    assert OPENSTACK_PASSWORD not in garm_data


def test_invalid_config_shares_nothing_with_the_image_builder(
    ctx: testing.Context[GarmConfiguratorCharm],
    valid_config: dict[str, Any],
    secrets: list[testing.Secret],
):
    """Arrange: an invalid option; an image builder related. Act: config-changed.

    Assert: blocked; nothing written for the image builder.
    """
    valid_config["flavor"] = ""
    image = testing.Relation("image", remote_app_name="image-builder")

    state = ctx.run(ctx.on.config_changed(), _state(valid_config, secrets, [image]))

    assert isinstance(state.unit_status, ops.BlockedStatus)
    assert "password" not in state.get_relation(image.id).local_unit_data
