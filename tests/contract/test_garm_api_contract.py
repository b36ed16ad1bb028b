"""`garm_api.GarmClient` against the simulator over HTTP, one test per GARM behaviour C1-C14."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import garm_api
from contract.conftest import ADMIN, PASSWORD, PROVIDER, Garm, scaleset_body
from garm_api import (
    EntityKind,
    GarmApiError,
    GarmBadRequest,
    GarmClient,
    GarmConflict,
    GarmNotFound,
    GarmNotInitialised,
    GarmServerError,
    GarmUnauthorized,
    GarmUnreachable,
    GarmUrlsRequired,
    InvalidRequest,
    ScaleSetCreate,
    ScaleSetUpdate,
)
from garm_sim import GarmSim

REPO = EntityKind.REPOSITORY


@pytest.fixture
def client(garm: Garm) -> GarmClient:
    """A garm_api client logged in to the bootstrapped simulator."""
    return GarmClient(garm.url, garm.token, connect_timeout=2, read_timeout=5)


def spec(name: str, **fields: object) -> ScaleSetCreate:
    """Return a valid create request (disabled, min 0, max 2) with overrides."""
    values: dict[str, object] = {
        "name": name,
        "provider_name": PROVIDER,
        "image": "ubuntu:22.04",
        "flavor": "small",
        "labels": ("harness", "x64"),
        "max_runners": 2,
        "enabled": False,
    }
    return ScaleSetCreate(**(values | fields))  # type: ignore[arg-type]


def test_bootstrap_sequence_maps_each_gate_to_its_error(sim: GarmSim):
    """Arrange: a fresh GARM and a client without a token.

    Act: controller info, first-run (twice), wrong login, login, controller info, set URLs.

    Assert: GarmNotInitialised, a User, GarmConflict, GarmUnauthorized, GarmUrlsRequired, and
    finally the URLs in ControllerInfo (C10 and the bootstrap gates).
    """
    client = GarmClient(sim.url, connect_timeout=2, read_timeout=5)

    with pytest.raises(GarmNotInitialised):
        client.controller_info()
    user = client.first_run(ADMIN, "admin@example.com", PASSWORD)
    with pytest.raises(GarmConflict):
        client.first_run(ADMIN, "admin@example.com", PASSWORD)
    with pytest.raises(GarmUnauthorized):
        client.login(ADMIN, "wrong")
    client.login(ADMIN, PASSWORD)
    with pytest.raises(GarmUrlsRequired):
        client.controller_info()
    client.update_controller(metadata_url=f"{sim.url}/meta", callback_url=f"{sim.url}/cb")
    info = client.controller_info()

    assert (user.username, user.is_admin) == (ADMIN, True)
    assert (info.metadata_url, info.callback_url) == (f"{sim.url}/meta", f"{sim.url}/cb")
    assert client.metrics_token()


def test_bad_token_is_unauthorized(garm: Garm):
    """Arrange: a client with a made-up token. Act: list scale sets (C10). Assert: 401 error."""
    client = GarmClient(garm.url, "not-a-jwt")

    with pytest.raises(GarmUnauthorized) as caught:
        client.list_scalesets()

    assert caught.value.error == "Authentication failed"


def test_providers_and_templates(client: GarmClient):
    """Arrange: a bootstrapped GARM. Act: list providers and linux templates (C15).

    Assert: the configured provider; system templates without bodies; a template body decoded.
    """
    providers = client.list_providers()
    templates = client.list_templates(os_type="linux")
    linux = next(t for t in templates if t.name == "github_linux")

    assert [(p.name, p.type) for p in providers] == [(PROVIDER, "external")]
    assert {t.name for t in templates} == {"github_linux", "gitea_linux"}
    assert linux.data is None
    assert client.get_template(linux.id).data


def test_template_lifecycle(client: GarmClient):
    """Arrange: nothing. Act: create, duplicate, update, delete a template (C15).

    Assert: owner admin; GarmConflict; new body; GarmNotFound after delete.
    """
    created = client.create_template("mine", data=b"#!/bin/bash\n")
    with pytest.raises(GarmConflict):
        client.create_template("mine", data=b"#!/bin/bash\n")
    updated = client.update_template(created.id, data=b"#!/bin/bash\necho hi\n")
    client.delete_template(created.id)

    assert created.owner_id == ADMIN
    assert updated.data == b"#!/bin/bash\necho hi\n"
    with pytest.raises(GarmNotFound):
        client.get_template(created.id)


def test_app_credentials_need_pkcs1(client: GarmClient, garm: Garm):
    """Arrange: RSA keys in PKCS#1 and PKCS#8 form. Act: create App credentials with each (C16).

    Assert: PKCS#1 accepted (`auth_type` app); PKCS#8 refused before any request is sent.
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    none = serialization.NoEncryption()
    pem = serialization.Encoding.PEM
    pkcs1 = key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL, none)
    pkcs8 = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, none)

    created = client.create_github_app_credentials(
        "app", endpoint="github.com", app_id=1, installation_id=2, private_key_pem=pkcs1
    )
    garm.sim.reset_log()
    with pytest.raises(InvalidRequest):
        client.create_github_app_credentials(
            "app8", endpoint="github.com", app_id=1, installation_id=2, private_key_pem=pkcs8
        )

    assert created.auth_type == "app"
    assert garm.sim.count() == 0


