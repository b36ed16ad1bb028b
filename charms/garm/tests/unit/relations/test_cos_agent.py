"""The cos-agent unit data builder, on the charm's real rules and dashboard and on made-up ones."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cosl import DashboardPath40UID, JujuTopology, LZMABase64

from reconcile.charm_metrics import METRIC_NAMES
from relations import cos_agent

MODEL_UUID = "3f1c2a9e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"
TOPOLOGY = JujuTopology(
    model="runners", model_uuid=MODEL_UUID, application="garm", unit="garm/0", charm_name="garm"
)

# Metric names GARM exports (cloudbase/garm `metrics/` and `doc/monitoring.md`, v0.2.1 and
# later); `up` is Prometheus' own. Rules and dashboards may use no other.
KNOWN_METRICS = {
    "up",
    "garm_health",
    "garm_runner_status",
    "garm_runner_operations_total",
    "garm_runner_errors_total",
    "garm_github_operations_total",
    "garm_github_errors_total",
    "garm_github_rate_limit_limit",
    "garm_github_rate_limit_remaining",
    "garm_job_status",
    # Seen in v0.2.1's /metrics (tests/contract/test_targets_metrics.py's scale set).
    "garm_scaleset_min_idle_runners",
}
# And what the charm's own exporter serves (ADR 0030).
KNOWN_METRICS |= METRIC_NAMES
# Words in PromQL that are not metric names.
_PROMQL_WORDS = {"sum", "by", "rate", "increase", "max", "or", "vector", "and", "on"}
_PROMQL_WORDS |= {"unless", "time", "min_over_time", "max_over_time"}


def build(
    *, runs_garm: bool = True, port: int = 9997, sources: Any = None, tls: bool = False
) -> dict[str, Any]:
    """The decoded `config` value the builder returns for the charm's own sources."""
    data = cos_agent.build_unit_data(
        charm_name="garm",
        topology=TOPOLOGY,
        port=port,
        runs_garm=runs_garm,
        sources=sources or cos_agent.SOURCES,
        tls=tls,
    )
    assert list(data) == ["config"]
    return json.loads(data["config"])


def rules_of(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Every Prometheus rule in the published config."""
    return [rule for group in config["metrics_alert_rules"]["groups"] for rule in group["rules"]]


def dashboards_of(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The published dashboards, decompressed."""
    return [json.loads(LZMABase64.decompress(blob)) for blob in config["dashboards"]]


def metric_names(expression: str) -> set[str]:
    """Identifiers that PromQL reads as metric names (labels and strings removed)."""
    without_matchers = re.sub(r"\{[^}]*\}|\"[^\"]*\"", " ", expression)
    without_by = re.sub(r"\b(?:by|on)\s*\([^)]*\)", " ", without_matchers)
    without_ranges = re.sub(r"\[[^\]]*\]|\boffset\s+\w+", " ", without_by)
    words = set(re.findall(r"[a-zA-Z_][a-zA-Z0-9_]*", without_ranges))
    return words - _PROMQL_WORDS


def test_leader_publishes_a_scrape_job_for_garms_metrics():
    """Arrange: the unit runs GARM on port 9997. Act: build.

    Assert: GARM's job, localhost:9997, sending the token from the file the charm keeps it in;
    then the charm exporter's job, on loopback at its fixed port, with no credentials.
    """
    config = build(runs_garm=True, port=9997)

    assert config["metrics_scrape_jobs"] == [
        {
            "job_name": "garm",
            "metrics_path": "/metrics",
            "static_configs": [{"targets": ["localhost:9997"]}],
            "authorization": {"type": "Bearer", "credentials_file": "/etc/garm/metrics-token"},
        },
        {
            "job_name": "garm-charm",
            "metrics_path": "/metrics",
            "static_configs": [{"targets": ["127.0.0.1:9998"]}],
        },
    ]


def test_with_tls_the_scrape_is_https_verified_against_the_ca_file():
    """Arrange: GARM serves HTTPS. Act: build.

    Assert: the job scrapes https, verifies with GARM's CA by path, still sends the token file.
    """
    config = build(runs_garm=True, port=9997, tls=True)

    job, exporter_job = config["metrics_scrape_jobs"]
    assert "scheme" not in exporter_job, "the exporter serves plain HTTP on loopback"
    assert job["scheme"] == "https"
    assert job["tls_config"] == {"ca_file": "/etc/garm/ca.pem"}
    assert job["authorization"]["credentials_file"] == "/etc/garm/metrics-token"
    assert "credentials" not in job["authorization"], "never the token itself"


def test_standby_publishes_no_scrape_job_but_the_same_rules_and_dashboards():
    """Arrange: a unit that does not run GARM. Act: build for it and for the leader.

    Assert: no scrape job; rules and dashboards identical to the leader's.
    """
    standby = build(runs_garm=False)
    leader = build(runs_garm=True)

    assert standby["metrics_scrape_jobs"] == []
    assert standby["metrics_alert_rules"] == leader["metrics_alert_rules"]
    assert standby["dashboards"] == leader["dashboards"]


def test_alert_rules_carry_the_juju_topology():
    """Arrange: the charm's rules. Act: build. Assert: every rule has the topology labels."""
    rules = rules_of(build())

    assert {rule["alert"] for rule in rules} >= {"GarmTargetDown", "GarmRunnersInError"}
    for rule in rules:
        assert rule["labels"]["juju_model"] == "runners"
        assert rule["labels"]["juju_model_uuid"] == MODEL_UUID
        assert rule["labels"]["juju_application"] == "garm"


def test_target_down_fires_after_five_minutes():
    """Arrange: the charm's rules. Act: build. Assert: GarmTargetDown is `up < 1` for 5m."""
    (target_down,) = [rule for rule in rules_of(build()) if rule["alert"] == "GarmTargetDown"]

    assert target_down["expr"] == "up < 1"
    assert target_down["for"] == "5m"


def test_no_log_rules_no_slots():
    """Arrange: no Loki rules; GARM logs to the journal. Act: build.

    Assert: an empty rule file shape and no snap log slots.
    """
    config = build()

    assert config["log_alert_rules"] == {"groups": []}
    assert config["log_slots"] == []


def test_dashboards_decode_to_json_with_uid_and_charm_tag():
    """Arrange: the charm's dashboard. Act: build and decompress.

    Assert: the GARM dashboard, with the uid derived from its path and the `charm: garm` tag.
    """
    (dashboard,) = dashboards_of(build())

    assert dashboard["title"] == "GARM"
    assert dashboard["uid"] == DashboardPath40UID.generate(
        "garm", "src/grafana_dashboards/garm.json"
    )
    assert "charm: garm" in dashboard["tags"]
    assert dashboard["panels"]


def test_rules_and_dashboards_use_only_metrics_garm_or_the_charm_exports():
    """Arrange: the charm's rules and dashboard. Act: read every expression.

    Assert: each metric name is one GARM or the charm's exporter exports (or Prometheus' `up`).
    """
    config = build()
    expressions = [rule["expr"] for rule in rules_of(config)]
    expressions += [
        target["expr"]
        for dashboard in dashboards_of(config)
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])  # a row has none
    ]

    used = set().union(*(metric_names(expression) for expression in expressions))

    assert used <= KNOWN_METRICS, used - KNOWN_METRICS


