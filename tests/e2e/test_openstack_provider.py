"""The real `garm-provider-openstack` against the fake OpenStack, run as GARM runs it.

No GARM here: each test runs the provider binary with the files the charm renders for it and
the bootstrap GARM would send for a scale set the charm asked for, so what the provider accepts,
refuses and builds is seen in a second. `test_garm_real_provider.py` puts the same provider
behind a real GARM.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.configurator_publication import pkcs1_app_key
from e2e.real_provider import publication, require_provider_binary, run_provider
from fake_openstack import Cloud, FakeOpenStack, UserData
from reconcile.runner_template import pre_install_scripts
from relations.configurators import desired_from, runner_config
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec
from workload.host import Paths
from workload.rendering import render_clouds_yaml, render_provider_config

PASSWORD = "direct-openstack-Pa55word"
CONTROLLER = "3f0c5b8e-6a2d-4c1e-9b7a-0d4e2f6a8c1b"
# The entity GARM serves the scale set for: its pseudo pool ID is `<name>-<entity id>` (B46).
ENTITY_ID = "c35919a8-8f26-4fc5-ba84-a7386cbd45c8"
INSTANCE = "garm-Sm4llRunner1"
# What GARM passes as `runner_install_template` (its wrapper), reduced to what the fake reads.
WRAPPER = (
    '#!/bin/bash\nCALLBACK_URL="{{ .CallbackURL }}"\nMETADATA_URL="{{ .MetadataURL }}"\n'
    'BEARER_TOKEN="{{ .CallbackToken }}"\n'
)
# GARM v0.2.1's wrapper as the provider writes it, without the token: 341 characters (measured
# in the user data of `test_garm_real_provider.py`'s runner).
GARM_WRAPPER_LENGTH = 341


@dataclasses.dataclass
class Provider:
    """The provider binary with the charm's files for one configurator, and its cloud."""

    binary: Path
    config_file: Path
    cloud: FakeOpenStack
    spec: ScalesetSpec
    data: interface.GarmConfiguratorData

    def spec_with(self, runner: dict[str, Any]) -> ScalesetSpec:
        """The scale set the charm makes of configurator `small` with these runner options."""
        data = publication(("linux", "x64"), auth_url=self.cloud.auth_url, runner=runner)
        secrets = interface.ConfiguratorSecrets(PASSWORD, pkcs1_app_key())
        spec, _, _ = desired_from("small", data, secrets)
        return spec

    @property
    def pool(self) -> str:
        """The pseudo pool ID GARM gives the scale set's runners: its live name, the entity."""
        return f"{live_name(self.spec)}-{ENTITY_ID}"

    def run(self, command: str, **kwargs: Any) -> Any:
        """Run one command for the scale set's pool; fail naming the provider's error."""
        result = run_provider(
            self.binary,
            command,
            self.config_file,
            controller_id=CONTROLLER,
            pool_id=self.pool,
            **kwargs,
        )
        assert result.returncode == 0, f"{command} failed: {result.stderr.strip()}"
        return json.loads(result.stdout) if result.stdout.strip() else None

    def bootstrap(
        self,
        extra_specs: dict[str, Any],
        *,
        token: str = "instance-token-of-this-runner",  # noqa: S107 - a stand-in
        ca_bundle: str | None = None,
        wrapper: str = WRAPPER,
    ) -> dict[str, Any]:
        """The bootstrap GARM sends to create one runner of the scale set."""
        return {
            "name": INSTANCE,
            "tools": [
                {
                    "os": "linux",
                    "architecture": "x64",
                    "filename": "actions-runner.tar.gz",
                    "download_url": "https://github.com/actions/runner/releases/actions-runner.tgz",
                }
            ],
            "repo_url": "https://github.com/acme",
            "callback-url": "http://127.0.0.1:9/api/v1/callbacks",
            "metadata-url": "http://127.0.0.1:9/api/v1/metadata",
            "instance-token": token,
            "ssh-keys": [],
            "extra_specs": {"runner_install_template": _b64(wrapper), **extra_specs},
            "ca-cert-bundle": _b64(ca_bundle) if ca_bundle is not None else None,
            "github-runner-group": self.spec.runner_group,
            "arch": self.spec.os_arch,
            "os_type": self.spec.os_type,
            "flavor": self.spec.flavor,
            "image": self.spec.image,
            "labels": list(self.spec.labels),
            "pool_id": self.pool,
            "user_data_options": {},
            "jit_config_enabled": True,
        }


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[Provider]:
    """The binary, the charm's files for configurator `small` (every runner option), a cloud."""
    binary = require_provider_binary()
    with FakeOpenStack(Cloud("runners", PASSWORD)) as cloud:
        data = publication(("linux", "x64"), auth_url=cloud.auth_url)
        secrets = interface.ConfiguratorSecrets(PASSWORD, pkcs1_app_key())
        spec, openstack, _ = desired_from("small", data, secrets)
        paths = Paths(tmp_path)
        paths.provider_dir(openstack.name).mkdir(parents=True)
        paths.provider_clouds(openstack.name).write_text(render_clouds_yaml(openstack))
        config_file = paths.provider_config(openstack.name)
        config_file.write_text(render_provider_config(openstack, paths))
        yield Provider(binary, config_file, cloud, spec, data)