def test_empty_credentials_list_is_empty(client: GarmClient, garm: Garm):
    """Arrange: repository and credentials deleted (GARM then lists `null`). Act: list.

    Assert: an empty list, and no credentials or repositories remain (C17 delete order).
    """
    client.delete_entity(REPO, garm.repo_id)
    client.delete_github_credentials(1)

    assert client.list_github_credentials() == []
    assert client.list_entities(REPO) == []


def test_entity_delete_refused_while_scalesets_exist(client: GarmClient, garm: Garm):
    """Arrange: a repository with a scale set. Act: delete the repository (C17).

    Assert: GarmBadRequest; after the scale set is gone the delete succeeds.
    """
    created = client.create_scaleset(REPO, garm.repo_id, spec("pinned"))

    with pytest.raises(GarmBadRequest):
        client.delete_entity(REPO, garm.repo_id)
    client.delete_scaleset(created.id)
    client.delete_entity(REPO, garm.repo_id)

    assert client.list_entities(REPO) == []


def test_duplicate_repository_differing_in_case_conflicts(client: GarmClient):
    """Arrange: fake-org/fake-repo exists. Act: register Fake-Org/Fake-Repo (C17).

    Assert: GarmConflict.
    """
    with pytest.raises(GarmConflict):
        client.create_repository(
            "Fake-Org", "Fake-Repo", credentials_name="fake-pat", webhook_secret="s"
        )


def test_long_names_pass_until_github_refuses(client: GarmClient, garm: Garm):
    """Arrange: GitHub limits names to 64 characters.

    Act: create 64- and 65-character names (C1).

    Assert: the first is created with its full name; the second raises GarmBadRequest carrying
    GitHub's message.
    """
    garm.sim.github.max_name_length = 64

    created = client.create_scaleset(REPO, garm.repo_id, spec("a" * 64))
    with pytest.raises(GarmBadRequest) as caught:
        client.create_scaleset(REPO, garm.repo_id, spec("b" * 65))

    assert created.name == "a" * 64
    assert "longer than 64 characters" in caught.value.details


def test_duplicate_is_conflict_and_ids_differ(client: GarmClient, garm: Garm):
    """Arrange: a late failure at GARM consumed a GitHub id. Act: create a set twice (C2).

    Assert: GarmConflict for the duplicate; GARM id and GitHub id differ.
    """
    garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", scaleset_body("x", max_runners=0))

    created = client.create_scaleset(REPO, garm.repo_id, spec("dup"))
    with pytest.raises(GarmConflict):
        client.create_scaleset(REPO, garm.repo_id, spec("dup"))

    assert created.id != created.github_scale_set_id


