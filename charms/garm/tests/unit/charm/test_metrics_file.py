"""The charm writes its per-scale-set metrics and serves them, through ops.testing (ADR 0030).

GARM is the simulator with one configurator (`small`) related, as in
test_charm_configurators.py; the exporter is the real one under a temporary root, driving the
fake systemctl (conftest's `charm_exporter`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import ops
import pytest
from ops import testing

import charm
from doubles.configurator_publication import pkcs1_app_key
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile.charm_metrics import MetricsState, ScalesetFacts
from relations import cos_agent
from relations.peers.keys import PAUSED_BY_KEY, PAUSED_SINCE_KEY
from unit.doubles.fake_systemctl import TickMachine
from unit.walks.configurators import configurator, garm_secrets, sim_now
from workload.exporter import UNIT, CharmExporter

LABELS = '{scaleset="small",application="small"}'


@pytest.fixture(autouse=True)
def recording_workload(workload: RecordingWorkload) -> RecordingWorkload:
    """The workload double in every test here: none touches this machine's GARM."""
    return workload


@pytest.fixture(scope="module")
def app_key() -> str:
    """A PKCS#1 key, as GitHub issues App keys."""
    return pkcs1_app_key()


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[GarmSim]:
    """A fresh GARM started with the provider the charm renders for `small`; its clock frozen."""
    with GarmSim(["openstack-small"], frozen_clock=True) as server:
        monkeypatch.setattr(charm, "utc_now", lambda: sim_now(server))
        yield server


def unit_state(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
    *,
    leader: bool = True,
    cos: bool = True,
    peers: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
) -> testing.State:
    """A unit with `small` related, COS related unless `cos=False`, peers' app data `peers`."""
    related = configurator(app_key)
    relations: set[testing.RelationBase] = {related.relation}
    if cos:
        relations.add(testing.Relation("cos-agent", remote_app_name="grafana-agent"))
    if peers is not None:
        relations.add(testing.PeerRelation("garm-peers", local_app_data=peers))
    return testing.State(
        leader=leader,
        resources=resources,
        config={"port": sim.port, "external-url": "https://garm.example.com", **(config or {})},
        relations=relations,
        secrets={*related.secrets, *garm_secrets()},
    )


def served(exporter: CharmExporter) -> str:
    """What the exporter serves (the metrics file), or "" without one."""
    path = exporter.paths.metrics_file
    return path.read_text() if path.exists() else ""


def test_the_leader_writes_the_pass_and_serves_it_with_a_second_scrape_job(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
    charm_exporter: CharmExporter,
    tick_machine: TickMachine,
):
    """Arrange: a leader with `small` related and COS related. Act: config-changed.

    Assert: the metrics file holds `small`'s series (outdated 0, not missing, min idle 1 with
    no window) and the pass's time; the exporter's unit is installed and started; the
    cos-agent data has the exporter's scrape job after GARM's.
    """
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(ctx.on.config_changed(), unit_state(sim, resources, app_key))

    text = served(charm_exporter)
    assert f"garm_charm_scaleset_outdated_runners{LABELS} 0\n" in text
    assert f"garm_charm_scaleset_missing_at_github{LABELS} 0\n" in text
    assert 'garm_charm_scaleset_min_idle_runners{scaleset="small",application="small",' in text
    assert 'window=""} 1\n' in text
    assert "garm_charm_paused 0\n" in text
    (stamp,) = re.findall(r"^garm_charm_last_reconcile_timestamp_seconds (\S+)$", text, re.M)
    assert float(stamp) == pytest.approx(sim_now(sim).timestamp(), abs=0.001)
    assert charm_exporter.paths.unit_file.exists()
    assert ["restart", UNIT] in tick_machine.systemctl.calls()
    (relation,) = out.get_relations("cos-agent")
    jobs = json.loads(relation.local_unit_data["config"])["metrics_scrape_jobs"]
    assert [job["job_name"] for job in jobs] == ["garm", "garm-charm"]


def test_the_stuck_counter_is_carried_from_the_kept_state(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
    charm_exporter: CharmExporter,
):
    """Arrange: an earlier hook kept `small` with 3 stuck runners removed, and `gone` with 2.

    Act: config-changed (a pass that removes none). Assert: `small` still counts 3; `gone`,
    no longer configured, is in neither the file nor the kept state.
    """
    kept = MetricsState(
        (
            ScalesetFacts("gone", "old", stuck_removed=2),
            ScalesetFacts("small", "small", 0, 0, False, 3),
        ),
        1.0,
    )
    charm_exporter.keep_state(kept.to_json())
    ctx = testing.Context(charm.GarmCharm)

    ctx.run(ctx.on.config_changed(), unit_state(sim, resources, app_key))

    assert f"garm_charm_scaleset_stuck_runners_removed_total{LABELS} 3\n" in served(charm_exporter)
    assert "gone" not in served(charm_exporter)
    state = MetricsState.from_json(charm_exporter.read_state())
    assert [(f.scaleset, f.stuck_removed) for f in state.scalesets] == [("small", 3)]


