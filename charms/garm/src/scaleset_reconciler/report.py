"""What a scale-set reconcile pass found and did, and the short `juju status` text for it.

Every text meant for `juju status` is at most `status_text.STATUS_LIMIT` characters, worded with
`status_text` (names shortened, entries that do not fit counted as `+N more`); details go to
the log and to the list-scalesets action.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Sequence

from garm_api.models import ScaleSet
from status_text import clock_time, fit, short_name


class Phase(enum.StrEnum):
    """Where one spec stands in its changeover, or why it was not handled.

    The phases are those of docs/explanation/scaleset-changeover.md.
    """

    CREATING = "creating"
    HANDING_OVER = "handing_over"
    DRAINING = "draining"
    FORCING = "forcing"
    DELETING = "deleting"
    # Idle runners made before an in-place change are being replaced (ADR 0022).
    REFRESHING = "refreshing"
    # The changeover waits for the surge budget; its old scale set serves on (ADR 0038).
    QUEUED = "queued"
    ACTIVE = "active"
    BLOCKED = "blocked"
    SKIPPED = "skipped"
    ERROR = "error"


# Deletes GARM answered but did not carry out (garm-behaviour B15) before the operator must look.
REPEATED_DELETE_FAILURES = 3
# Phases in which the spec is mid-changeover and `juju status` names it.
CHANGEOVER_PHASES = frozenset(
    {
        Phase.CREATING,
        Phase.HANDING_OVER,
        Phase.DRAINING,
        Phase.FORCING,
        Phase.DELETING,
        Phase.REFRESHING,
        Phase.QUEUED,
    }
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
    delete_retry_at: datetime.datetime | None = None
    deadline: datetime.datetime | None = None
    # GitHub answered that it no longer has this scale set (ADR 0029).
    missing_at_github: bool = False


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
    deadline: datetime.datetime | None = None
    # Until the new scale set has served for the hand-over grace (None: not waiting for it).
    serves_in: float | None = None
    # Past the grace, waiting for a runner of the new scale set to come online, until then.
    awaiting_runner_until: datetime.datetime | None = None
    # GitHub dropped labels of the live scale set: when the next attempt is made.
    relabel_at: datetime.datetime | None = None
    # Names GitHub still holds a scale set of (create answered 409), so another name was used.
    leftovers: list[str] = dataclasses.field(default_factory=list[str])
    jobs_stopped: int = 0
    # Rolling refresh (ADR 0022): whether one runs; the live set's runners made before it
    # without a job (`outdated_runners`, those it replaces) and with one (`busy_...`).
    refreshing: bool = False
    outdated_runners: int = 0
    busy_outdated_runners: int = 0
    # Stuck runners of the live set (ADR 0023): removed this pass, and those GARM keeps.
    stuck_removed: int = 0
    stuck_unremovable: int = 0
    # GitHub answered that it no longer has the live scale set (ADR 0029): a new attempt is made.
    missing_at_github: bool = False
    # Its place in the queue of changeovers waiting for the surge budget (1: next; ADR 0038).
    queue_position: int | None = None
    message: str = ""
    # The Blocked text for `juju status` when `message` is too long for it.
    status: str = ""
    errors: list[str] = dataclasses.field(default_factory=list[str])
    warnings: list[str] = dataclasses.field(default_factory=list[str])

    @property
    def draining_runners(self) -> int:
        """Runners still on retired predecessors."""
        return sum(p.runners or 0 for p in self.predecessors)


@dataclasses.dataclass(frozen=True)
class Failure:
    """A call GARM refused or failed during the pass, as `juju status` names it.

    Attributes:
        owner: the logical name of the spec, or the name of an unconfigured scale set.
        call: what was asked, as a verb phrase: "create", "update", "delete", "remove a runner
            of".
        status: GARM's HTTP status; None when the charm did not send the request (GARM would
            have refused it late, e.g. a missing template).
        retry: whether the next pass is expected to get past it by itself (Waiting), or the
            operator must look (Blocked).
    """

    owner: str
    call: str
    status: int | None = None
    retry: bool = False

    def text(self) -> str:
        """The status text: what GARM did to which scale set, and what happens next."""
        name = short_name(self.owner)
        if self.status is None:
            return f"cannot {self.call} {name}: see juju debug-log"
        if self.retry:
            return f"GARM failed to {self.call} {name} (HTTP {self.status}); retrying"
        return f"GARM refused to {self.call} {name} (HTTP {self.status}): see juju debug-log"


@dataclasses.dataclass
class ReconcileReport:
    """The outcome of one pass: per spec, the orphan sweep, and what went wrong overall."""

    specs: list[SpecReport] = dataclasses.field(default_factory=list[SpecReport])
    orphans: list[PredecessorReport] = dataclasses.field(default_factory=list[PredecessorReport])
    orphans_kept: list[str] = dataclasses.field(default_factory=list[str])
    errors: list[str] = dataclasses.field(default_factory=list[str])
    warnings: list[str] = dataclasses.field(default_factory=list[str])
    failures: list[Failure] = dataclasses.field(default_factory=list[Failure])
    requests: int = 0
    writes: int = 0
    # Every scale set GARM holds after the pass (hand-made ones too), counted per provider name:
    # a removed configurator's provider stays until no scale set uses it.
    provider_scalesets: dict[str, int] = dataclasses.field(default_factory=dict[str, int])
    # The surge budget (ADR 0038): extra runners the changeovers in flight hold, how many those
    # are, and the writes the pass's bound left to the next pass.
    surge_held: int = 0
    in_flight: int = 0
    deferred_writes: int = 0

    @property
    def queued(self) -> int:
        """How many changeovers wait for the surge budget."""
        return sum(1 for spec in self.specs if spec.phase is Phase.QUEUED)

    # Every scale set GARM holds after the pass, for checks that follow it (ADR 0040) without
    # listing them again.
    held: list[ScaleSet] = dataclasses.field(default_factory=list[ScaleSet])

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
    """Return the short `juju status` text naming changeovers, or "".

    At most `limit` specs are named, then `+N more`; several predecessors of one spec are one
    entry. Force-removed runners are named with their jobs, since those jobs are stopped.
    Refusals are not here: they are never shown under Active (`refused_message`).
    """
    changing = [spec for spec in report.specs if spec.phase in CHANGEOVER_PHASES]
    if report.queued:
        return _fleet_text(changing, report.orphans)
    entries = [_changeover_text(spec) for spec in changing]
    if report.orphans:
        entries.append(_orphans_text(report.orphans))
    return fit(entries, ", ", most=limit)


def blocked_message(report: ReconcileReport, limit: int = 2) -> str:
    """Return the text for a Blocked status when the operator must act, or ""."""
    entries = [
        f"{short_name(spec.logical)}: {spec.status or spec.message}"
        for spec in report.specs
        if spec.phase is Phase.BLOCKED
    ]
    entries += [failure.text() for failure in report.failures if not failure.retry]
    # GARM keeps a set GitHub dropped until its restart recreates it there (garm-behaviour B33).
    entries += [
        f"GARM kept the old scale set of {short_name(owner)} after {kept.delete_failures} "
        "deletes: GitHub dropped it? restart garm, or see log"
        for owner, kept in _kept_deletes(report)
        if kept.delete_failures >= REPEATED_DELETE_FAILURES
    ]
    return fit(entries, "; ", most=limit)


def retry_message(report: ReconcileReport, limit: int = 2) -> str:
    """Return the Waiting text for GARM's failures the next pass retries by itself, or ""."""
    entries = [failure.text() for failure in report.failures if failure.retry]
    entries += [
        f"GARM kept the old scale set of {short_name(owner)} after a delete; {_retry(kept)}"
        for owner, kept in _kept_deletes(report)
        if kept.delete_failures < REPEATED_DELETE_FAILURES
    ]
    return fit(entries, "; ", most=limit)