def test_the_provider_builds_the_runner_the_charm_asked_for(provider: Provider):
    """Arrange: the charm's provider files and a scale set with every runner option.

    Act: CreateInstance with the scale set's `extra_specs`, as GARM sends them.
    Assert: the provider accepts them (a key it refuses fails here, naming its refusal); Nova
    got one server with a config drive, the flavor, image and network resolved by name, and
    user data running the pre-install scripts in the charm's order with updates off; neither
    the OpenStack password nor the App key is in the user data.
    """
    created = provider.run(
        "CreateInstance", bootstrap=provider.bootstrap(dict(provider.spec.extra_specs))
    )

    (server,) = provider.cloud.created_servers()
    cloud = provider.cloud
    assert created["provider_id"] == server.id
    assert created["status"] == "running"
    assert server.request["config_drive"] is True
    assert server.request["flavorRef"] == cloud.flavors["m1.small"]["id"]
    assert server.request["imageRef"] == cloud.images["ubuntu-24.04"]["id"]
    assert server.request["networks"] == [{"uuid": cloud.networks["runners-net"]["id"]}]
    assert set(server.tags) == {
        f"garm-pool-id={provider.pool}",
        f"garm-controller-id={CONTROLLER}",
    }
    assert max(len(tag) for tag in server.tags) <= 60
    user_data = UserData.parse(server.user_data)
    expected = pre_install_scripts(runner_config(provider.data.runner))
    assert user_data.pre_install_scripts == [
        "00-garm-charm-aproxy",
        "01-garm-charm-dockerhub-mirror",
        "50-aa-first",
        "50-zz-last",
    ]
    assert user_data.pre_install_scripts == list(expected)
    for name, body in expected.items():
        assert user_data.files[f"/garm-pre-install/{name}"] == body
    assert user_data.document.get("package_upgrade") is False, "disable_updates honoured"
    assert not user_data.document.get("packages")
    assert_no_secret(server.user_data, {"OpenStack password": PASSWORD})


def test_the_provider_refuses_an_extra_spec_it_does_not_know(provider: Provider):
    """Arrange: the charm's `extra_specs` with one key the provider's schema lacks.

    Act: CreateInstance.
    Assert: the provider fails naming the key (its JSON schema refuses additional
    properties), before Nova is asked for anything.
    """
    specs = {**provider.spec.extra_specs, "planted_key": True}

    result = run_provider(
        provider.binary,
        "CreateInstance",
        provider.config_file,
        controller_id=CONTROLLER,
        pool_id=provider.pool,
        bootstrap=provider.bootstrap(specs),
    )

    assert result.returncode != 0
    assert "Additional property planted_key is not allowed" in result.stderr
    assert provider.cloud.created_servers() == []
    assert provider.cloud.requests_to("GET", r"^/(compute|image|network)") == []


