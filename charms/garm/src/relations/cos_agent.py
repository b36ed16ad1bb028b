"""The `cos-agent` relation: what a grafana-agent or opentelemetry-collector subordinate reads.

The subordinate reads one key, `config`, from this unit's databag: a JSON object with the scrape
jobs, the Prometheus and Loki alert rules (Juju topology injected), the Grafana dashboards
(LZMA + base64) and the snap log slots. cosl does the topology, rule and dashboard encoding.

Only the leader runs GARM (docs/adr/0003-leader-runs-garm.md), so only the leader publishes
scrape jobs, GARM's and the charm's exporter's (ADR 0030): a standby's targets would be down
and fire `GarmTargetDown`. Every unit publishes the
same rules and dashboards, so leadership can move without COS losing them.

GARM logs to stdout, i.e. the journal of `garm.service`; the subordinate forwards the machine's
journal to Loki, so no log file or snap slot is published.

cosl is imported only when a cos-agent relation exists, so other hooks do not pay for it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from workload.exporter import EXPORTER_PORT
from workload.host import Paths

if TYPE_CHECKING:
    import ops
    from cosl import JujuTopology
    from cosl.types import QueryType

RELATION_NAME: Final = "cos-agent"
DATA_KEY: Final = "config"
JOB_NAME: Final = "garm"
# The charm's own per-scale-set metrics (docs/adr/0030-charm-metrics-exporter.md).
EXPORTER_JOB_NAME: Final = "garm-charm"
METRICS_PATH: Final = "/metrics"

_CHARM_ROOT: Final = Path(__file__).resolve().parents[2]
# Where the scrape finds the metrics token and GARM's CA on the machine.
MACHINE: Final = Paths(Path("/"))


@dataclasses.dataclass(frozen=True)
class Sources:
    """Where the charm keeps what it ships to COS.

    Attributes:
        charm_root: the charm's root; dashboard uids derive from paths relative to it.
        metrics_rules: directory of Prometheus alert rule files.
        log_rules: directory of Loki alert rule files.
        dashboards: directory of Grafana dashboards (`*.json`).
    """

    charm_root: Path
    metrics_rules: Path
    log_rules: Path
    dashboards: Path

    @classmethod
    def of_charm(cls, charm_root: Path) -> Sources:
        """The directories under the charm's `src/`."""
        src = charm_root / "src"
        return cls(
            charm_root=charm_root,
            metrics_rules=src / "prometheus_alert_rules",
            log_rules=src / "loki_alert_rules",
            dashboards=src / "grafana_dashboards",
        )


SOURCES: Final = Sources.of_charm(_CHARM_ROOT)


def publish(charm: ops.CharmBase, *, port: int, runs_garm: bool, tls: bool = False) -> None:
    """Write this unit's data into every cos-agent relation whose copy differs.

    Args:
        charm: the charm whose unit databags are written.
        port: GARM's API port, which also serves `/metrics`.
        runs_garm: whether this unit runs GARM (the leader).
        tls: whether GARM serves HTTPS (the `certificates` relation's certificate).

    Raises:
        ops.ModelError: a databag could not be written.
        OSError: a rule or dashboard file could not be read.
        ValueError: a dashboard is not a JSON object.
    """
    relations = charm.model.relations[RELATION_NAME]
    if not relations:
        return
    from cosl import JujuTopology  # noqa: PLC0415 (only hooks with the relation pay for cosl)

    data = build_unit_data(
        charm_name=charm.meta.name,
        topology=JujuTopology.from_charm(charm),
        port=port,
        runs_garm=runs_garm,
        sources=SOURCES,
        tls=tls,
    )
    for relation in relations:
        databag = relation.data[charm.unit]
        for key, value in data.items():
            if databag.get(key) != value:
                databag[key] = value


