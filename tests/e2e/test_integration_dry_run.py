"""The integration scenario's dry run: `tests/integration/scenario.py` on the e2e machine.

The same steps, waits, phases and assertions as `tests/integration/test_deploy.py` runs on a
Juju model, driven through `MachineModel` instead of jubilant: garm's hooks through
`ops.testing`, a real GARM (v0.2.1, the release the charm installs), the integration suite's
fake provider with its stand-in runners, and the fake GitHub. It takes about 40 s.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.conftest import V021
from e2e.conftest import GarmTarballs
from e2e.container_machine import ContainerMachine
from e2e.machine_model import MachineModel
from fake_github import FakeGitHub
from integration import scenario

# The e2e machine answers within seconds and runs a hook a second; the hand-over grace is
# short so the dry run stays cheap (the Juju suite's 20 s only spans its 10 s hook cadence).
# A missing runner blocks garm after a minute, which fails the changeover step at once.
PACE = scenario.Pace(
    deploy=90, relate=120, changeover=240, handover_grace="2s", handover_timeout="1m"
)


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """The fake GitHub on loopback; the model's proxy a sink there, so GARM resolves no name."""
    with FakeGitHub() as fake:
        monkeypatch.setenv("JUJU_CHARM_HTTP_PROXY", fake.url)
        monkeypatch.setenv("JUJU_CHARM_HTTPS_PROXY", fake.url)
        monkeypatch.setenv("JUJU_CHARM_NO_PROXY", "10.0.0.0/8")
        yield fake


@pytest.fixture
def model(
    machine: ContainerMachine,
    garm_tarballs: GarmTarballs,
    tmp_path: Path,
) -> MachineModel:
    """The scenario's model on the e2e machine, with GARM v0.2.1 as the `garm-binary`."""
    directory = tmp_path / "model"
    directory.mkdir()
    return MachineModel(machine, garm_tarballs.of(V021), directory, _unused_port())


def test_integration_scenario_on_the_e2e_machine(model: MachineModel, github: FakeGitHub):
    """Arrange: garm deployed on the machine, GARM pointed at the fake GitHub.

    Act: the integration scenario: credentials, a configurator related, its labels changed.
    Assert: the scenario's own assertions (one new generation with the new labels; the
    phases in order in garm's status history).
    """
    scenario.deploy_garm(model, PACE)
    with model.reach(github):
        scenario.point_garm_at(model, github.url)
        scenario.credentials_are_handed_out(model)
        before = scenario.relate_configurator(model, PACE)

        scenario.change_labels(model, github, before, PACE)


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