def dropped_and_kept(report: ReconcileReport) -> list[str]:
    """Old scale sets GARM kept through a delete that GitHub answered it no longer has.

    GARM deletes such a set only after its restart has created it again at GitHub
    (garm-behaviour B33); the charm restarts GARM for them (ADR 0029).
    """
    return [kept.name for _, kept in _kept_deletes(report) if kept.missing_at_github]


def _retry(kept: PredecessorReport) -> str:
    if kept.delete_retry_at is None:
        return "retrying"
    return f"retrying at {clock_time(kept.delete_retry_at)}"


def _kept_deletes(report: ReconcileReport) -> list[tuple[str, PredecessorReport]]:
    """Every old scale set GARM answered a delete for but kept, with its spec's name."""
    kept = [(s.logical, p) for s in report.specs for p in s.predecessors if p.delete_failures]
    return kept + [(o.name, o) for o in report.orphans if o.delete_failures]


def _fleet_text(changing: Sequence[SpecReport], orphans: list[PredecessorReport]) -> str:
    """`'small' and 97 more changing: 3 in flight, 94 queued`: a fleet-wide change in one line.

    The spec named is the first in flight (else the first queued); list-scalesets has them all.
    """
    queued = [spec for spec in changing if spec.phase is Phase.QUEUED]
    flying = [spec for spec in changing if spec.phase is not Phase.QUEUED]
    first = (flying or queued)[0]
    name = short_name(first.logical)
    head = f"{name} and {len(changing) - 1} more changing" if len(changing) > 1 else name
    text = f"{head}: {len(flying)} in flight, {len(queued)} queued"
    return fit([text, _orphans_text(orphans) if orphans else ""], ", ")


