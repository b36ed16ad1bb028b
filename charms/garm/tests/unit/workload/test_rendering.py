"""What GARM, garm-provider-openstack and systemd read, pinned where a looser test let a change by.

Written after a mutation run of `workload.rendering` (docs/reference/testing.md): each test
names the rendered detail a reader of the file depends on.
"""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import unit.walks.workload as workload_walks
from unit.walks.workload import JWT_SECRET, PASSPHRASE, config, provider
from workload.config import GarmConfig, PostgresConfig, ProxyConfig
from workload.host import Paths, WorkloadError
from workload.machine import Workload
from workload.rendering import render_clouds_yaml, render_config, render_environment, service_proxy

installed = workload_walks.installed
runner = workload_walks.runner
systemctl = workload_walks.systemctl

# --- Found by mutation testing (mutmut): exact rendered values ---
# (was test_rendering_exact.py)

POSTGRES = PostgresConfig("10.1.2.3", 5432, "relation_id_7", "pg-pass", "garm")


def rendered(config: GarmConfig, tmp_path: Path) -> dict[str, Any]:
    """config.toml as GARM parses it."""
    return tomllib.loads(render_config(config, Paths(tmp_path), {}))


@pytest.mark.parametrize("postgres", [None, POSTGRES], ids=["sqlite3", "postgresql"])
def test_the_database_passphrase_and_the_log_format_are_garms_keys(
    postgres: PostgresConfig | None, tmp_path: Path
):
    """Arrange: a config on SQLite or PostgreSQL. Act: render config.toml.

    Assert: `database.passphrase` holds the passphrase (GARM encrypts its secrets with it and
    refuses to start without it) on both backends; logging is `text` at the level asked.
    """
    config = GarmConfig(jwt_secret=JWT_SECRET, db_passphrase=PASSPHRASE, postgres=postgres)

    document = rendered(config, tmp_path)

    assert document["database"]["passphrase"] == PASSPHRASE
    assert document["logging"] == {"log_level": "info", "log_format": "text"}


def test_clouds_yaml_keeps_non_ascii_as_written_in_block_style_auth_first():
    """Arrange: a provider whose password is not ASCII. Act: render its clouds.yaml.

    Assert: the password is written as is (not escaped), the document in block style (no
    `{`), `auth` before `region_name` before `identity_api_version`, and it reads back equal.
    """
    openstack = dataclasses.replace(provider(), password="pässwörd-ü")

    text = render_clouds_yaml(openstack)

    assert "pässwörd-ü" in text
    assert "{" not in text
    assert text.index("auth:") < text.index("region_name:") < text.index("identity_api_version:")
    cloud = yaml.safe_load(text)["clouds"]["openstack-small"]
    assert cloud["auth"]["password"] == "pässwörd-ü"


def test_no_proxy_hosts_of_the_model_are_kept_one_by_one():
    """Arrange: the model's NO_PROXY with two hosts. Act: GARM's proxy variables.

    Assert: NO_PROXY holds each host, then loopback and the auth host, each once.
    """
    proxy = ProxyConfig("http://p:3128", "http://p:3128", "a.example, b.example,,a.example")

    variables = service_proxy(proxy, ["keystone.example"])

    hosts = variables["NO_PROXY"].split(",")
    assert hosts[:2] == ["a.example", "b.example"]
    assert hosts[-1] == "keystone.example"
    assert len(hosts) == len(set(hosts))


def test_the_environment_file_escapes_quotes_and_backslashes():
    """Arrange: a proxy URL holding a quote and a backslash. Act: render the EnvironmentFile.

    Assert: both escaped the way systemd unquotes them, in both spellings of the name.
    """
    text = render_environment({"HTTP_PROXY": 'http://u:p"w\\d@p:3128'})

    assert 'HTTP_PROXY="http://u:p\\"w\\\\d@p:3128"' in text
    assert 'http_proxy="http://u:p\\"w\\\\d@p:3128"' in text
    assert text.startswith("# Managed by the garm charm")


