"""A pass's specs made ready: validated, without duplicates, each with its first live name (pure).

`prepare` is the planner's first step (`plan`); `desired_create` is the create request a spec
makes, which `validate_spec` checks GARM would take.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from garm_api.models import ScaleSetCreate, normalise_labels
from scaleset_reconciler.naming import is_valid_logical_name, spec_generation
from scaleset_reconciler.naming import live_name as spec_live_name
from scaleset_reconciler.ownership import one_spec_per_name
from scaleset_reconciler.report import Phase, SpecReport
from scaleset_reconciler.settings import ReconcileSettings
from scaleset_reconciler.spec import ScalesetSpec

DEFAULT_RUNNER_GROUP = "Default"


@dataclasses.dataclass(frozen=True)
class SpecEntry:
    """A spec that passed validation, its generation (`naming.generation_key`) and first name."""

    spec: ScalesetSpec
    live_name: str
    generation: str


@dataclasses.dataclass
class Prepared:
    """The specs of one pass: valid entries, and reports for those that cannot be handled."""

    entries: list[SpecEntry]
    rejected: list[SpecReport]
    warnings: list[str]
    configured_names: frozenset[str]
    budget: int
    # Applications with a spec refused this pass: their scale sets are never orphans (ADR 0014).
    refused_applications: frozenset[str] = frozenset()


def prepare(specs: Sequence[ScalesetSpec], settings: ReconcileSettings) -> Prepared:
    """Validate specs, drop duplicates (the first wins) and compute their first live names.

    A name several applications publish is refused for all of them (`ownership`).
    """
    unique, warnings, contested = one_spec_per_name(specs)
    entries: list[SpecEntry] = []
    rejected: list[SpecReport] = list(contested)
    refused = {spec.application for spec in specs if spec.name in _names(contested)}
    for spec in unique:
        problems = validate_spec(spec, settings)
        if problems:
            refused.add(spec.application)
            rejected.append(
                SpecReport(
                    spec.name,
                    Phase.BLOCKED,
                    message="; ".join(problems),
                    status=f"invalid settings, fix them in its configurator: {problems[0]}",
                    errors=problems,
                )
            )
            continue
        live = spec_live_name(spec, settings.name_budget)
        entries.append(SpecEntry(spec, live, spec_generation(spec)))
    names = frozenset(spec.name for spec in specs)
    return Prepared(entries, rejected, warnings, names, settings.name_budget, frozenset(refused))


def _names(reports: Iterable[SpecReport]) -> set[str]:
    return {report.logical for report in reports}


def validate_spec(spec: ScalesetSpec, settings: ReconcileSettings) -> list[str]:
    """Return why GARM would refuse (or mishandle) `spec`, one message each; empty if valid."""
    problems: list[str] = []
    if not is_valid_logical_name(spec.name):
        problems.append("the name must be made of a-z, 0-9 and '-' (not at either end)")
    problems.extend(desired_create(spec, spec.name).validate())
    if not spec.entity.name.strip():
        problems.append("no repository or organization is set")
    try:
        if not problems:
            spec_live_name(spec, settings.name_budget)
    except ValueError as error:
        problems.append(str(error))
    return problems


def desired_create(spec: ScalesetSpec, name: str) -> ScaleSetCreate:
    """Return the create request for `spec` under `name` (the template id is resolved later)."""
    return ScaleSetCreate(
        name=name,
        provider_name=spec.provider_name,
        image=spec.image,
        flavor=spec.flavor,
        labels=tuple(sorted(normalise_labels(spec.labels))),
        max_runners=spec.max_runners,
        min_idle_runners=spec.min_idle_runners,
        os_type=spec.os_type,
        os_arch=spec.os_arch,
        enabled=True,
        runner_group=spec.runner_group or DEFAULT_RUNNER_GROUP,
        runner_bootstrap_timeout=spec.runner_bootstrap_timeout,
        extra_specs=dict(spec.extra_specs) or None,
    )
