"""End to end with the real provider: charm hooks, real GARM, real provider, fake OpenStack.

The same machine as `test_garm_machine.py` (the charm through `ops.testing` in the e2e
container, GARM started by its systemd, the fake GitHub), but the
`garm-provider-openstack` resource is the real provider binary, and Keystone, Nova, Glance and
Neutron are the fake OpenStack on loopback. Its Nova "boots" each server by reading the user
data the provider built and reporting the runner to GARM, as cloud-init would make it do.

The walk, on both GARM binaries (SQLite: the backend plays no part in what the provider does):
install, configurator related with every runner option, its runner created by the provider and
online, what the provider built checked, a label change (the new set's runner online, the old
set's servers deleted), configurator removed (every server the provider created deleted).
"""

from __future__ import annotations

import base64
import dataclasses
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from ops import testing

from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.configurator_publication import CONFIGURATOR_ENDPOINT, pkcs1_app_key
from e2e.conftest import SQLITE_CASES, Case, GarmTarballs, available_case
from e2e.container_machine import ContainerMachine
from e2e.machine import build_tarball
from e2e.real_provider import publication, require_provider_binary
from e2e.test_garm_machine import (
    NEW_LABELS,
    OLD_LABELS,
    OPENSTACK_PASSWORD,
    Walk,
    assert_no_secret_in,
    install_and_bootstrap,
    known_secrets,
    point_github_at_the_fake,
)
from fake_github import FakeGitHub
from fake_openstack import Cloud, CloudInit, FakeOpenStack
from garm_api import ScaleSet
from garm_api.models import normalise_labels
from reconcile.runner_template import install_block, pre_install_scripts
from relations.configurators import runner_config

PROVIDER = "openstack-small"


@dataclasses.dataclass
class ProviderWalk:
    """The machine walk with the real provider: its fake OpenStack and what its servers booted."""

    walk: Walk
    cloud: FakeOpenStack
    cloud_init: CloudInit

    def data(self, labels: tuple[str, ...]) -> interface.GarmConfiguratorData:
        """What configurator `small` publishes: `labels`, Keystone at the fake, its secrets."""
        password, key = (
            next(
                secret
                for secret in self.walk.state.secrets
                if field in secret.tracked_content and secret.tracked_content.get("app") == "small"
            )
            for field in ("password", "private-key")
        )
        return publication(
            labels,
            auth_url=self.cloud.auth_url,
            password_secret_id=password.id,
            private_key_secret_id=key.id,
        )

    def publish(self, labels: tuple[str, ...]) -> None:
        """Configurator `small` publishes `labels`: relation-changed."""
        state = self.walk.state
        data = self.data(labels)
        relation = next(r for r in state.relations if r.endpoint == CONFIGURATOR_ENDPOINT)
        changed = dataclasses.replace(relation, remote_app_data=data.to_databag())
        others = {r for r in state.relations if r.endpoint != CONFIGURATOR_ENDPOINT}
        self.walk.state = dataclasses.replace(state, relations=others | {changed})
        self.walk.hook(self.walk.ctx.on.relation_changed(changed, remote_unit=0))


@pytest.fixture(params=SQLITE_CASES)
def sqlite_case(request: pytest.FixtureRequest) -> Case:
    """Each GARM binary on SQLite (the backend plays no part in what the provider does)."""
    return available_case(request.param)