def test_absent_fields_read_as_false_zero_and_empty(client: GarmClient, garm: Garm):
    """Arrange: a disabled scale set with min idle 0. Act: get it and list all (C3).

    Assert: enabled False, min idle 0, no extra specs, extended state ""; the list has no
    template name while GET by id has it.
    """
    created = client.create_scaleset(REPO, garm.repo_id, spec("quiet"))

    fetched = client.get_scaleset(created.id)
    listed = client.list_scalesets()[0]

    assert (fetched.enabled, fetched.min_idle_runners, fetched.extended_state) == (False, 0, "")
    assert fetched.extra_specs is None
    assert fetched.state == "pending_create"
    assert fetched.template_name == "github_linux"
    assert listed.template_name is None


def test_update_changes_group_not_labels(client: GarmClient, garm: Garm):
    """Arrange: a scale set labelled harness, x64; GitHub group `other`.

    Act: update its runner group and name (C4).

    Assert: the new group and name; labels unchanged; generation moved by the group change.
    """
    garm.sim.github.runner_groups.add("other")
    created = client.create_scaleset(REPO, garm.repo_id, spec("grp"))

    updated = client.update_scaleset(created.id, ScaleSetUpdate(runner_group="other", name="grp2"))

    assert (updated.runner_group, updated.name) == ("other", "grp2")
    assert updated.labels == created.labels == ("harness", "x64")
    assert updated.generation == created.generation + 1


def test_enable_and_disable(client: GarmClient, garm: Garm):
    """Arrange: a disabled scale set. Act: enable, then disable it (C5).

    Assert: `enabled` reads True then False.
    """
    created = client.create_scaleset(REPO, garm.repo_id, spec("toggle"))

    enabled = client.update_scaleset(created.id, ScaleSetUpdate(enabled=True))
    disabled = client.update_scaleset(created.id, ScaleSetUpdate(enabled=False))

    assert (created.enabled, enabled.enabled, disabled.enabled) == (False, True, False)


def test_min_idle_one_gives_a_running_instance(client: GarmClient, garm: Garm):
    """Arrange: nothing. Act: create an enabled scale set with min idle 1, list instances (C6).

    Assert: one running instance whose `scale_set_id` is GARM's id; the global list agrees.
    """
    created = client.create_scaleset(
        REPO, garm.repo_id, spec("warm", enabled=True, min_idle_runners=1)
    )

    instances = client.list_scaleset_instances(created.id)

    assert [(i.status, i.scale_set_id) for i in instances] == [("running", created.id)]
    assert [i.name for i in client.list_instances()] == [instances[0].name]


def test_delete_refusals_and_real_delete(client: GarmClient, garm: Garm):
    """Arrange: an enabled scale set with a runner.

    Act: delete; disable and delete; retire (min 0, max 0) and delete; delete again (C7, C8, C12).

    Assert: GarmBadRequest `scale set has runners` twice; then the delete succeeds, GET raises
    GarmNotFound and the second delete is quiet.
    """
    created = client.create_scaleset(
        REPO, garm.repo_id, spec("old", enabled=True, min_idle_runners=1)
    )

    with pytest.raises(GarmBadRequest, match="scale set has runners"):
        client.delete_scaleset(created.id)
    client.update_scaleset(created.id, ScaleSetUpdate(enabled=False))
    with pytest.raises(GarmBadRequest, match="scale set has runners"):
        client.delete_scaleset(created.id)
    retired = client.update_scaleset(created.id, ScaleSetUpdate(min_idle_runners=0, max_runners=0))
    client.delete_scaleset(created.id)
    client.delete_scaleset(created.id)

    assert (retired.min_idle_runners, retired.max_runners) == (0, 0)
    with pytest.raises(GarmNotFound):
        client.get_scaleset(created.id)


def test_delete_of_enabled_empty_set_is_refused(client: GarmClient, garm: Garm):
    """Arrange: an enabled scale set without runners. Act: delete it (C7).

    Assert: GarmBadRequest naming that it is enabled.
    """
    created = client.create_scaleset(REPO, garm.repo_id, spec("on", enabled=True))

    with pytest.raises(GarmBadRequest, match="disable it first"):
        client.delete_scaleset(created.id)