def test_the_provider_lists_stops_starts_and_deletes_its_servers(provider: Provider):
    """Arrange: one runner created by the provider.

    Act: ListInstances, GetInstance, StopInstance, StartInstance, DeleteInstance, ListInstances.
    Assert: the provider finds its server by its tags and name, Nova saw the stop, start and
    force-delete, and the server is gone from the list at the end.
    """
    provider.run("CreateInstance", bootstrap=provider.bootstrap(dict(provider.spec.extra_specs)))
    (server,) = provider.cloud.created_servers()

    listed = provider.run("ListInstances")
    got = provider.run("GetInstance", instance=INSTANCE)
    provider.run("StopInstance", instance=INSTANCE)
    stopped = provider.run("GetInstance", instance=INSTANCE)
    provider.run("StartInstance", instance=INSTANCE)
    provider.run("DeleteInstance", instance=INSTANCE)
    after = provider.run("ListInstances")

    assert [(i["name"], i["provider_id"]) for i in listed] == [(INSTANCE, server.id)]
    assert got["addresses"] == [{"address": "10.0.0.2", "type": "private"}]
    assert (got["os_name"], got["os_version"]) == ("ubuntu", "24.04")
    assert stopped["status"] == "stopped"
    actions = provider.cloud.requests_to("POST", rf"/servers/{server.id}/action$")
    assert [next(iter(a.body)) for a in actions] == ["os-stop", "os-start", "forceDelete"]
    assert server.deleted
    assert after == []
    tags = provider.cloud.requests_to("GET", r"/servers/detail$")[0].query["tags"]
    assert tags == [f"garm-pool-id={provider.pool},garm-controller-id={CONTROLLER}"]


def test_the_provider_stops_at_a_wrong_password(provider: Provider):
    """Arrange: Keystone knows another password than the charm's clouds.yaml holds.

    Act: ListInstances.
    Assert: the provider fails on authentication and asks Nova nothing.
    """
    provider.cloud.cloud = dataclasses.replace(provider.cloud.cloud, password="another")

    result = run_provider(
        provider.binary,
        "ListInstances",
        provider.config_file,
        controller_id=CONTROLLER,
        pool_id=provider.pool,
    )

    assert result.returncode != 0
    assert "401" in result.stderr or "Authentication failed" in result.stderr, result.stderr
    assert provider.cloud.requests_to("GET", r"^/compute") == []


def assert_no_secret(text: str, secrets: dict[str, str]) -> None:
    """No known secret appears in `text`."""
    leaked = [what for what, value in secrets.items() if value and value in text]
    assert leaked == [], f"secrets in the user data: {leaked}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# Nova's user data limit ---------------------------------------------------------------------

# What the longest runner options put in the user data, each at the relation library's bound.
LONGEST_URL = "http://" + "p" * 60 + "." + "q" * 60 + ".example:3128/" + "x" * 1900
LARGEST_RUNNER_OPTIONS: dict[str, Any] = {
    "http_proxy": LONGEST_URL[: interface.URL_MAX_LENGTH],
    "aproxy_exclude_addresses": [
        f"10.{i}.255.255/32" for i in range(interface.MAX_EXCLUDED_ADDRESSES)
    ],
    "aproxy_redirect_ports": ["65000-65535"] * interface.MAX_REDIRECT_PORTS,
    "dockerhub_mirror": LONGEST_URL[: interface.URL_MAX_LENGTH].replace(":3128", ":5000"),
    "otel_collector_endpoint": LONGEST_URL[: interface.URL_MAX_LENGTH],
    "pre_job_script": "x" * interface.MAX_SCRIPT_LENGTH,
}
# The CA bundle room the relation library's script budget leaves (docs/reference/garm-charm.md).
CA_BUNDLE_ROOM = 8192


