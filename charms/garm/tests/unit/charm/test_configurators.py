"""The charm with garm-configurator relations, against the GARM simulator over HTTP.

The workload is the recording double (no systemd here); GARM is `tests/garm_sim`, started with
the provider the charm renders for the configurator, as GARM would be after its restart.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
import re
from pathlib import Path
from typing import Any

import ops
import pytest
from ops import testing

import charm
import unit.walks.configurators as configurators_walks
from doubles.workload_double import RecordingWorkload
from garm_api import GarmClient
from garm_sim import GarmSim
from reconcile.bootstrap import (
    ADMIN_LABEL,
)
from unit.walks.configurators import (
    OPENSTACK_PASSWORD,
    Configurator,
    configurator,
    garm_secrets,
    leader_state,
    relabelled,
)

app_key = configurators_walks.app_key
sim = configurators_walks.sim


def garm_api_of(sim: GarmSim) -> GarmClient:
    """A client to look at what GARM holds, as the admin."""
    return GarmClient(sim.url, token=sim.token())


def test_published_configurator_becomes_a_scaleset(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: a fresh GARM and a configurator that published `small` for org `acme`.

    Act: config-changed on the leader.
    Assert: GARM is bootstrapped; the provider with the OpenStack password is rendered; GARM has
    the App credentials, the org and one enabled scale set `smal-<5 base 36>` (10 characters,
    what Nova's tags leave) with the labels; the status names the new scale set.
    """
    ctx = testing.Context(charm.GarmCharm)
    related = configurator(app_key)

    out = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, related))

    (provider,) = workload.applied[-1].providers
    assert provider.name == "openstack-small"
    assert provider.password == OPENSTACK_PASSWORD
    api = garm_api_of(sim)
    (scaleset,) = api.list_scalesets()
    assert re.fullmatch(r"smal-[a-z0-9]{5}", scaleset.name)
    assert scaleset.enabled
    assert scaleset.normalised_labels == {"linux", "x64"}
    assert (scaleset.min_idle_runners, scaleset.max_runners) == (1, 4)
    assert scaleset.entity_name == "acme"
    assert [c.name for c in api.list_github_credentials()] == ["garm-app-123-456"]
    assert out.unit_status == ops.ActiveStatus("'small': creating")
    assert out.app_status == out.unit_status


def test_second_hook_converges_without_writes(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: the scale set was created by a first hook; the hand-over grace has passed.

    Act: update-status.

    Assert: no write reaches GARM; Active with no changeover named.
    """
    ctx = testing.Context(charm.GarmCharm)
    state = leader_state(sim, resources, configurator(app_key), **{"handover-grace": "1s"})
    first = ctx.run(ctx.on.config_changed(), state)
    sim.clock.advance(1.1)  # past the hand-over grace, measured from GARM's created_at
    writes = sim.write_count()

    out = ctx.run(ctx.on.update_status(), first)

    assert sim.write_count() == writes
    assert out.unit_status == ops.ActiveStatus()


def test_refused_request_blocks_the_hook_does_not_fail(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` is served; then GARM answers 400 to the scale-set listing.

    Act: update-status.
    Assert: Blocked naming the refused call and GARM's answer; no write reached GARM.
    """
    ctx = testing.Context(charm.GarmCharm)
    served = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, configurator(app_key)))
    sim.fault("status", method="GET", path="/api/v1/scalesets", status=400)
    writes = sim.write_count()

    out = ctx.run(ctx.on.update_status(), served)

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert out.unit_status.message.startswith("GARM refused ")
    assert "HTTP 400" in out.unit_status.message
    assert sim.write_count() == writes


