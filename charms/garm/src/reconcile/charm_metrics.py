"""The charm's own per-scale-set metrics: what they are, and their Prometheus text (pure).

GARM's `/metrics` knows runners and scale sets by GARM's ids; only the charm knows a spec's
logical name, its configurator application, whether a rolling refresh runs (ADR 0022), the
stuck runners it removed (ADR 0023), whether GitHub dropped the live scale set (ADR 0029) and
the min-idle-schedule window in force. After each completed scale-set pass on the leader the
charm turns the pass's report into a `MetricsState`, keeps it (JSON, beside the metrics file)
and renders it in the text exposition format, which the exporter serves
(docs/adr/0030-charm-metrics-exporter.md).

The stuck-runner counter is cumulative across hooks: each pass adds what it removed to the
kept total. A lost state file restarts it at 0, which Prometheus' `rate` and `increase` read as
a counter reset. A scale set no longer configured disappears from the state, so from the file.

No I/O here: the workload layer reads and writes the files.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar, cast

from reconcile.github.offline_runners import OfflineReport
from reconcile.github.view import GithubView
from scaleset_reconciler.report import Phase, ReconcileReport, SpecReport
from scaleset_reconciler.spec import ScalesetSpec

PREFIX: Final = "garm_charm_"
PAUSED: Final = f"{PREFIX}paused"
LAST_RECONCILE: Final = f"{PREFIX}last_reconcile_timestamp_seconds"
OUTDATED: Final = f"{PREFIX}scaleset_outdated_runners"
BUSY_OUTDATED: Final = f"{PREFIX}scaleset_busy_outdated_runners"
REFRESHING: Final = f"{PREFIX}scaleset_refreshing"
STUCK_REMOVED: Final = f"{PREFIX}scaleset_stuck_runners_removed_total"
STUCK_KEPT: Final = f"{PREFIX}scaleset_stuck_runners_kept"
MIN_IDLE: Final = f"{PREFIX}scaleset_min_idle_runners"
MISSING_AT_GITHUB: Final = f"{PREFIX}scaleset_missing_at_github"
QUEUE_POSITION: Final = f"{PREFIX}scaleset_queue_position"
QUEUED: Final = f"{PREFIX}changeovers_queued"
OFFLINE: Final = f"{PREFIX}scaleset_offline_runners"
OFFLINE_REMOVED: Final = f"{PREFIX}scaleset_offline_runners_removed_total"
GH_WAITING: Final = f"{PREFIX}scaleset_github_jobs_waiting"
GH_RUNNING: Final = f"{PREFIX}scaleset_github_jobs_running"
GH_WAITING_SINCE: Final = f"{PREFIX}scaleset_github_jobs_waiting_since_timestamp_seconds"
GH_BUSY: Final = f"{PREFIX}scaleset_github_runners_busy"
GH_IDLE: Final = f"{PREFIX}scaleset_github_runners_idle"
GH_NOT_READY: Final = f"{PREFIX}scaleset_github_runners_not_ready"
GARM_BUSY: Final = f"{PREFIX}scaleset_garm_runners_busy"
GARM_IDLE: Final = f"{PREFIX}scaleset_garm_runners_idle"
GH_DISAGREE: Final = f"{PREFIX}scaleset_github_disagrees"
GH_DISAGREE_SINCE: Final = f"{PREFIX}scaleset_github_disagrees_since_timestamp_seconds"
API_REMAINING: Final = f"{PREFIX}github_api_remaining"
API_RESERVE: Final = f"{PREFIX}github_api_reserve"
CHECKS_SKIPPED: Final = f"{PREFIX}github_checks_skipped"

# Every metric the charm exports: (name, type, help). Rules and dashboards may use these.
METRICS: Final[tuple[tuple[str, str, str], ...]] = (
    (PAUSED, "gauge", "1 while the charm is paused (ADR 0024): nothing below is updated."),
    (LAST_RECONCILE, "gauge", "Unix time of the last completed scale-set pass."),
    (OUTDATED, "gauge", "Runners of the live scale set made before its last in-place change."),
    (BUSY_OUTDATED, "gauge", "Outdated runners running a job (left alone until it ends)."),
    (REFRESHING, "gauge", "1 while a rolling refresh replaces outdated idle runners."),
    (STUCK_REMOVED, "counter", "Runners stuck in a non-final state that the charm removed."),
    (STUCK_KEPT, "gauge", "Stuck runners GARM keeps although the charm asked to remove them."),
    (MIN_IDLE, "gauge", "Min idle runners in force; window: the schedule window in force."),
    (MISSING_AT_GITHUB, "gauge", "1 when GitHub no longer has the live scale set."),
    (QUEUE_POSITION, "gauge", "Place of its changeover in the surge budget's queue; 0: none."),
    (QUEUED, "gauge", "Changeovers waiting for the surge budget (changeover-surge)."),
    (OFFLINE, "gauge", "Idle runners GitHub showed offline at the last check (ADR 0040)."),
    (OFFLINE_REMOVED, "counter", "Idle runners the charm removed: offline at GitHub too long."),
    (GH_WAITING, "gauge", "Jobs waiting at GitHub for the live scale set (ADR 0041)."),
    (GH_RUNNING, "gauge", "Jobs running at GitHub on the live scale set."),
    (GH_WAITING_SINCE, "gauge", "Since when jobs have waited at every check (0: none)."),
    (GH_BUSY, "gauge", "Runners GitHub shows busy."),
    (GH_IDLE, "gauge", "Runners GitHub shows idle."),
    (GH_NOT_READY, "gauge", "Runners GitHub shows registered, neither busy nor idle."),
    (GARM_BUSY, "gauge", "Runners GARM shows busy, at the same check."),
    (GARM_IDLE, "gauge", "Runners GARM shows idle, at the same check."),
    (GH_DISAGREE, "gauge", "1 when GitHub's counts and GARM's disagree."),
    (GH_DISAGREE_SINCE, "gauge", "Since when they have disagreed at every check (0: agree)."),
    (API_REMAINING, "gauge", "REST requests the App installation has left, as GitHub last said."),
    (API_RESERVE, "gauge", "REST requests of the installation the charm leaves to GARM."),
    (CHECKS_SKIPPED, "gauge", "GitHub checks the last pass skipped to keep GARM's reserve."),
)
# GitHub's view beside GARM's (ADR 0041): shown only once GitHub answered for the scale set.
_VIEW_METRICS: Final = frozenset(
    {
        GH_WAITING,
        GH_RUNNING,
        GH_WAITING_SINCE,
        GH_BUSY,
        GH_IDLE,
        GH_NOT_READY,
        GARM_BUSY,
        GARM_IDLE,
        GH_DISAGREE,
        GH_DISAGREE_SINCE,
    }
)
# The metrics of an App installation's REST quota (ADR 0039), labelled `installation`.
_API_METRICS: Final = frozenset({API_REMAINING, API_RESERVE, CHECKS_SKIPPED})
METRIC_NAMES: Final = frozenset(name for name, _, _ in METRICS)


@dataclasses.dataclass(frozen=True)
class ScalesetFacts:
    """What one pass found for one spec, as the metrics show it.

    Attributes:
        scaleset: the spec's logical name (`ScalesetSpec.name`).
        application: the garm-configurator application that publishes it.
        outdated: live runners made before the last in-place change (ADR 0022).
        busy_outdated: those of them running a job.
        refreshing: whether a rolling refresh runs.
        stuck_removed: stuck runners removed, cumulative across passes (ADR 0023).
        stuck_kept: stuck runners GARM keeps (asked to remove, still there).
        min_idle: the min idle runners in force.
        window: the schedule window that set it ("default" outside every window, "" without a
            schedule).
        missing_at_github: whether GitHub no longer has the live scale set (ADR 0029).
        queue_position: its changeover's place in the surge budget's queue, 0 when it is not
            queued (ADR 0038).
        offline: idle runners GitHub showed offline at the last check (ADR 0040).
        offline_removed: idle runners removed for being offline, cumulative across passes.
        github: GitHub's view beside GARM's at the last check GitHub answered (ADR 0041):
            `github.view.GithubView` fields as ints (times as Unix seconds, 0 for none);
            empty before GitHub answered.
    """

    scaleset: str
    application: str
    outdated: int = 0
    busy_outdated: int = 0
    refreshing: bool = False
    stuck_removed: int = 0
    stuck_kept: int = 0
    min_idle: int = 0
    window: str = ""
    missing_at_github: bool = False
    queue_position: int = 0
    offline: int = 0
    offline_removed: int = 0
    github: dict[str, int] = dataclasses.field(default_factory=dict[str, int])

    @property
    def key(self) -> tuple[str, str]:
        """(application, scaleset): a spec's family (ADR 0018), one series per metric."""
        return (self.application, self.scaleset)


