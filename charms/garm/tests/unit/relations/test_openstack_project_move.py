"""A configurator moved to another OpenStack project keeps its scale set: no changeover.

docs/how-to/change-labels.md says so: the provider keeps its name and is rewritten in place.
"""

from __future__ import annotations

from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.configurator_publication import published_databag
from relations.configurators import desired_from
from scaleset_reconciler.naming import live_name
from workload.rendering import render_clouds_yaml

SECRETS = interface.ConfiguratorSecrets(openstack_password="pw", github_app_private_key="key")


def _publication(project: str) -> interface.GarmConfiguratorData:
    databag = published_databag(
        ("x64",), password_secret_id="secret:a", private_key_secret_id="secret:b"
    )
    data = interface.parse_app_data(databag)
    return data.model_copy(
        update={"openstack": data.openstack.model_copy(update={"project_name": project})}
    )


def test_another_project_rewrites_the_provider_and_keeps_the_scale_set():
    """Arrange: configurator `small` publishing project `ci`, then project `ci-2`.

    Act: build the spec and the provider from each publication.
    Assert: the same spec, so the same live name (no new generation); the same provider name,
    whose clouds.yaml now names the new project.
    """
    before, provider_before, _ = desired_from("small", _publication("ci"), SECRETS)
    after, provider_after, _ = desired_from("small", _publication("ci-2"), SECRETS)

    assert after == before
    assert live_name(after) == live_name(before)
    assert provider_after.name == provider_before.name == "openstack-small"
    assert "ci-2" in render_clouds_yaml(provider_after)
    assert "ci-2" not in render_clouds_yaml(provider_before)
