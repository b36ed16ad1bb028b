"""Fixtures for the charm's state-transition tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from ops import testing

import charm
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from unit.doubles.fake_systemctl import TickMachine, install_fake_systemctl
from workload.exporter import CharmExporter, ExporterPaths
from workload.tick import ReconcileTick, TickPaths

# Under coverage's tracer (`tox -e unit`) or mutmut, on two shared cores, drawing examples is
# slower than hypothesis's health check allows; each test's own settings still bound its run.
settings.register_profile(
    "charm-unit", suppress_health_check=[HealthCheck.too_slow], deadline=None
)
settings.load_profile("charm-unit")


@pytest.fixture
def workload(monkeypatch: pytest.MonkeyPatch) -> RecordingWorkload:
    """The charm's workload, replaced by a recording double."""
    double = RecordingWorkload()
    monkeypatch.setattr(charm, "Workload", lambda: double)
    return double


@pytest.fixture
def garm() -> Iterator[GarmSim]:
    """A fresh GARM (before first-run): the simulator, on a loopback port of its own."""
    with GarmSim() as sim:
        yield sim


@pytest.fixture(autouse=True)
def tick_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TickMachine:
    """The charm's reconcile tick on a temporary root: no test ever touches the real systemd."""
    machine = TickMachine(
        ReconcileTick(TickPaths(tmp_path / "tick-root")),
        install_fake_systemctl(tmp_path / "tick-bin", monkeypatch),
    )
    monkeypatch.setattr(charm, "ReconcileTick", lambda: machine.tick)
    return machine


@pytest.fixture(autouse=True)
def charm_exporter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tick_machine: TickMachine
) -> CharmExporter:
    """The charm's metrics exporter on a temporary root, driving the tick's fake systemctl."""
    exporter = CharmExporter(ExporterPaths(tmp_path / "exporter-root"))
    monkeypatch.setattr(charm, "CharmExporter", lambda: exporter)
    return exporter


@pytest.fixture
def ctx(workload: RecordingWorkload) -> testing.Context[charm.GarmCharm]:
    """A context for the charm with its workload replaced."""
    return testing.Context(charm.GarmCharm)


@pytest.fixture
def resources(tmp_path: Path) -> frozenset[testing.Resource]:
    """Both resources attached."""
    garm_tgz = tmp_path / "garm-linux-amd64.tgz"
    provider_tgz = tmp_path / "garm-provider-openstack-linux-amd64.tgz"
    garm_tgz.write_bytes(b"garm tarball")
    provider_tgz.write_bytes(b"provider tarball")
    return frozenset(
        {
            testing.Resource(name="garm-binary", path=garm_tgz),
            testing.Resource(name="garm-provider-openstack", path=provider_tgz),
        }
    )


@pytest.fixture
def config(garm: GarmSim) -> dict[str, str | int]:
    """Charm config pointing GARM's port at the simulator."""
    return {"port": garm.port, "external-url": "https://garm.example.com"}


@pytest.fixture
def unused_port() -> int:
    """A loopback port with nothing listening."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