@dataclasses.dataclass(frozen=True)
class ApiFacts:
    """One App installation's REST quota after a pass (ADR 0039).

    Attributes:
        installation: the installation's id.
        remaining: requests left in the window, as GitHub's headers last said.
        reserve: the requests the charm leaves to GARM.
        skipped: the checks the pass skipped to keep the reserve.
    """

    installation: int
    remaining: int
    reserve: int
    skipped: int = 0


@dataclasses.dataclass(frozen=True)
class MetricsState:
    """The facts of the last completed pass, kept between hooks (the counter's memory).

    Attributes:
        scalesets: one entry per configured spec, sorted by (application, scaleset).
        last_reconcile: when the last pass completed (Unix seconds); None before the first.
        github_api: one entry per App installation whose quota GitHub told, by id.
    """

    scalesets: tuple[ScalesetFacts, ...] = ()
    last_reconcile: float | None = None
    github_api: tuple[ApiFacts, ...] = ()

    def to_json(self) -> str:
        """The state as the JSON kept beside the metrics file (sorted keys: stable bytes)."""
        data = {
            "last_reconcile": self.last_reconcile,
            "scalesets": [dataclasses.asdict(facts) for facts in self.scalesets],
            "github_api": [dataclasses.asdict(facts) for facts in self.github_api],
        }
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> MetricsState:
        """The kept state; an empty, unreadable or foreign file reads as no state at all.

        Losing it only restarts the stuck-runner counter, which Prometheus handles.
        """
        try:
            loaded: Any = json.loads(text)
            data = cast(dict[str, Any], loaded)
            entries = cast(list[dict[str, Any]], data.get("scalesets", []))
            scalesets = tuple(_facts_from(ScalesetFacts, entry) for entry in entries)
            quotas = cast(list[dict[str, Any]], data.get("github_api", []))
            github_api = tuple(_facts_from(ApiFacts, entry) for entry in quotas)
            last = data.get("last_reconcile")
            last_reconcile = None if last is None else float(last)
        except (ValueError, TypeError, AttributeError):
            return cls()
        if last_reconcile is not None and not math.isfinite(last_reconcile):
            return cls()
        return cls(scalesets, last_reconcile, github_api)


