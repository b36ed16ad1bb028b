"""Deploy, relate and change labels on a real Juju model (needs a controller).

Environment:
- GARM_CHARM, GARM_CONFIGURATOR_CHARM: paths of packed charms (`charmcraft pack` output).
- GARM_RESOURCE, GARM_PROVIDER_RESOURCE: optional tarballs to attach; without them the charm
  downloads its pinned release, which needs egress.
- GARM_IT_CONFIGURATOR_CONFIG: optional path of a YAML file with real garm-configurator options
  (OpenStack and GitHub App); the relation and label-change tests skip without it.
"""

import os
import pathlib
from collections.abc import Iterator

import jubilant
import pytest
import yaml


def _required_path(variable: str) -> pathlib.Path:
    value = os.environ.get(variable)
    if not value:
        pytest.skip(f"{variable} is not set: pack the charm and point {variable} at it")
    return pathlib.Path(value)


@pytest.fixture(scope="module")
def juju() -> Iterator[jubilant.Juju]:
    """A temporary model, destroyed afterwards."""
    with jubilant.temp_model() as model:
        model.wait_timeout = 20 * 60
        yield model


@pytest.fixture(scope="module")
def garm(juju: jubilant.Juju) -> str:
    """The garm application, deployed and active."""
    resources = {
        name: os.environ[variable]
        for name, variable in (
            ("garm-binary", "GARM_RESOURCE"),
            ("garm-provider-openstack", "GARM_PROVIDER_RESOURCE"),
        )
        if os.environ.get(variable)
    }
    juju.deploy(_required_path("GARM_CHARM"), "garm", resources=resources or None)
    juju.wait(lambda status: jubilant.all_active(status, "garm"), error=jubilant.any_error)
    return "garm"


def test_garm_bootstraps_and_hands_out_credentials(juju: jubilant.Juju, garm: str):
    """Arrange: garm deployed. Act: run get-credentials. Assert: admin username and URL."""
    task = juju.run(f"{garm}/0", "get-credentials")

    assert task.results["username"]
    assert task.results["url"].startswith("http")


def test_label_change_is_rolled_out(juju: jubilant.Juju, garm: str):
    """Arrange: a configurator with real settings, related to garm.

    Act: change its labels. Assert: status names the changeover, then only the new generation
    is listed.
    """
    config_path = _required_path("GARM_IT_CONFIGURATOR_CONFIG")
    config = yaml.safe_load(config_path.read_text())
    juju.deploy(_required_path("GARM_CONFIGURATOR_CHARM"), "small", config=config)
    juju.integrate(garm, "small")
    juju.wait(jubilant.all_active, error=jubilant.any_error)
    before = juju.run(f"{garm}/0", "list-scalesets").results

    juju.config("small", {"labels": config["labels"] + ",it-changed"})
    juju.wait(lambda status: "labels changing" in status.apps[garm].app_status.message)
    juju.wait(
        lambda status: (
            jubilant.all_active(status)
            and "labels changing" not in status.apps[garm].app_status.message
        )
    )

    after = juju.run(f"{garm}/0", "list-scalesets").results
    assert after != before