def test_same_inputs_give_the_same_data():
    """Arrange: nothing changed. Act: build twice. Assert: byte-identical (no rewrite needed)."""
    first = cos_agent.build_unit_data(
        charm_name="garm", topology=TOPOLOGY, port=9997, runs_garm=True, sources=cos_agent.SOURCES
    )
    second = cos_agent.build_unit_data(
        charm_name="garm", topology=TOPOLOGY, port=9997, runs_garm=True, sources=cos_agent.SOURCES
    )

    assert first == second


def test_empty_directories_give_empty_shapes(tmp_path: Path):
    """Arrange: a charm root without rules or dashboards. Act: build.

    Assert: empty rule files, no dashboards.
    """
    config = build(sources=cos_agent.Sources.of_charm(tmp_path))

    assert config["metrics_alert_rules"] == {"groups": []}
    assert config["dashboards"] == []


def test_a_dashboard_that_is_not_an_object_is_refused(tmp_path: Path):
    """Arrange: a dashboard file holding a JSON list. Act: build. Assert: ValueError naming it."""
    sources = cos_agent.Sources.of_charm(tmp_path)
    sources.dashboards.mkdir(parents=True)
    (sources.dashboards / "broken.json").write_text("[1, 2]")

    with pytest.raises(ValueError, match=r"broken\.json"):
        build(sources=sources)


def test_importing_the_charm_does_not_load_cosl():
    """Arrange: a fresh interpreter. Act: import charm. Assert: cosl is not loaded."""
    src = Path(cos_agent.__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(src.parent / "lib")])}
    code = "import sys, charm; print('cosl' in sys.modules)"

    output = subprocess.run(
        [sys.executable, "-c", code], cwd=src, capture_output=True, text=True, check=True, env=env
    ).stdout

    assert output.strip() == "False"


def test_the_stuck_runner_alert_is_per_runner_and_spares_runners_with_a_job():
    """Arrange: the charm's rules. Act: build; read GarmRunnerStuck.

    Assert: it groups by the runner's name (the same runner, not "some runner creating"),
    excludes runners with a job (`active`), covers GARM's non-final states and waits longer
    than the charm's default `runner-stuck-timeout` (30m) so the charm's removal goes first.
    """
    (stuck,) = [rule for rule in rules_of(build()) if rule["alert"] == "GarmRunnerStuck"]

    expression = " ".join(stuck["expr"].split())
    assert expression.startswith("max by (name,")
    assert 'runner_status!="active"' in expression
    for state in ("pending_create", "creating", "pending_delete", "error", "installing"):
        assert state in expression
    assert stuck["for"] == "45m"