def test_unpublished_relation_waits_and_removes_nothing(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` is served; then a second configurator relates without publishing.

    Act: relation-changed for the silent one.
    Assert: `small` keeps its scale set untouched; the status says what it waits for.
    """
    ctx = testing.Context(charm.GarmCharm)
    state = leader_state(sim, resources, configurator(app_key), **{"handover-grace": "1s"})
    served = ctx.run(ctx.on.config_changed(), state)
    sim.clock.advance(1.1)  # past the hand-over grace, measured from GARM's created_at
    silent = testing.Relation("garm-configurator", remote_app_name="large")
    (before,) = sim.state.scalesets.values()
    writes = sim.write_count()

    out = ctx.run(
        ctx.on.relation_changed(silent),
        dataclasses.replace(served, relations={*served.relations, silent}),
    )

    assert [s.name for s in sim.state.scalesets.values()] == [before.name]
    assert sim.write_count() == writes
    assert out.unit_status == ops.ActiveStatus("waiting for large to publish a scale set")


def test_invalid_publication_blocks_naming_the_application(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: a configurator whose databag has an unknown schema version.

    Act: relation-changed. Assert: Blocked naming the application; GARM has no scale set.
    """
    ctx = testing.Context(charm.GarmCharm)
    related = configurator(app_key)
    bad = dataclasses.replace(
        related.relation, remote_app_data={**related.relation.remote_app_data, "version": "99"}
    )

    out = ctx.run(
        ctx.on.relation_changed(bad),
        leader_state(sim, resources, Configurator(bad, related.secrets)),
    )

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert out.unit_status.message.startswith(f"relation garm-configurator:{bad.id} (small): ")
    assert sim.state.scalesets == {}


def test_label_change_creates_the_replacement_first(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` is served with labels linux,x64.

    Act: the configurator publishes linux,x64,gpu.
    Assert: both generations exist, the old one still enabled; the status names the changeover.
    """
    ctx, state = relabelled(sim, resources, app_key)

    out = ctx.run(ctx.on.relation_changed(next(iter(state.relations))), state)

    old, new = sorted(garm_api_of(sim).list_scalesets(), key=lambda s: s.id)
    assert old.enabled
    assert new.enabled
    assert new.normalised_labels == {"linux", "x64", "gpu"}
    assert out.unit_status == ops.ActiveStatus("'small' labels changing: starting new scale set")


def test_every_created_scale_set_boots_its_runners_from_a_config_drive(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` is served; then its labels change, so a second generation is created.

    Act: config-changed, then relation-changed.
    Assert: every scale set GARM holds has `use_config_drive: true` in its extra specs.
    """
    ctx = testing.Context(charm.GarmCharm)
    original = configurator(app_key)
    served = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, original))
    changed = configurator(app_key, labels=("linux", "x64", "gpu"), secrets=original.secrets)
    relation = dataclasses.replace(
        next(iter(served.relations)), remote_app_data=changed.relation.remote_app_data
    )

    ctx.run(ctx.on.relation_changed(relation), dataclasses.replace(served, relations={relation}))

    api = garm_api_of(sim)
    scalesets = [api.get_scaleset(listed.id) for listed in api.list_scalesets()]
    assert len(scalesets) == 2
    assert all(scaleset.extra_specs == {"use_config_drive": True} for scaleset in scalesets)