_Facts = TypeVar("_Facts", ScalesetFacts, ApiFacts)


def _facts_from(kind: type[_Facts], entry: Mapping[str, Any]) -> _Facts:
    """One kept entry, type-checked: a wrong type raises TypeError (the state is dropped)."""
    facts = kind(**entry)
    for field in dataclasses.fields(facts):
        value = getattr(facts, field.name)
        expected = {"str": str, "int": int, "bool": bool, "dict[str, int]": dict}[str(field.type)]
        if type(value) is not expected:
            raise TypeError(f"{field.name} is not {field.type}")
        if expected is dict and not all(
            type(item) is int for item in cast(dict[str, Any], value).values()
        ):
            raise TypeError(f"{field.name} is not {field.type}")
    return facts


@dataclasses.dataclass(frozen=True)
class CompletedPass:
    """A scale-set pass that ran to its end: its report, the specs it had, when it ran.

    `github_api` holds the App installations' quotas after it (`github.http.Quotas.rows`);
    `offline` what its offline-runner check did (None: the pass did not check).
    """

    report: ReconcileReport
    specs: tuple[ScalesetSpec, ...]
    at: datetime.datetime
    github_api: Sequence[Mapping[str, Any]] = ()
    offline: OfflineReport | None = None
    github_view: Mapping[str, GithubView] | None = None