@pytest.mark.parametrize("char", ["\x7f", "\n", "\x1f"], ids=["DEL", "newline", "unit-sep"])
def test_a_control_character_in_a_proxy_value_is_refused(char: str):
    """Arrange: a proxy value with a control character. Act: render. Assert: WorkloadError."""
    with pytest.raises(WorkloadError, match="control character"):
        render_environment({"HTTP_PROXY": f"http://p:3128{char}"})


def test_a_space_in_a_proxy_value_is_not_a_control_character():
    """Arrange: a value with a space (quoted by the file). Act: render. Assert: written."""
    text = render_environment({"NO_PROXY": "a b"})

    assert 'NO_PROXY="a b"' in text


# --- Found by the coverage floors (hand-made mutants): the provider files at their edges ---
# (was test_workload_providers_edges.py)
# The provider files at their edges: none left, no region, a provider directory gone or planted.
#
# Through the real `Workload` rooted in a temporary directory (its systemctl faked), asserting
# on the files GARM and garm-provider-openstack read.


# The installed workload, its recording runner and the fake systemctl every test uses (none
# may reach the real systemd): test_workload's fixtures, shared rather than copied.


def test_the_last_provider_gone_leaves_no_provider_table_nor_its_files(installed: Workload):
    """Arrange: GARM ran with one provider. Act: apply a config with none.

    Assert: config.toml has no `provider` key (not an empty list), the provider's directory
    is removed, and no provider counts as rendered.
    """
    installed.apply(config())
    paths = installed.paths

    installed.apply(config(providers=()))

    document = tomllib.loads(paths.config.read_text())
    assert "provider" not in document
    assert not paths.provider_dir("openstack-small").exists()
    assert installed.rendered_provider_names() == frozenset()


def test_a_provider_without_a_region_has_no_region_in_its_clouds_yaml(installed: Workload):
    """Arrange: a provider whose region is unset. Act: apply.

    Assert: its clouds.yaml has no `region_name` (gophercloud then uses the cloud's only one);
    a provider with a region names it.
    """
    unset = dataclasses.replace(provider("no-region"), region_name="")

    installed.apply(config(providers=(unset, provider())))

    paths = installed.paths
    clouds = yaml.safe_load(paths.provider_clouds("no-region").read_text())
    named = yaml.safe_load(paths.provider_clouds("openstack-small").read_text())
    assert "region_name" not in clouds["clouds"]["no-region"]
    assert clouds["clouds"]["no-region"]["identity_api_version"] == "3"
    assert named["clouds"]["openstack-small"]["region_name"] == "RegionOne"


def test_a_removed_providers_directory_means_no_provider_rendered(installed: Workload):
    """Arrange: GARM ran with one provider; then the providers directory was removed by hand.

    Act: ask what is rendered; apply a config with no provider.
    Assert: nothing counts as rendered; the apply succeeds and renders no provider table.
    """
    installed.apply(config())
    shutil.rmtree(installed.paths.provider_dirs)

    rendered = installed.rendered_provider_names()
    installed.apply(config(providers=()))

    assert rendered == frozenset()
    assert "provider" not in tomllib.loads(installed.paths.config.read_text())


def test_a_planted_link_in_place_of_the_providers_directory_is_never_followed(
    installed: Workload, tmp_path: Path
):
    """Arrange: the providers directory replaced by a link to a directory outside the charm's.

    Act: apply a config with no provider (everything under it would be stale).
    Assert: nothing behind the link is removed.
    """
    outside = tmp_path / "outside"
    (outside / "precious").mkdir(parents=True)
    (outside / "precious" / "file").write_text("keep me")
    installed.apply(config())
    shutil.rmtree(installed.paths.provider_dirs)
    installed.paths.provider_dirs.symlink_to(outside)

    installed.apply(config(providers=()))

    assert (outside / "precious" / "file").read_text() == "keep me"
