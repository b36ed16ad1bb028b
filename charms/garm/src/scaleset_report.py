"""What a scale-set reconcile pass found and did, and the short `juju status` text for it."""

from __future__ import annotations

import dataclasses
import enum


class Phase(enum.StrEnum):
    """Where one spec stands in its changeover (DESIGN §4), or why it was not handled."""

    CREATING = "creating"
    HANDING_OVER = "handing_over"
    DRAINING = "draining"
    FORCING = "forcing"
    DELETING = "deleting"
    ACTIVE = "active"
    BLOCKED = "blocked"
    SKIPPED = "skipped"
    ERROR = "error"


# Phases in which the spec is mid-changeover and `juju status` names it.
CHANGEOVER_PHASES = frozenset(
    {Phase.CREATING, Phase.HANDING_OVER, Phase.DRAINING, Phase.FORCING, Phase.DELETING}
)


@dataclasses.dataclass
class PredecessorReport:
    """One older generation of a spec (or one orphan) and how its retirement goes."""

    name: str
    scaleset_id: int
    phase: Phase
    runners: int | None = None
    seconds_left: float | None = None
    forced: int = 0
    delete_failures: int = 0


@dataclasses.dataclass
class SpecReport:
    """The outcome of one pass for one spec."""

    logical: str
    phase: Phase
    live_name: str = ""
    labels_changing: bool = False
    predecessors: list[PredecessorReport] = dataclasses.field(
        default_factory=list[PredecessorReport]
    )
    seconds_left: float | None = None
    jobs_stopped: int = 0
    message: str = ""
    errors: list[str] = dataclasses.field(default_factory=list[str])
    warnings: list[str] = dataclasses.field(default_factory=list[str])

    @property
    def draining_runners(self) -> int:
        """Runners still on retired predecessors."""
        return sum(p.runners or 0 for p in self.predecessors)


@dataclasses.dataclass
class ReconcileReport:
    """The outcome of one pass: per spec, the orphan sweep, and what went wrong overall."""

    specs: list[SpecReport] = dataclasses.field(default_factory=list[SpecReport])
    orphans: list[PredecessorReport] = dataclasses.field(default_factory=list[PredecessorReport])
    orphans_kept: list[str] = dataclasses.field(default_factory=list[str])
    errors: list[str] = dataclasses.field(default_factory=list[str])
    warnings: list[str] = dataclasses.field(default_factory=list[str])
    requests: int = 0
    writes: int = 0
    # Every scale set GARM holds after the pass (hand-made ones too), counted per provider name:
    # a removed configurator's provider stays until no scale set uses it.
    provider_scalesets: dict[str, int] = dataclasses.field(default_factory=dict[str, int])

    @property
    def converged(self) -> bool:
        """Whether every spec is active with nothing left to retire, and no orphans remain."""
        return (
            all(spec.phase is Phase.ACTIVE and not spec.predecessors for spec in self.specs)
            and not self.orphans
            and not self.errors
        )

    def spec(self, logical: str) -> SpecReport:
        """Return the report of the spec named `logical`.

        Raises:
            KeyError: no spec has that name.
        """
        for spec in self.specs:
            if spec.logical == logical:
                return spec
        raise KeyError(logical)

    def all_errors(self) -> list[str]:
        """Every error of the pass, per spec and overall, for the log."""
        errors = [f"{spec.logical!r}: {error}" for spec in self.specs for error in spec.errors]
        return errors + self.errors


def status_message(report: ReconcileReport, limit: int = 2) -> str:
    """Return the short `juju status` text naming changeovers (DESIGN §5), or "".

    At most `limit` specs are named, then `+N more`; several predecessors of one spec are one
    entry. Force-removed runners are named with their jobs, since those jobs are stopped.
    """
    entries: list[str] = []
    failed = [spec.logical for spec in report.specs if spec.phase is Phase.ERROR]
    if failed or report.errors:
        entries.append(f"GARM refused changes to {_names(failed) or 'scale sets'} (see the log)")
    entries += [_changeover_text(spec) for spec in report.specs if spec.phase in CHANGEOVER_PHASES]
    if report.orphans:
        entries.append(_orphans_text(report.orphans))
    text = ", ".join(entries[:limit])
    if len(entries) > limit:
        text += f", +{len(entries) - limit} more"
    return text


def blocked_message(report: ReconcileReport, limit: int = 2) -> str:
    """Return the text for a Blocked status when the operator must act, or ""."""
    entries = [
        f"{spec.logical!r}: {spec.message}" for spec in report.specs if spec.phase is Phase.BLOCKED
    ]
    text = "; ".join(entries[:limit])
    if len(entries) > limit:
        text += f"; +{len(entries) - limit} more"
    return text


def _changeover_text(spec: SpecReport) -> str:
    if not spec.predecessors:
        return f"{spec.logical!r}: {_phase_text(spec)}"
    what = "labels changing" if spec.labels_changing else "changing over"
    return f"{spec.logical!r} {what}: {_phase_text(spec)}"


def _phase_text(spec: SpecReport) -> str:
    runners = spec.draining_runners
    if spec.phase is Phase.CREATING:
        return "starting new scale set" if spec.predecessors else "creating"
    if spec.phase is Phase.HANDING_OVER:
        return "handing over"
    if spec.phase is Phase.FORCING:
        stopping = spec.jobs_stopped or runners
        jobs = "its job" if stopping == 1 else "their jobs"
        return f"drain deadline passed, stopping {_runners(stopping)} and {jobs}"
    if spec.phase is Phase.DRAINING:
        return f"draining {_runners(runners)}"
    return "deleting old scale set"


def _orphans_text(orphans: list[PredecessorReport]) -> str:
    runners = sum(orphan.runners or 0 for orphan in orphans)
    noun = "scale set" if len(orphans) == 1 else "scale sets"
    text = f"removing {len(orphans)} unconfigured {noun}"
    return f"{text} ({_runners(runners)} draining)" if runners else text


def _names(names: list[str]) -> str:
    return ", ".join(repr(name) for name in names)


def _runners(count: int) -> str:
    return f"{count} runner" if count == 1 else f"{count} runners"