@pytest.fixture
def provider_walk(
    machine: ContainerMachine,
    sqlite_case: Case,
    garm_tarballs: GarmTarballs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[ProviderWalk]:
    """The leader about to be installed: GARM and the real provider attached, a fake cloud."""
    provider = require_provider_binary()
    tarball = build_tarball(
        "garm-provider-openstack",
        provider.read_bytes(),
        tmp_path / "garm-provider-openstack-linux-amd64.tgz",
    )
    cloud_init = CloudInit()
    with (
        FakeGitHub() as github,
        FakeOpenStack(Cloud("runners", OPENSTACK_PASSWORD), boot=cloud_init) as cloud,
    ):
        walk = _walk(machine, github, sqlite_case, garm_tarballs, tarball, monkeypatch)
        yield ProviderWalk(walk, cloud, cloud_init)


def _walk(
    machine: ContainerMachine,
    github: FakeGitHub,
    case: Case,
    garm_tarballs: GarmTarballs,
    provider_tarball: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Walk:
    # The model's proxy is a sink on loopback (see test_garm_machine); loopback is never proxied.
    monkeypatch.setenv("JUJU_CHARM_HTTP_PROXY", github.url)
    monkeypatch.setenv("JUJU_CHARM_HTTPS_PROXY", github.url)
    monkeypatch.setenv("JUJU_CHARM_NO_PROXY", "10.0.0.0/8")
    port = _unused_port()
    state = testing.State(
        leader=True,
        config={
            "port": port,
            "external-url": f"http://127.0.0.1:{port}",
            "handover-grace": "2s",
            "drain-timeout": "10m",
        },
        resources={
            testing.Resource(name="garm-binary", path=garm_tarballs.of(case.version)),
            testing.Resource(name="garm-provider-openstack", path=provider_tarball),
        },
        secrets={
            testing.Secret(tracked_content={"password": OPENSTACK_PASSWORD, "app": "small"}),
            testing.Secret(tracked_content={"private-key": pkcs1_app_key(), "app": "small"}),
        },
    )
    return Walk(machine.hooks(), state, machine, github, port)


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_real_provider_runs_the_charms_runners_through_a_label_change(
    provider_walk: ProviderWalk,
):
    """Arrange: a leader with GARM and the real provider attached, a fake GitHub and OpenStack.

    Act: install, relate a configurator with every runner option, change its labels, remove it.
    Assert: the provider's runners come online; what it built is what the charm asked for; the
    old set's servers are deleted after the change, and every server by the end; nothing GARM
    printed and no user data holds a secret the test knows.
    """
    walk = provider_walk.walk
    install_and_bootstrap(walk)
    point_github_at_the_fake(walk)

    first = relate_configurator(provider_walk)
    provider_built_what_the_charm_asked_for(provider_walk, first)
    change_labels(provider_walk, first)
    remove_configurator(provider_walk)

    secrets = known_secrets(walk)
    assert_no_secret_in(walk.machine.journal() + "\n".join(walk.statuses), secrets)
    boots = provider_walk.cloud_init.boots.values()
    booted = [f"{boot.user_data}\n{boot.install_script}" for boot in boots]
    assert_no_secret_in("\n".join(booted), secrets)


# The steps -----------------------------------------------------------------------------------


def relate_configurator(provider_walk: ProviderWalk) -> ScaleSet:
    """The configurator's scale set gets its min-idle runner from the real provider, online."""
    walk = provider_walk.walk
    relation = testing.Relation(CONFIGURATOR_ENDPOINT, remote_app_name="small")
    walk.state = dataclasses.replace(walk.state, relations={*walk.state.relations, relation})

    provider_walk.publish(OLD_LABELS)

    (scaleset,) = walk.scalesets()
    assert scaleset.provider_name == PROVIDER
    wait_for_idle_runner(provider_walk, scaleset)
    return scaleset


def provider_built_what_the_charm_asked_for(
    provider_walk: ProviderWalk, scaleset: ScaleSet
) -> None:
    """The server has a config drive, the resources by name, the charm's boot steps in order.

    Its pool tag is the scale set's name and its entity's id, within Nova's 60 characters.

    The pre-install scripts run aproxy first, then the Docker Hub mirror, then the operator's;
    updates are off (a proxied set); the install script GARM serves the runner carries the
    charm's `.env` entries and job hook.
    """
    (instance,) = provider_walk.walk.client().list_scaleset_instances(scaleset.id)
    (server,) = [s for s in provider_walk.cloud.created_servers() if s.id == instance.provider_id]
    boot = provider_walk.cloud_init.boots[server.id]
    cloud = provider_walk.cloud
    options = runner_config(provider_walk.data(OLD_LABELS).runner)

    assert server.name == instance.name
    # GARM's pseudo pool ID is `<scale set name>-<entity id>`, tagged whole (garm-behaviour B46).
    pool_tag = f"garm-pool-id={scaleset.name}-{scaleset.entity_id}"
    assert pool_tag in server.tags
    assert len(pool_tag) <= 60
    assert server.request["config_drive"] is True
    assert server.request["flavorRef"] == cloud.flavors["m1.small"]["id"]
    assert server.request["imageRef"] == cloud.images["ubuntu-24.04"]["id"]
    assert server.request["networks"] == [{"uuid": cloud.networks["runners-net"]["id"]}]
    assert boot.user_data is not None
    expected = pre_install_scripts(options)
    assert boot.user_data.pre_install_scripts == [
        "00-garm-charm-aproxy",
        "01-garm-charm-dockerhub-mirror",
        "50-aa-first",
        "50-zz-last",
    ]
    for name, body in expected.items():
        assert boot.user_data.files[f"/garm-pre-install/{name}"] == body
    assert boot.user_data.document.get("package_upgrade") is False, "disable_updates honoured"
    assert install_block(options) in boot.install_script
    assert env_file_entries(boot.install_script) == {
        "DOCKERHUB_MIRROR": "https://mirror.internal:5000",
        "CONTAINER_REGISTRY_URL": "https://mirror.internal:5000",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
    }


def change_labels(provider_walk: ProviderWalk, first: ScaleSet) -> None:
    """The new set's runner comes online from the provider; the old set's servers go."""
    walk = provider_walk.walk
    old_servers = {i.provider_id for i in walk.client().list_scaleset_instances(first.id)}

    provider_walk.publish(NEW_LABELS)

    walk.update_status_until(
        lambda: first.name not in [scaleset.name for scaleset in walk.scalesets()],
        "the old generation deleted",
    )
    (current,) = walk.scalesets()
    assert current.normalised_labels == normalise_labels(NEW_LABELS)
    wait_for_idle_runner(provider_walk, current)
    servers = {server.id: server for server in provider_walk.cloud.created_servers()}
    assert old_servers
    assert all(servers[server].deleted for server in old_servers)
    (instance,) = walk.client().list_scaleset_instances(current.id)
    assert not servers[instance.provider_id].deleted, "the new runner's server, by the provider"
    assert [s.id for s in provider_walk.cloud.live_servers()] == [instance.provider_id]


def remove_configurator(provider_walk: ProviderWalk) -> None:
    """Removing the configurator deletes its scale set, its provider and every server."""
    walk = provider_walk.walk
    relation = next(r for r in walk.state.relations if r.endpoint == CONFIGURATOR_ENDPOINT)
    walk.hook(walk.ctx.on.relation_broken(relation))
    others = {r for r in walk.state.relations if r.endpoint != CONFIGURATOR_ENDPOINT}
    walk.state = dataclasses.replace(walk.state, relations=others)

    walk.update_status_until(lambda: walk.scalesets() == [], "the scale set deleted")
    walk.update_status_until(lambda: walk.client().list_providers() == [], "the provider released")
    created = provider_walk.cloud.created_servers()
    assert len(created) >= 2
    assert [server.name for server in created if not server.deleted] == []


def wait_for_idle_runner(provider_walk: ProviderWalk, scaleset: ScaleSet) -> None:
    """Run update-status until the scale set has one idle runner; fail naming a provider fault."""
    api = provider_walk.walk.client()

    def idle() -> bool:
        instances = api.list_scaleset_instances(scaleset.id)
        faults = [i.provider_fault.decode(errors="replace") for i in instances if i.provider_fault]
        if faults:
            pytest.fail(f"the real provider refused a runner of {scaleset.name}: {faults[0]}")
        return [(i.status, i.runner_status) for i in instances] == [("running", "idle")]

    provider_walk.walk.update_status_until(idle, f"a runner of {scaleset.name} created and idle")


def env_file_entries(install_script: str) -> dict[str, str]:
    """The entries the install script appends to the runner's `.env`, decoded."""
    found = re.search(r"echo (\S+) \| base64 -d >> \"\$RUN_HOME/\.env\"", install_script)
    assert found is not None, "the install script writes no .env entries"
    lines = base64.b64decode(found[1]).decode().splitlines()
    return dict(line.split("=", 1) for line in lines)