def build_unit_data(
    *,
    charm_name: str,
    topology: JujuTopology,
    port: int,
    runs_garm: bool,
    sources: Sources,
    tls: bool = False,
) -> dict[str, str]:
    """The unit databag content of a cos-agent relation.

    Args:
        charm_name: the charm's name, for dashboard uids and tags.
        topology: this unit's Juju topology, injected into the alert rules.
        port: GARM's API port, which also serves `/metrics`.
        runs_garm: whether this unit runs GARM; only then is a scrape job published.
        sources: where the rules and dashboards are.
        tls: whether GARM serves HTTPS.

    Returns:
        `{"config": <JSON>}`, serialised with sorted keys so an unchanged result compares equal.

    Raises:
        OSError: a rule or dashboard file could not be read.
        ValueError: a dashboard is not a JSON object.
    """
    config: dict[str, Any] = {
        "metrics_alert_rules": _alert_rules("promql", topology, sources.metrics_rules),
        "log_alert_rules": _alert_rules("logql", topology, sources.log_rules),
        "dashboards": _dashboards(charm_name, sources),
        "metrics_scrape_jobs": [scrape_job(port, tls=tls), exporter_scrape_job()]
        if runs_garm
        else [],
        "log_slots": [],
    }
    return {DATA_KEY: json.dumps(config, sort_keys=True)}


def scrape_job(port: int, *, tls: bool = False, paths: Paths = MACHINE) -> dict[str, Any]:
    """The Prometheus scrape config for GARM on this machine.

    `/metrics` answers only GARM's metrics token (garm-behaviour B28). The token stays on this
    machine: the job names the file the charm keeps it in, never the token, so no secret goes
    into relation data. With TLS the scrape verifies GARM against the certificate's CA, also by
    path; `localhost` is among the certificate's names.
    """
    job: dict[str, Any] = {
        "job_name": JOB_NAME,
        "metrics_path": METRICS_PATH,
        "static_configs": [{"targets": [f"localhost:{port}"]}],
        "authorization": {"type": "Bearer", "credentials_file": str(paths.metrics_token)},
    }
    if tls:
        job["scheme"] = "https"
        job["tls_config"] = {"ca_file": str(paths.tls_ca)}
    return job


def exporter_scrape_job(port: int = EXPORTER_PORT) -> dict[str, Any]:
    """The Prometheus scrape config for the charm's exporter on this machine.

    It listens on 127.0.0.1 only and serves no secret, so the job needs no credentials.
    """
    return {
        "job_name": EXPORTER_JOB_NAME,
        "metrics_path": METRICS_PATH,
        "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
    }


def _alert_rules(query_type: QueryType, topology: JujuTopology, directory: Path) -> dict[str, Any]:
    from cosl.rules import Rules  # noqa: PLC0415 (see publish)

    rules = Rules(query_type=query_type, topology=topology)
    rules.add_path(directory, recursive=True)
    # cosl returns {} without rules; the subordinate expects the rule file shape either way.
    return rules.as_dict() or {"groups": []}


def _dashboards(charm_name: str, sources: Sources) -> list[str]:
    from cosl import DashboardPath40UID, LZMABase64  # noqa: PLC0415 (see publish)

    encoded: list[str] = []
    for path in sorted(sources.dashboards.glob("*.json")):
        loaded: Any = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ValueError(f"dashboard {path.name} is not a JSON object")
        content = cast(dict[str, Any], loaded)
        relative = str(path.relative_to(sources.charm_root))
        content["uid"] = DashboardPath40UID.generate(charm_name, relative)
        content["tags"] = _with_charm_tag(content.get("tags"), charm_name)
        encoded.append(LZMABase64.compress(json.dumps(content, sort_keys=True)))
    return encoded


def _with_charm_tag(tags: Any, charm_name: str) -> list[str]:
    existing = [str(tag) for tag in cast(list[Any], tags)] if isinstance(tags, list) else []
    tag = f"charm: {charm_name}"
    return existing if tag in existing else [*existing, tag]
