"""Shared builders for the scale-set reconciler tests."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from doubles.memory_garm import MemoryGarm
from garm_api.models import EntityKind
from scaleset_reconciler import ReconcileReport, ReconcileSettings, reconcile
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import EntityRef, ScalesetSpec

REPO = EntityRef(EntityKind.REPOSITORY, "fake-org/fake-repo")
ORG = EntityRef(EntityKind.ORGANIZATION, "fake-org")
SETTINGS = ReconcileSettings(
    handover_grace=datetime.timedelta(seconds=60), drain_timeout=datetime.timedelta(hours=7)
)


def make_spec(
    name: str = "small", labels: Sequence[str] = ("x64", "linux"), **fields: Any
) -> ScalesetSpec:
    """A valid spec for the fake GARM's repository and `lxd` provider."""
    values: dict[str, Any] = {
        "name": name,
        "entity": REPO,
        "provider_name": "lxd",
        "labels": tuple(labels),
        "image": "ubuntu:22.04",
        "flavor": "small",
        "max_runners": 3,
    }
    values.update(fields)
    return ScalesetSpec(**values)


def run(
    garm: MemoryGarm,
    specs: Sequence[ScalesetSpec],
    *,
    sweep_orphans: bool = True,
    settings: ReconcileSettings = SETTINGS,
) -> ReconcileReport:
    """One reconcile pass at GARM's current time."""
    return reconcile(garm, specs, now=garm.now, settings=settings, sweep_orphans=sweep_orphans)


def converge(garm: MemoryGarm, specs: Sequence[ScalesetSpec], passes: int = 6) -> ReconcileReport:
    """Run passes with time passing (past the grace) until the report says converged."""
    report = run(garm, specs)
    for _ in range(passes):
        if report.converged:
            return report
        garm.advance(61)
        report = run(garm, specs)
    return report


NEW_LABELS = ("x64", "gpu")


def changeover_started(garm: MemoryGarm) -> tuple[str, str]:
    """Converge `small`, change its labels, run the creating pass; return (old, new) names."""
    converge(garm, [make_spec()])
    old = live_name(make_spec())
    run(garm, [make_spec(labels=NEW_LABELS)])
    return old, live_name(make_spec(labels=NEW_LABELS))
