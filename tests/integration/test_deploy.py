"""Deploy garm and a configurator on a real Juju model and change a scale set's labels.

Needs a Juju 3.6 controller with a machine cloud (LXD is enough) whose machines the test host
can SSH to (`docs/how-to/test-against-a-real-garm.md` sets one up with concierge). GitHub and
OpenStack are fakes served from the test host (see `fake_services`), so no credentials are
needed. The scenario itself is `scenario.py`, which `tests/e2e/test_integration_dry_run.py`
also runs without Juju.

Environment (passed through by `tox -e integration`):
- GARM_CHARM, GARM_CONFIGURATOR_CHARM: the packed charms (`charmcraft pack` in each charm
  directory); the tests skip without them.
- GARM_BINARY: optional path of a `garm` executable; the test attaches it as the `garm-binary`
  tarball. Without it the charm downloads the pinned GARM release (needs egress).
- GARM_RESOURCE: optional ready `garm-linux-<arch>.tgz` instead of GARM_BINARY.
- INTEGRATION_LOG_DIR: where a failed run leaves the model's debug-log, status and garm's
  status history, captured before the model is destroyed (default: `integration-logs/` in
  the working directory).
The `garm-provider-openstack` resource is always the fake provider, built by the test.
"""

from __future__ import annotations

import os
import pathlib
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator

import jubilant
import pytest

from fake_github import FakeGitHub
from integration import scenario
from integration.fake_services import fake_provider_executable, tarball
from integration.juju_model import JujuModel, capture_logs

CA = "self-signed-certificates"
CA_CHANNEL = "1/stable"
# Sized to LXD on a CI runner (see scenario.Pace): a machine and GARM's download take minutes;
# the changeover is bounded by the 5-minute hand-over and drain timeouts garm is deployed with.
PACE = scenario.Pace(deploy=20 * 60, relate=15 * 60, changeover=12 * 60, handover_grace="20s")
TLS_TIMEOUT = 10 * 60
LOG_DIR = "integration-logs"


def _required_path(variable: str) -> pathlib.Path:
    value = os.environ.get(variable)
    if not value:
        pytest.skip(f"{variable} is not set: pack the charm and point {variable} at it")
    return pathlib.Path(value)


@pytest.fixture(scope="module")
def juju(request: pytest.FixtureRequest) -> Iterator[jubilant.Juju]:
    """A temporary model with frequent update-status hooks; its logs kept if a test failed.

    The logs are captured here, before the model is destroyed: a later workflow step would
    find no model left to ask.
    """
    with jubilant.temp_model(config={"update-status-hook-interval": "10s"}) as model:
        model.wait_timeout = PACE.deploy
        failed_before = request.session.testsfailed
        yield model
        if request.session.testsfailed > failed_before:
            capture_logs(model, pathlib.Path(os.environ.get("INTEGRATION_LOG_DIR", LOG_DIR)))


@pytest.fixture(scope="module")
def resources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The resource files: the fake provider always, GARM when given."""
    directory = tmp_path_factory.mktemp("resources")
    files = {
        "garm-provider-openstack": str(
            tarball(directory, "garm-provider-openstack", fake_provider_executable())
        )
    }
    if os.environ.get("GARM_RESOURCE"):
        files["garm-binary"] = os.environ["GARM_RESOURCE"]
    elif os.environ.get("GARM_BINARY"):
        binary = pathlib.Path(os.environ["GARM_BINARY"]).read_bytes()
        files["garm-binary"] = str(tarball(directory, "garm", binary))
    return files


@pytest.fixture(scope="module")
def charms() -> tuple[pathlib.Path, pathlib.Path]:
    """The packed garm and garm-configurator charms; without them the tests skip, saying why."""
    return _required_path("GARM_CHARM"), _required_path("GARM_CONFIGURATOR_CHARM")


@pytest.fixture(scope="module")
def model(
    charms: tuple[pathlib.Path, pathlib.Path], juju: jubilant.Juju, resources: dict[str, str]
) -> JujuModel:
    """The scenario's model: garm deployed with its resources and active.

    `charms` comes first: without them no model is created only to be skipped.
    """
    juju_model = JujuModel(juju, *charms, resources)
    scenario.deploy_garm(juju_model, PACE)
    return juju_model


@pytest.fixture(scope="module")
def github(model: JujuModel) -> Iterator[FakeGitHub]:
    """The fake GitHub, reachable from the garm unit, and GARM's endpoint pointing at it."""
    with FakeGitHub() as fake, model.reach(fake):
        scenario.point_garm_at(model, fake.url)
        yield fake


def test_garm_bootstraps_and_hands_out_credentials(model: JujuModel):
    """Arrange: garm deployed. Act: run get-credentials. Assert: admin username and URL."""
    scenario.credentials_are_handed_out(model)


def test_label_change_leaves_one_generation_with_the_new_labels(
    model: JujuModel, github: FakeGitHub
):
    """Arrange: a configurator related to garm, its scale set serving, a runner idle.

    Act: change its labels. Assert: garm's status history shows the changeover's phases in
    order, and exactly one generation remains, a new one, with the new labels.
    """
    before = scenario.relate_configurator(model, PACE)

    scenario.change_labels(model, github, before, PACE)


def test_certificates_relation_serves_https_and_removal_goes_back(
    model: JujuModel, juju: jubilant.Juju
):
    """Arrange: garm active on HTTP; a self-signed-certificates CA deployed.

    Act: relate garm:certificates to it, then remove the relation.
    Assert: with the relation, get-credentials gives an https:// URL whose certificate the CA
    verifies and GARM's /metrics answers 401 without its token; without it, http:// again.
    """
    garm = scenario.GARM
    juju.deploy(CA, CA, channel=CA_CHANNEL)
    juju.integrate(f"{garm}:certificates", CA)
    juju.wait(
        lambda status: jubilant.all_active(status) and _url(model).startswith("https://"),
        error=jubilant.any_error,
        timeout=TLS_TIMEOUT,
    )
    ca = juju.run(f"{CA}/0", "get-ca-certificate").results["ca-certificate"]

    url = _url(model)
    assert _status_of(f"{url.rstrip('/')}/metrics", ssl.create_default_context(cadata=ca)) == 401

    juju.remove_relation(f"{garm}:certificates", CA)
    juju.wait(
        lambda status: jubilant.all_active(status, garm) and _url(model).startswith("http://"),
        error=jubilant.any_error,
        timeout=TLS_TIMEOUT,
    )
    assert _status_of(f"{_url(model).rstrip('/')}/metrics", None) == 401


def _url(model: JujuModel) -> str:
    """The URL the get-credentials action gives (https:// while GARM serves TLS)."""
    return model.run_action("get-credentials")["url"]


def _status_of(url: str, context: ssl.SSLContext | None) -> int:
    """The HTTP status GARM answers a GET without a token with, its certificate verified."""
    try:
        with urllib.request.urlopen(url, timeout=30, context=context) as answer:  # noqa: S310
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code