def test_delete_answered_200_can_keep_the_scaleset(client: GarmClient, garm: Garm):
    """Arrange: GitHub answers scale-set deletes with 500. Act: delete a disabled empty set (C9).

    Assert: delete_scaleset raises nothing, yet the scale set is still listed.
    """
    created = client.create_scaleset(REPO, garm.repo_id, spec("sticky"))
    garm.sim.github.delete_status = 500

    client.delete_scaleset(created.id)

    assert [s.id for s in client.list_scalesets()] == [created.id]


def test_unknown_ids_and_late_validation(client: GarmClient, garm: Garm):
    """Arrange: no scale sets. Act: get an unknown id (C10); create with max 0 (C11).

    Assert: GarmNotFound; InvalidRequest without any request sent to GARM.
    """
    with pytest.raises(GarmNotFound):
        client.get_scaleset(999999)
    garm.sim.reset_log()

    with pytest.raises(InvalidRequest):
        client.create_scaleset(REPO, garm.repo_id, spec("bad", max_runners=0))

    assert garm.sim.count() == 0


def test_unknown_provider_is_accepted_and_never_scales(client: GarmClient, garm: Garm):
    """Arrange: nothing. Act: create with provider `nope`, enabled, min idle 1 (C11).

    Assert: created; no instance after worker passes.
    """
    created = client.create_scaleset(
        REPO, garm.repo_id, spec("typo", provider_name="nope", enabled=True, min_idle_runners=1)
    )
    garm.sim.advance(60)

    assert client.list_scaleset_instances(created.id) == []


def test_min_above_max_update_is_bad_request(client: GarmClient, garm: Garm):
    """Arrange: a scale set with max 2. Act: update min idle to 5 only (C12).

    Assert: GarmBadRequest with GARM's message.
    """
    created = client.create_scaleset(REPO, garm.repo_id, spec("sized"))

    with pytest.raises(GarmBadRequest, match="cannot be larger than max_runners"):
        client.update_scaleset(created.id, ScaleSetUpdate(min_idle_runners=5))


def test_force_delete_instance(client: GarmClient, garm: Garm):
    """Arrange: a disabled scale set with one running runner. Act: delete_instance (C13).

    Assert: the runner is gone and not replaced.
    """
    created = client.create_scaleset(
        REPO, garm.repo_id, spec("force", enabled=True, min_idle_runners=1)
    )
    client.update_scaleset(created.id, ScaleSetUpdate(enabled=False))
    name = client.list_scaleset_instances(created.id)[0].name

    client.delete_instance(name)
    garm.sim.tick()

    assert client.list_scaleset_instances(created.id) == []


def test_instance_in_pending_create_cannot_be_deleted():
    """Arrange: runners take 10 s to boot; one is pending_create. Act: delete_instance (C13).

    Assert: GarmBadRequest naming the allowed states.
    """
    with GarmSim([PROVIDER], boot_seconds=10, frozen_clock=True) as sim:
        client = GarmClient(sim.url, sim.bootstrap())
        repo = sim.seed_entity()
        created = client.create_scaleset(
            REPO, repo, spec("slow", enabled=True, min_idle_runners=1)
        )
        name = client.list_scaleset_instances(created.id)[0].name

        with pytest.raises(GarmBadRequest, match="following states"):
            client.delete_instance(name)


def test_updated_at_and_extended_state(client: GarmClient, garm: Garm):
    """Arrange: a scale set left alone for 20 s.

    Act: a no-op update, then set extended state (C14).

    Assert: `updated_at` unchanged by idling and the no-op; moved by the change; the extended
    state is read back by get and list.
    """
    created = client.create_scaleset(REPO, garm.repo_id, spec("marks"))
    garm.sim.advance(20)

    same = client.update_scaleset(created.id, ScaleSetUpdate(max_runners=2, enabled=False))
    marked = client.update_scaleset(created.id, ScaleSetUpdate(extended_state='{"drain": 1}'))

    assert same.updated_at == created.updated_at
    assert marked.updated_at > created.updated_at
    assert client.list_scalesets()[0].extended_state == '{"drain": 1}'


