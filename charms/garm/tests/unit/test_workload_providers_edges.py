"""The provider files at their edges: none left, no region, a provider directory gone or planted.

Through the real `Workload` rooted in a temporary directory (its systemctl faked), asserting
on the files GARM and garm-provider-openstack read.
"""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from pathlib import Path

import test_workload
import yaml
from test_workload import config, provider

from workload.machine import Workload

# The installed workload, its recording runner and the fake systemctl every test uses (none
# may reach the real systemd): test_workload's fixtures, shared rather than copied.
installed = test_workload.installed
runner = test_workload.runner
systemctl = test_workload.systemctl


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