def test_secrets_never_reach_status_or_logs(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: a published configurator. Act: config-changed at debug level.

    Assert: neither the OpenStack password nor the App key appear in status or log records.
    """
    caplog.set_level("DEBUG")
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, configurator(app_key)))

    key_line = app_key.splitlines()[1]
    assert OPENSTACK_PASSWORD not in out.unit_status.message
    assert OPENSTACK_PASSWORD not in caplog.text
    assert key_line not in caplog.text


def test_list_scalesets_shows_each_changeover_and_its_runners(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` served with one idle runner; its labels changed (replacement created).

    Act: run list-scalesets.
    Assert: both generations are listed with their runners; the changeover names the live
    name, its phase and the predecessor still serving, and each generation's labels, enabled
    flag and runners; nothing was written by the action.
    """
    ctx, relabelled_state = relabelled(sim, resources, app_key)
    relation = next(iter(relabelled_state.relations))
    state = ctx.run(ctx.on.relation_changed(relation), relabelled_state)
    writes = sim.write_count()

    ctx.run(ctx.on.action("list-scalesets"), state)

    assert ctx.action_results is not None
    rows = json.loads(ctx.action_results["scalesets"])
    assert [row["runners"] for row in rows] == [1, 1]
    (changeover,) = json.loads(ctx.action_results["changeovers"])
    assert changeover["scaleset"] == "small"
    assert changeover["phase"] == "creating"
    assert changeover["live-name"] in {row["name"] for row in rows}
    (predecessor,) = changeover["predecessors"]
    assert predecessor["runners"] == 1
    live, old = changeover["generations"]
    assert (live["name"], live["labels"], live["enabled"]) == (
        changeover["live-name"],
        ["gpu", "linux", "x64"],
        True,
    )
    assert (old["phase"], old["labels"], old["enabled"]) == ("active", ["linux", "x64"], True)
    assert sum(old["runners"].values()) == 1
    assert sim.write_count() == writes


def configurator_removed_while_a_job_runs(
    ctx: testing.Context[charm.GarmCharm],
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
) -> tuple[testing.State, str]:
    """Serve `small`, give its runner a job, break the relation; return the state and runner.

    The returned state is the one after relation-broken, without the relation (Juju forgets it).
    """
    served = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, configurator(app_key)))
    (scaleset,) = sim.state.scalesets.values()
    job = sim.start_job(scaleset.name)
    broken = ctx.run(ctx.on.relation_broken(next(iter(served.relations))), served)
    return dataclasses.replace(broken, relations=frozenset()), job