def test_tags_compare_case_insensitively(client: GarmClient, garm: Garm):
    """Arrange: a scale set labelled `Ubuntu`. Act: create one asking for `ubuntu`.

    Assert: GARM returns `Ubuntu`, and `missing_labels` still finds nothing missing.
    """
    client.create_scaleset(REPO, garm.repo_id, spec("one", labels=("Ubuntu",)))

    second = client.create_scaleset(REPO, garm.repo_id, spec("two", labels=("ubuntu",)))

    assert second.labels == ("Ubuntu",)
    assert second.missing_labels(["ubuntu"]) == frozenset()


def test_dropped_labels_are_detectable(client: GarmClient, garm: Garm):
    """Arrange: older GHES drops `gpu`. Act: create with harness and gpu.

    Assert: `missing_labels` names gpu.
    """
    garm.sim.github.dropped_labels.add("gpu")

    created = client.create_scaleset(REPO, garm.repo_id, spec("ghes", labels=("harness", "gpu")))

    assert created.missing_labels(["harness", "gpu"]) == frozenset({"gpu"})


def test_provider_fault_is_decoded(client: GarmClient, garm: Garm):
    """Arrange: a runner with a provider fault. Act: list instances. Assert: decoded bytes."""
    client.create_scaleset(REPO, garm.repo_id, spec("faulty", enabled=True, min_idle_runners=1))
    name = garm.sim.instances("faulty")[0].name
    garm.sim.set_provider_fault(name, b"quota exceeded")

    instance = client.list_instances()[0]

    assert (instance.status, instance.provider_fault) == ("error", b"quota exceeded")


def test_server_error_is_an_api_error(client: GarmClient, garm: Garm):
    """Arrange: GARM answers 503 to listing scale sets. Act: list. Assert: GarmServerError."""
    garm.sim.fault(method="GET", path="/api/v1/scalesets", status=503)

    with pytest.raises(GarmServerError) as caught:
        client.list_scalesets()

    assert caught.value.status == 503


@pytest.mark.parametrize("kind", ["reset", "drop"])
def test_broken_connections_are_unreachable_not_api_errors(
    client: GarmClient, garm: Garm, kind: str
):
    """Arrange: GARM resets or drops connections. Act: list scale sets.

    Assert: GarmUnreachable, which is no GarmApiError.
    """
    garm.sim.fault(kind)  # type: ignore[arg-type]

    with pytest.raises(GarmUnreachable) as caught:
        client.list_scalesets()

    assert not isinstance(caught.value, GarmApiError)


def test_refused_connection_is_unreachable(client: GarmClient, garm: Garm):
    """Arrange: GARM is down (connections refused). Act: list scale sets and controller info.

    Assert: GarmUnreachable for both; after GARM is back the same client works.
    """
    with garm.sim.refusing_connections():
        with pytest.raises(GarmUnreachable):
            client.list_scalesets()
        with pytest.raises(GarmUnreachable):
            client.controller_info()

    assert client.list_scalesets() == []


def test_latency_beyond_the_read_timeout_is_unreachable(garm: Garm):
    """Arrange: 1 s latency; a client with a 0.3 s read timeout. Act: list scale sets.

    Assert: GarmUnreachable (a timeout is an outage, not a refusal).
    """
    client = GarmClient(garm.url, garm.token, connect_timeout=1, read_timeout=0.3)
    garm.sim.fault("latency", path="/api/v1/scalesets", delay=1.0, times=1)

    with pytest.raises(GarmUnreachable):
        client.list_scalesets()


def test_client_sends_base64_for_byte_fields(client: GarmClient, garm: Garm):
    """Arrange: nothing. Act: create a template with bytes. Assert: GARM stored them decoded."""
    created = client.create_template("bytes", data=b"\x00\x01binary")

    stored = garm.sim.state.templates[created.id].data

    assert stored == b"\x00\x01binary"
    assert base64.b64decode(garm.call("GET", f"/templates/{created.id}").json["data"]) == stored


def test_module_exposes_the_error_families():
    """Arrange: nothing. Act: inspect garm_api. Assert: the two error families do not overlap."""
    assert issubclass(garm_api.GarmNotInitialised, GarmApiError)
    assert not issubclass(GarmUnreachable, GarmApiError)