def test_while_paused_the_last_pass_stays_and_the_pause_gauge_says_so(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
    charm_exporter: CharmExporter,
):
    """Arrange: a pass written by an earlier hook at t=1000; then the operator paused.

    Act: update-status. Assert: paused 1; the timestamp and facts are the earlier pass's; the
    kept state is untouched (no pass ran, nothing was counted).
    """
    kept = MetricsState((ScalesetFacts("small", "small", outdated=2),), 1000.0)
    charm_exporter.keep_state(kept.to_json())
    ctx = testing.Context(charm.GarmCharm)
    pause = {PAUSED_SINCE_KEY: "2026-11-30T09:15:00+00:00", PAUSED_BY_KEY: "operator"}

    out = ctx.run(ctx.on.update_status(), unit_state(sim, resources, app_key, peers=pause))

    text = served(charm_exporter)
    assert isinstance(out.unit_status, ops.MaintenanceStatus)
    assert "garm_charm_paused 1\n" in text
    assert "garm_charm_last_reconcile_timestamp_seconds 1000\n" in text
    assert f"garm_charm_scaleset_outdated_runners{LABELS} 2\n" in text
    assert charm_exporter.read_state() == kept.to_json()


def test_a_pass_that_does_not_complete_leaves_the_last_timestamp(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
    charm_exporter: CharmExporter,
):
    """Arrange: a pass written at t=1000; GARM answers 500 to listing its scale sets.

    Act: update-status. Assert: the status is not Active (the pass did not complete); the
    timestamp is still 1000 (so the staleness alert can fire), paused 0.
    """
    charm_exporter.keep_state(MetricsState((), 1000.0).to_json())
    sim.fault(method="GET", path="/api/v1/scalesets", status=500, body='{"error": "boom"}')
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(ctx.on.update_status(), unit_state(sim, resources, app_key))

    assert not isinstance(out.unit_status, ops.ActiveStatus)
    text = served(charm_exporter)
    assert "garm_charm_last_reconcile_timestamp_seconds 1000\n" in text
    assert "garm_charm_paused 0\n" in text


@pytest.mark.parametrize(("leader", "cos"), [(False, True), (True, False)])
def test_without_leadership_or_cos_nothing_is_served(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
    charm_exporter: CharmExporter,
    tick_machine: TickMachine,
    leader: bool,
    cos: bool,
):
    """Arrange: the exporter installed and serving (an earlier leader hook with COS).

    Act: a hook on a unit that lost leadership, or on the leader with COS removed.
    Assert: the exporter is disabled and its unit and metrics file are gone.
    """
    ctx = testing.Context(charm.GarmCharm)
    ctx.run(ctx.on.config_changed(), unit_state(sim, resources, app_key))
    assert served(charm_exporter)

    ctx.run(ctx.on.update_status(), unit_state(sim, resources, app_key, leader=leader, cos=cos))

    assert ["disable", "--now", UNIT] in tick_machine.systemctl.calls()
    assert not charm_exporter.paths.unit_file.exists()
    assert served(charm_exporter) == ""


def test_a_systemd_failure_of_the_exporter_leaves_garms_reconcile_alone(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
    charm_exporter: CharmExporter,
    tick_machine: TickMachine,
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: systemctl fails to restart anything. Act: config-changed on the leader.

    Assert: the metrics file is written all the same, the status is GARM's, and the log
    says the metrics are not served yet.
    """
    tick_machine.systemctl.fail("restart")
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(
        ctx.on.config_changed(),
        unit_state(sim, resources, app_key, config={"reconcile-interval": "0"}),
    )

    assert out.unit_status == ops.ActiveStatus("'small': creating")
    assert "garm_charm_scaleset_outdated_runners" in served(charm_exporter)
    assert "charm metrics not served (retried at the next hook)" in caplog.text


def test_the_exporters_port_is_refused_for_garm(
    sim: GarmSim, resources: frozenset[testing.Resource], app_key: str
):
    """Arrange: `port` set to the exporter's port. Act: config-changed.

    Assert: Blocked naming `port` and why; nothing served.
    """
    ctx = testing.Context(charm.GarmCharm)

    out = ctx.run(
        ctx.on.config_changed(), unit_state(sim, resources, app_key, config={"port": 9998})
    )

    assert isinstance(out.unit_status, ops.BlockedStatus)
    assert "port" in out.unit_status.message
    assert "metrics exporter" in out.unit_status.message
    assert cos_agent.EXPORTER_JOB_NAME == "garm-charm"


def test_a_stuck_runner_the_charm_removes_is_counted_once_across_hooks(
    sim: GarmSim,
    resources: frozenset[testing.Resource],
    app_key: str,
    charm_exporter: CharmExporter,
):
    """Arrange: `small` served with its idle runner; the runner then errors (a provider fault).

    Act: 31 minutes later a hook (runner-stuck-timeout 30m), then another hook.
    Assert: the first removes the runner and the counter reads 1; the next, which removes
    nothing, still reads 1 (carried through the state file, not counted again).
    """
    ctx = testing.Context(charm.GarmCharm)
    config = {"handover-grace": "1s"}
    state = ctx.run(ctx.on.config_changed(), unit_state(sim, resources, app_key, config=config))
    sim.advance(120)
    state = ctx.run(ctx.on.update_status(), state)
    (runner,) = sim.instances()
    sim.set_provider_fault(runner.name, b"no valid host was found")
    sim.clock.advance(31 * 60)

    state = ctx.run(ctx.on.update_status(), state)
    after_removal = served(charm_exporter)
    ctx.run(ctx.on.update_status(), state)

    assert runner.name not in [instance.name for instance in sim.instances()]
    counted = f"garm_charm_scaleset_stuck_runners_removed_total{LABELS} 1\n"
    assert counted in after_removal
    assert counted in served(charm_exporter)