def test_removed_configurators_provider_stays_until_its_scale_set_is_gone(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` served; its runner runs a job; then its relation is removed.

    Act: update-status while the job runs, after the job ended, and once more.
    Assert: while GARM keeps the retired scale set, the provider stays rendered (unchanged,
    no restart) and the status says why; the hook in which GARM deleted the scale set drops the
    provider with exactly one restart; later hooks restart nothing.
    """
    ctx = testing.Context(charm.GarmCharm)
    gone, job = configurator_removed_while_a_job_runs(ctx, sim, resources, app_key)
    after_break = workload.applied[-1]
    restarts = workload.restarts

    draining = ctx.run(ctx.on.update_status(), gone)

    (retired,) = sim.state.scalesets.values()
    assert not retired.enabled
    assert (after_break.providers, after_break.kept_providers) == ((), ("openstack-small",))
    assert workload.applied[-1].kept_providers == ("openstack-small",)
    assert workload.rendered_provider_names() == {"openstack-small"}
    assert workload.restarts == restarts
    assert draining.unit_status == ops.ActiveStatus(
        "removing 1 unconfigured scale set (1 runner draining); "
        "keeping provider openstack-small until its scale set is gone"
    )

    sim.finish_job(job)
    sim.advance(300)  # a disabled set: GARM hears of it at its 5-minute consolidation
    released = ctx.run(ctx.on.update_status(), draining)

    assert sim.state.scalesets == {}
    assert workload.applied[-1].kept_providers == ()
    assert workload.rendered_provider_names() == set()
    assert workload.restarts == restarts + 1
    assert released.unit_status == ops.ActiveStatus()

    ctx.run(ctx.on.update_status(), released)

    assert workload.restarts == restarts + 1


@pytest.mark.parametrize(
    "outage",
    ["refused", "reset-while-listing-scalesets"],
)
def test_outage_never_removes_a_kept_provider(
    sim: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    app_key: str,
    outage: str,
):
    """Arrange: `small`'s relation removed while its runner ran a job; the job has ended.

    Act: update-status while GARM refuses connections (or drops the scale-set listing).
    Assert: the provider stays rendered; Waiting; once GARM answers again, it goes.
    """
    ctx = testing.Context(charm.GarmCharm)
    gone, job = configurator_removed_while_a_job_runs(ctx, sim, resources, app_key)
    sim.finish_job(job)
    sim.advance(300)  # a disabled set: GARM hears of it at its 5-minute consolidation

    if outage == "refused":
        with sim.refusing_connections():
            out = ctx.run(ctx.on.update_status(), gone)
    else:
        fault = sim.fault("reset", method="GET", path="/api/v1/scalesets")
        out = ctx.run(ctx.on.update_status(), gone)
        sim.remove_fault(fault)

    assert isinstance(out.unit_status, ops.WaitingStatus)
    assert workload.applied[-1].kept_providers == ("openstack-small",)
    assert workload.rendered_provider_names() == {"openstack-small"}

    ctx.run(ctx.on.update_status(), out)

    assert workload.rendered_provider_names() == set()


def test_refused_scaleset_listing_never_removes_a_kept_provider(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small`'s relation removed while its runner ran a job; the job has ended.

    Act: update-status while GARM answers 500 to the scale-set listing.
    Assert: Waiting naming the failed call (the hook succeeds; the next one retries) and the
    provider stays rendered.
    """
    ctx = testing.Context(charm.GarmCharm)
    gone, job = configurator_removed_while_a_job_runs(ctx, sim, resources, app_key)
    sim.finish_job(job)
    sim.advance(300)  # a disabled set: GARM hears of it at its 5-minute consolidation
    sim.fault("status", method="GET", path="/api/v1/scalesets", status=500)

    out = ctx.run(ctx.on.update_status(), gone)

    assert isinstance(out.unit_status, ops.WaitingStatus)
    assert "HTTP 500" in out.unit_status.message
    assert out.unit_status.message.endswith("retrying at the next hook")
    assert workload.applied[-1].kept_providers == ("openstack-small",)
    assert workload.rendered_provider_names() == {"openstack-small"}


def test_readded_configurator_renders_its_provider_from_new_data(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small`'s relation removed while its runner runs a job (provider kept).

    Act: `small` is related again with a new OpenStack password.
    Assert: the provider is rendered from the new data, not kept.
    """
    ctx = testing.Context(charm.GarmCharm)
    gone, _ = configurator_removed_while_a_job_runs(ctx, sim, resources, app_key)
    renewed = configurator(
        app_key,
        secrets=[
            testing.Secret(
                tracked_content={"password": "a-New-openstack-pa55word", "app": "small"}
            ),
            testing.Secret(tracked_content={"private-key": app_key, "app": "small"}),
        ],
    )

    ctx.run(
        ctx.on.relation_changed(renewed.relation),
        dataclasses.replace(
            gone, relations={renewed.relation}, secrets={*gone.secrets, *renewed.secrets}
        ),
    )

    (provider,) = workload.applied[-1].providers
    assert provider.password == "a-New-openstack-pa55word"
    assert workload.applied[-1].kept_providers == ()


def _with_runner_options(related: Configurator, runner: dict[str, Any]) -> Configurator:
    """The same configurator, publishing schema version 2 with runner options."""
    data = {**related.relation.remote_app_data, "version": "2", "runner": json.dumps(runner)}
    relation = dataclasses.replace(related.relation, remote_app_data=data)
    return Configurator(relation, related.secrets)


def test_runner_options_become_a_template_and_extra_specs(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: GARM with v0.2.1's github_linux; a version-2 configurator with runner options.

    (A Docker Hub mirror, a pre-job script and a pre-install script.)
    Act: config-changed on the leader.
    Assert: Active; GARM holds the template garm-charm-small and the scale set uses it, with
    the operator's pre-install script in its extra_specs.
    """
    base = Path(__file__).parents[1] / "runner_templates" / "github_linux-v0.2.1.tmpl"
    system = next(t for t in sim.state.templates.values() if t.name == "github_linux")
    system.data = base.read_bytes()
    runner = {
        "dockerhub_mirror": "https://mirror.internal",
        "pre_job_script": "echo ready",
        "pre_install_scripts": {"apt": "apt-get install -y jq"},
    }
    related = _with_runner_options(configurator(app_key), runner)
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, related))

    assert out.unit_status == ops.ActiveStatus("'small': creating")
    (listed,) = garm_api_of(sim).list_scalesets()
    scaleset = garm_api_of(sim).get_scaleset(listed.id)
    assert scaleset.template_name == "garm-charm-small"
    assert scaleset.extra_specs is not None
    assert set(scaleset.extra_specs["pre_install_scripts"]) == {  # type: ignore[arg-type]
        "01-garm-charm-dockerhub-mirror",
        "50-apt",
    }


def test_a_system_template_without_the_install_step_blocks(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: an admin edited github_linux, which lost GARM's install step; a pre-job script.

    Act: config-changed. Assert: Blocked naming the template and how to restore GARM's.
    """
    system = next(t for t in sim.state.templates.values() if t.name == "github_linux")
    system.data = b"#!/bin/bash\necho edited by hand\n"  # GARM lets an admin edit it
    related = _with_runner_options(configurator(app_key), {"pre_job_script": "echo ready"})
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, related))

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert out.unit_status.message.startswith(
        "template garm-charm-small: github_linux lacks GARM's install step: "
        "garm-cli template restore"
    )
    assert len(out.unit_status.message) <= 120