def _changeover_text(spec: SpecReport) -> str:
    name = short_name(spec.logical)
    if not spec.predecessors:
        return f"{name}: {_phase_text(spec)}"
    what = "labels changing" if spec.labels_changing else "changing over"
    return f"{name} {what}: {_phase_text(spec)}"


def _phase_text(spec: SpecReport) -> str:
    runners = spec.draining_runners
    if spec.phase is Phase.CREATING:
        return _creating_text(spec)
    if spec.phase is Phase.REFRESHING:
        return _refreshing_text(spec.outdated_runners)
    if spec.phase is Phase.HANDING_OVER:
        return "handing over"
    if spec.phase is Phase.FORCING:
        stopping = spec.jobs_stopped or runners
        jobs = "its job" if stopping == 1 else "their jobs"
        return f"drain deadline passed, stopping {_runners(stopping)} and {jobs}"
    if spec.phase is Phase.DRAINING:
        deadline = f" (deadline {clock_time(spec.deadline)})" if spec.deadline else ""
        return f"draining {_runners(runners)}{deadline}"
    return "deleting old scale set"


def _refreshing_text(outdated: int) -> str:
    """Before the first pass that lists the runners, their count is not known yet."""
    if not outdated:
        return "refreshing runners"
    return f"refreshing {outdated} outdated {'runner' if outdated == 1 else 'runners'}"


def _creating_text(spec: SpecReport) -> str:
    """The new scale set is being created, or waits for the grace or for a runner online."""
    if spec.missing_at_github:
        return "GitHub dropped its scale set; creating a new one"
    if spec.serves_in is not None:
        return f"handing over (new set serves in {_duration(spec.serves_in)})"
    if spec.awaiting_runner_until is not None:
        until = clock_time(spec.awaiting_runner_until)
        return f"handing over (waiting for an idle runner of the new set until {until})"
    return "starting new scale set" if spec.predecessors else "creating"


def _duration(seconds: float) -> str:
    whole = max(1, int(seconds + 0.999))
    return f"{whole}s" if whole < 120 else f"{(whole + 59) // 60}m"


def _orphans_text(orphans: list[PredecessorReport]) -> str:
    runners = sum(orphan.runners or 0 for orphan in orphans)
    noun = "scale set" if len(orphans) == 1 else "scale sets"
    text = f"removing {len(orphans)} unconfigured {noun}"
    return f"{text} ({_runners(runners)} draining)" if runners else text


def _runners(count: int) -> str:
    return f"{count} runner" if count == 1 else f"{count} runners"