def after_pass(previous: MetricsState, completed: CompletedPass) -> MetricsState:
    """The state after a completed pass: this pass's facts, the counters carried forward.

    One entry per spec, named as its configurator publishes it; a spec the pass did not report
    counts as found with nothing to say. Specs gone since the previous pass are dropped with
    their counter.
    """
    before = {facts.key: facts for facts in previous.scalesets}
    reports = {spec_report.logical: spec_report for spec_report in completed.report.specs}
    scalesets = [
        _view_facts(
            _offline_facts(
                _facts(spec, reports.get(spec.name), before.get((spec.application, spec.name))),
                before.get((spec.application, spec.name)),
                completed.offline,
            ),
            before.get((spec.application, spec.name)),
            completed.github_view,
        )
        for spec in completed.specs
    ]
    unique = {facts.key: facts for facts in scalesets}
    return MetricsState(
        tuple(unique[key] for key in sorted(unique)),
        completed.at.astimezone(datetime.UTC).timestamp(),
        tuple(
            ApiFacts(
                int(row["installation"]),
                int(row["remaining"]),
                int(row["reserve"]),
                len(row["skipped"]),
            )
            for row in completed.github_api
        ),
    )


def _view_facts(
    facts: ScalesetFacts, previous: ScalesetFacts | None, views: Mapping[str, GithubView] | None
) -> ScalesetFacts:
    """GitHub's view: this check's, or the last one's between checks (and when not answered)."""
    if views is None or f"{facts.application}/{facts.scaleset}" not in views:
        kept = dict(previous.github) if previous is not None else {}
        return dataclasses.replace(facts, github=kept)
    view = views[f"{facts.application}/{facts.scaleset}"]
    return dataclasses.replace(
        facts,
        github={
            GH_WAITING: view.jobs_waiting,
            GH_RUNNING: view.jobs_running,
            GH_WAITING_SINCE: _seconds(view.waiting_since),
            GH_BUSY: view.runners_busy,
            GH_IDLE: view.runners_idle,
            GH_NOT_READY: view.runners_not_ready,
            GARM_BUSY: view.garm_busy,
            GARM_IDLE: view.garm_idle,
            GH_DISAGREE: int(view.disagree),
            GH_DISAGREE_SINCE: _seconds(view.disagree_since),
        },
    )


def _seconds(moment: str) -> int:
    """An ISO 8601 time as Unix seconds; "" (none) or unreadable as 0."""
    try:
        return int(datetime.datetime.fromisoformat(moment).timestamp())
    except ValueError:
        return 0


def _offline_facts(
    facts: ScalesetFacts, previous: ScalesetFacts | None, offline: OfflineReport | None
) -> ScalesetFacts:
    """The offline counts: this check's, or the last check's between checks."""
    removed_before = previous.offline_removed if previous is not None else 0
    if offline is None:
        shown = previous.offline if previous is not None else 0
        return dataclasses.replace(facts, offline=shown, offline_removed=removed_before)
    removed = offline.removed_by_scaleset().get(facts.key, 0)
    return dataclasses.replace(
        facts,
        offline=offline.offline.get(facts.key, 0),
        offline_removed=removed_before + removed,
    )