def largest_scripts(total: int) -> dict[str, str]:
    """The most pre-install scripts, with the longest names, `total` characters in all."""
    count = interface.MAX_PRE_INSTALL_SCRIPTS
    names = [f"{i}{'n' * (interface.SCRIPT_NAME_MAX_LENGTH - 1)}" for i in range(count)]
    share = (total - sum(len(name) for name in names)) // count
    return {name: "e" * share for name in names}


def test_the_largest_user_data_the_charm_can_ask_for_fits_novas_limit(provider: Provider):
    """Arrange: every runner option at its bound, the scripts at their combined budget.

    Also a CA bundle of the room left for it and an instance token for the longest repository.
    Act: CreateInstance with the real provider (GARM's wrapper as long as v0.2.1's, and more).
    Assert: Nova (its own schema: user data at most 65,535 characters of base64) creates the
    server; the user data's size is printed.
    """
    runner = {
        **LARGEST_RUNNER_OPTIONS,
        "pre_install_scripts": largest_scripts(interface.PRE_INSTALL_SCRIPTS_TOTAL_MAX),
    }
    spec = provider.spec_with(runner)

    provider.run(
        "CreateInstance",
        bootstrap=provider.bootstrap(
            dict(spec.extra_specs),
            token=longest_token(),
            ca_bundle=ca_bundle(CA_BUNDLE_ROOM),
            wrapper=f"{WRAPPER}#{'w' * GARM_WRAPPER_LENGTH}\n",
        ),
    )

    (server,) = provider.cloud.created_servers()
    size = len(server.request["user_data"])
    print(f"largest user data: {size} characters of base64 (Nova's limit: 65535)")
    assert size <= 65535


def test_nova_refuses_the_scripts_the_library_allowed_before_its_budget(provider: Provider):
    """Arrange: eight pre-install scripts of 16,384 characters (allowed before the budget).

    Act: CreateInstance. Assert: the provider fails with Nova's own refusal of the user data,
    and no server is created: the budget is what keeps runners bootable.
    """
    scripts = {f"s{i}": "e" * interface.MAX_SCRIPT_LENGTH for i in range(8)}
    specs = {**provider.spec.extra_specs, "pre_install_scripts": _encoded_scripts(scripts)}

    result = run_provider(
        provider.binary,
        "CreateInstance",
        provider.config_file,
        controller_id=CONTROLLER,
        pool_id=provider.pool,
        bootstrap=provider.bootstrap(specs),
    )

    assert result.returncode != 0
    assert "user_data" in result.stderr, result.stderr
    assert "is too long" in result.stderr, result.stderr
    assert provider.cloud.created_servers() == []


def longest_token() -> str:
    """An instance token as GARM signs it (HS256), for the longest `owner/repo` there is."""
    claims = {
        "id": "56ccbf15-7e65-424a-840e-d6b9897b0a77",
        "name": "garm-ttsafc485rks",
        "provider_id": "",
        "scope": "repository",
        "entity": f"{'o' * 39}/{'r' * 100}",
        "create_attempt": 0,
        "forge_type": "github",
        "is_agent": False,
        "iss": "garm",
        "exp": 1796176679,
    }
    parts = [{"alg": "HS256", "typ": "JWT"}, claims]
    encoded = [_b64url(json.dumps(part, separators=(",", ":"))) for part in parts]
    return ".".join([*encoded, _b64url("s" * 32)])


def ca_bundle(size: int) -> str:
    """Self-signed certificates, PEM, concatenated up to `size` characters."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pems: list[str] = []
    while len("".join(pems)) + 1300 <= size:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"ca-{len(pems)}")])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(len(pems) + 1)
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256())
        )
        pems.append(certificate.public_bytes(serialization.Encoding.PEM).decode())
    return "".join(pems)


def _encoded_scripts(scripts: dict[str, str]) -> dict[str, str]:
    """Pre-install scripts as `extra_specs` carry them: base64 bodies (B24, O4)."""
    return {name: _b64(body) for name, body in scripts.items()}


def _b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