def test_configurator_pointing_at_garms_admin_secret_is_refused(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` publishes the id of garm's own admin secret as its OpenStack password.

    (The admin secret's key `password` has the name the relation expects.)

    Act: config-changed on the leader.
    Assert: Blocked naming the relation; the admin password is in no rendered provider and
    GARM holds no credentials or scale set from that relation; the status holds no secret.
    """
    ctx = testing.Context(charm.GarmCharm)
    own = garm_secrets()
    admin = next(secret for secret in own if secret.label == ADMIN_LABEL)
    admin_password = admin.tracked_content["password"]
    key = testing.Secret(tracked_content={"private-key": app_key, "app": "small"})
    related = configurator(app_key, secrets=[admin, key])
    state = dataclasses.replace(leader_state(sim, resources, related), secrets={*own, key})

    out = ctx.run(ctx.on.config_changed(), state)

    relation_id = related.relation.id
    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert out.unit_status.message.startswith(
        f"relation garm-configurator:{relation_id} (small): secret {admin.id} is owned by"
    )
    assert len(out.unit_status.message) <= 120
    assert admin_password not in out.unit_status.message
    assert all(not config.providers for config in workload.applied)
    api = garm_api_of(sim)
    assert api.list_github_credentials() == []
    assert api.list_scalesets() == []


def test_configurator_pointing_at_another_configurators_secret_is_refused(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` publishes ids of secrets that name configurator `large` as publisher.

    Act: config-changed. Assert: Blocked naming the relation and the publisher; nothing rendered.
    """
    ctx = testing.Context(charm.GarmCharm)
    related = configurator(
        app_key,
        secrets=[
            testing.Secret(tracked_content={"password": OPENSTACK_PASSWORD, "app": "large"}),
            testing.Secret(tracked_content={"private-key": app_key, "app": "large"}),
        ],
    )

    out = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, related))

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert "(small): secret" in out.unit_status.message
    assert "does not name small: refused" in out.unit_status.message
    assert all(not config.providers for config in workload.applied)


RSA_FINGERPRINT = "SHA256:" + "R" * 43
ED25519_FINGERPRINT = "SHA256:" + "E" * 43


def _runner_env(sim: GarmSim) -> str:
    """The `.env` lines the charm's template writes, decoded from the template in GARM."""
    (template,) = [t for t in sim.state.templates.values() if t.name == "garm-charm-small"]
    for line in template.data.decode().splitlines():
        if line.startswith("echo ") and line.split("|")[1].strip().endswith('"$RUN_HOME/.env"'):
            return base64.b64decode(line.split()[1]).decode()
    return ""


def test_debug_ssh_reaches_the_runners_and_leaves_with_the_relation(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: v0.2.1's github_linux; a pre-job script; a tmate-ssh-server unit on debug-ssh.

    Act: config-changed; then debug-ssh relation-broken.
    Assert: the runners' .env gets the relay's TMATE_SERVER_* variables; after the relation
    goes, the template is updated in place without them.
    """
    base = Path(__file__).parents[1] / "runner_templates" / "github_linux-v0.2.1.tmpl"
    system = next(t for t in sim.state.templates.values() if t.name == "github_linux")
    system.data = base.read_bytes()
    related = _with_runner_options(configurator(app_key), {"pre_job_script": "echo ready"})
    relay = testing.Relation(
        "debug-ssh",
        remote_app_name="tmate-ssh-server",
        remote_units_data={
            0: {
                "host": "10.1.2.3",
                "port": "10022",
                "rsa_fingerprint": RSA_FINGERPRINT,
                "ed25519_fingerprint": ED25519_FINGERPRINT,
            }
        },
    )
    state = dataclasses.replace(
        leader_state(sim, resources, related), relations={related.relation, relay}
    )
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(ctx.on.config_changed(), state)
    with_relay = _runner_env(sim)
    ctx.run(ctx.on.relation_broken(relay), out)
    without = _runner_env(sim)

    assert out.unit_status == ops.ActiveStatus("'small': creating")
    assert "TMATE_SERVER_HOST=10.1.2.3\n" in with_relay
    assert "TMATE_SERVER_PORT=10022\n" in with_relay
    assert f"TMATE_SERVER_ED25519_FINGERPRINT={ED25519_FINGERPRINT}\n" in with_relay
    assert "TMATE" not in without


def test_an_invalid_debug_ssh_publication_is_ignored(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: a configurator without runner options; a relay unit with a bad port.

    Act: config-changed. Assert: active, no template (nothing to add), a warning logged.
    """
    relay = testing.Relation(
        "debug-ssh",
        remote_units_data={0: {"host": "10.1.2.3", "port": "99999"}},
    )
    related = configurator(app_key)
    state = dataclasses.replace(
        leader_state(sim, resources, related), relations={related.relation, relay}
    )
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(ctx.on.config_changed(), state)

    assert out.unit_status == ops.ActiveStatus("'small': creating")
    assert not [t for t in sim.state.templates.values() if t.name.startswith("garm-charm-")]
    assert any("debug-ssh" in log.message for log in ctx.juju_log if log.level == "WARNING")


def test_the_relation_library_loads_only_when_the_relations_are_read():
    """Arrange: a fresh interpreter with the charm's source and libraries on its path.

    Act: import the charm, as every hook does; then read the publications, as the leader does.
    Assert: the relation library and pydantic are loaded only by the read, so a hook that reads
    no garm-configurator relation (a standby unit's) never pays for them.
    """
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    src = Path(charm.__file__).parent
    code = (
        "import sys, charm\nfrom relations import configurators\n"
        "tops = lambda: {m.split('.')[0] for m in sys.modules}\n"
        "loaded = lambda: sorted(tops() & {'charms', 'pydantic'})\n"
        "print(loaded())\n"
        "configurators.read_configurators(None, [])\n"
        "print(loaded())\n"
    )

    output = subprocess.run(
        [sys.executable, "-c", code],
        cwd=src,
        env={"PYTHONPATH": f"{src}:{src.parent / 'lib'}"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    assert output.splitlines() == ["[]", "['charms', 'pydantic']"]


def test_the_min_idle_schedule_follows_the_charms_clock(
    sim: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `small` publishes a schedule; the charm's clock reads a Monday 09:00.

    The schedule is `Mon-Fri 08:00-18:00 UTC=3; default=0`; the charm's clock is the
    simulator's, frozen, far from the machine's wall clock.

    Act: config-changed; the clock moves to 20:00; config-changed.
    Assert: GARM's scale set had min idle 3, then 0: the window is judged at the charm's time.
    """
    ctx = testing.Context(charm.GarmCharm)
    related = configurator(app_key)
    schedule = {"min_idle_schedule": "Mon-Fri 08:00-18:00 UTC=3; default=0"}
    data = {**related.relation.remote_app_data, "version": "2", "runner": json.dumps(schedule)}
    related.relation = dataclasses.replace(related.relation, remote_app_data=data)
    monday_nine = datetime.datetime(2030, 1, 7, 9, 0, tzinfo=datetime.UTC)
    sim.clock.advance(monday_nine.timestamp() - sim.clock.now())

    state = ctx.run(ctx.on.config_changed(), leader_state(sim, resources, related))
    during = garm_api_of(sim).list_scalesets()[0].min_idle_runners
    sim.clock.advance(11 * 3600)
    ctx.run(ctx.on.config_changed(), state)
    after = garm_api_of(sim).list_scalesets()[0].min_idle_runners

    assert (during, after) == (3, 0)