def _facts(
    spec: ScalesetSpec, found: SpecReport | None, previous: ScalesetFacts | None
) -> ScalesetFacts:
    removed_before = previous.stuck_removed if previous is not None else 0
    found = found or SpecReport(spec.name, Phase.SKIPPED)
    return ScalesetFacts(
        scaleset=spec.name,
        application=spec.application,
        # The report counts the outdated runners without a job and the busy ones apart.
        outdated=found.outdated_runners + found.busy_outdated_runners,
        busy_outdated=found.busy_outdated_runners,
        refreshing=found.refreshing,
        stuck_removed=removed_before + found.stuck_removed,
        stuck_kept=found.stuck_unremovable,
        min_idle=spec.min_idle_runners,
        window=spec.min_idle_window,
        missing_at_github=found.missing_at_github,
        queue_position=found.queue_position or 0,
    )


def render(state: MetricsState, *, paused: bool) -> str:
    """The state in Prometheus' text exposition format (version 0.0.4).

    While paused the kept facts are shown as they were (no pass ran), with `garm_charm_paused`
    1 so alerts leave them alone. Before the first pass only the pause gauge is there.
    """
    lines: list[str] = []
    for name, kind, help_text in METRICS:
        samples = list(_samples(name, state, paused=paused))
        if not samples:
            continue
        lines.append(f"# HELP {name} {_escape_help(help_text)}")
        lines.append(f"# TYPE {name} {kind}")
        lines += [f"{name}{_labels(labels)} {value}" for labels, value in samples]
    return "\n".join(lines) + "\n"


def _samples(
    name: str, state: MetricsState, *, paused: bool
) -> Iterable[tuple[Mapping[str, str], str]]:
    if name in (PAUSED, LAST_RECONCILE, QUEUED):
        yield from _unlabelled(name, state, paused=paused)
        return
    if name in _API_METRICS:
        for quota in state.github_api:
            yield {"installation": str(quota.installation)}, _number(_api_value(name, quota))
        return
    for facts in state.scalesets:
        if name in _VIEW_METRICS and name not in facts.github:
            continue
        labels = {"scaleset": facts.scaleset, "application": facts.application}
        if name == MIN_IDLE:
            labels["window"] = facts.window
        yield labels, _number(_value(name, facts))


def _unlabelled(
    name: str, state: MetricsState, *, paused: bool
) -> Iterable[tuple[Mapping[str, str], str]]:
    """The charm-wide samples: paused always, the others once a pass completed."""
    if name == PAUSED:
        yield {}, _number(int(paused))
    elif state.last_reconcile is not None:
        if name == LAST_RECONCILE:
            yield {}, _number(state.last_reconcile)
        else:
            yield {}, _number(sum(1 for facts in state.scalesets if facts.queue_position))


def _value(name: str, facts: ScalesetFacts) -> int:
    if name in _VIEW_METRICS:
        return facts.github[name]
    values = {
        OUTDATED: facts.outdated,
        BUSY_OUTDATED: facts.busy_outdated,
        REFRESHING: int(facts.refreshing),
        STUCK_REMOVED: facts.stuck_removed,
        STUCK_KEPT: facts.stuck_kept,
        MIN_IDLE: facts.min_idle,
        MISSING_AT_GITHUB: int(facts.missing_at_github),
        QUEUE_POSITION: facts.queue_position,
        OFFLINE: facts.offline,
        OFFLINE_REMOVED: facts.offline_removed,
    }
    return values[name]


def _api_value(name: str, quota: ApiFacts) -> int:
    values = {
        API_REMAINING: quota.remaining,
        API_RESERVE: quota.reserve,
        CHECKS_SKIPPED: quota.skipped,
    }
    return values[name]


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    pairs = ",".join(f'{key}="{escape_label_value(value)}"' for key, value in labels.items())
    return "{" + pairs + "}"


def escape_label_value(value: str) -> str:
    r"""A label value as the text format wants it: `\`, `"` and line feeds escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    """Integers without a fraction; a timestamp with millisecond precision."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}"
