"""Fail when a module whose bug would lose a job, a runner, a secret or a scale set loses branches.

`tox -e unit` measures branch coverage (coverage.py, `[tool.coverage]` in pyproject.toml) over
the three test runs, writes it as JSON, and runs this script on it: every module below is held
to its floor of covered branches (docs/reference/testing.md): 95% each, as issue #21 asks.

Usage: python scripts/check_branch_coverage.py coverage.json
Set COVERAGE_FLOOR=0 to skip the check (a subset run: `tox -e unit -- -k name`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

TARGET = 95.0
# Module -> the least share of its branches the tests must take (percent).
FLOORS: dict[str, float] = {
    "charms/garm/src/scaleset_reconciler/plan.py": TARGET,
    "charms/garm/src/scaleset_reconciler/prepare.py": TARGET,
    "charms/garm/src/scaleset_reconciler/grouping.py": TARGET,
    "charms/garm/src/scaleset_reconciler/needs.py": TARGET,
    "charms/garm/src/scaleset_reconciler/live_update.py": TARGET,
    "charms/garm/src/scaleset_reconciler/retirement.py": TARGET,
    "charms/garm/src/scaleset_reconciler/executor.py": TARGET,
    "charms/garm/src/scaleset_reconciler/report.py": TARGET,
    "charms/garm/src/status_text/__init__.py": TARGET,
    "charms/garm/src/scaleset_reconciler/naming.py": TARGET,
    "charms/garm/src/scaleset_reconciler/marker.py": TARGET,
    "charms/garm/src/reconcile/github/runner_checks.py": TARGET,
    "charms/garm/src/reconcile/github/check.py": TARGET,
    "charms/garm/src/reconcile/github_cleanup.py": TARGET,
    "charms/garm/src/reconcile/metrics_token.py": TARGET,
    "charms/garm/src/reconcile/credential_rotation.py": TARGET,
    "charms/garm/src/relations/certificates.py": TARGET,
    "charms/garm/src/relations/peers/handover.py": TARGET,
    "charms/garm/src/workload/host.py": TARGET,
    "charms/garm/src/workload/rendering.py": TARGET,
    "charms/garm/src/relations/peers/lease.py": TARGET,
    "charms/garm/src/reconcile/github/http.py": TARGET,
    "charms/garm/src/reconcile/github/scalesets.py": TARGET,
    "charms/garm/src/reconcile/charm_metrics.py": TARGET,
    "charms/garm/src/scaleset_reconciler/ownership.py": TARGET,
    "charms/garm/src/scaleset_reconciler/refresh.py": TARGET,
    "charms/garm/src/workload/lease.py": TARGET,
    "charms/garm/src/workload/pending_password.py": TARGET,
    "charms/garm/src/workload/exporter.py": TARGET,
    "charms/garm/lib/charms/garm_configurator/v0/garm_configurator.py": TARGET,
    "charms/garm-configurator/src/configurator_config.py": TARGET,
}


def main(argv: list[str]) -> int:
    """Print each module's branch coverage against its floor; 1 when one is below."""
    if os.environ.get("COVERAGE_FLOOR", "") == "0":
        print("branch coverage floor: skipped (COVERAGE_FLOOR=0)")
        return 0
    report: dict[str, Any] = json.loads(Path(argv[1]).read_text())
    files: dict[str, Any] = report["files"]
    failures: list[str] = []
    for module, floor in FLOORS.items():
        summary = files.get(module, {}).get("summary")
        if summary is None:
            failures.append(f"{module}: not measured")
            continue
        share = branch_share(summary)
        verdict = "ok" if share >= floor else "BELOW"
        print(f"{share:6.1f}% branches (floor {floor:.0f}%) {verdict:5} {module}")
        if share < floor:
            failures.append(f"{module}: {share:.1f}% of branches, floor {floor:.0f}%")
    for failure in failures:
        print(f"branch coverage floor: {failure}", file=sys.stderr)
    return 1 if failures else 0


def branch_share(summary: dict[str, Any]) -> float:
    """Covered branches as a percentage (100 for a module without branches)."""
    branches = summary.get("num_branches", 0)
    if not branches:
        return 100.0
    return 100.0 * summary.get("covered_branches", 0) / branches


if __name__ == "__main__":
    sys.exit(main(sys.argv))
