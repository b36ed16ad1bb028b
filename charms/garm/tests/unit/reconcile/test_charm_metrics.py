"""The charm's per-scale-set metrics (ADR 0030): what a pass's report becomes, and its text."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re

import pytest

from doubles.memory_garm import MemoryGarm
from garm_api.models import EntityKind
from reconcile.charm_metrics import (
    METRIC_NAMES,
    CompletedPass,
    MetricsState,
    ScalesetFacts,
    after_pass,
    escape_label_value,
    render,
)
from reconcile.github.offline_runners import IdleRunner, OfflineReport
from reconcile.github.view import GithubView
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.report import Phase, ReconcileReport, SpecReport
from scaleset_reconciler.spec import ScalesetSpec
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
OFFICE = "Mon-Fri 08:00-18:00 Europe/Berlin"
# One sample line of the text format: name, optional labels, value.
SAMPLE = re.compile(r'^([a-z_]+)(\{(?:[a-z_]+="(?:[^"\\\n]|\\["\\n])*",?)*\})? (\S+)$')


def spec(name: str = "small", application: str = "small-app", **fields: object) -> ScalesetSpec:
    """A spec of `application`."""
    return dataclasses.replace(make_spec(name), application=application, **fields)


def completed(
    *reports: SpecReport,
    specs: tuple[ScalesetSpec, ...],
    at: datetime.datetime = NOW,
    github_api: tuple[dict[str, object], ...] = (),
    offline: OfflineReport | None = None,
    github_view: dict[str, GithubView] | None = None,
):
    """A completed pass that reported `reports` for `specs` (quotas, offline runners, view)."""
    return CompletedPass(
        ReconcileReport(specs=list(reports)), specs, at, github_api, offline, github_view
    )


def view(**fields: object) -> dict[str, GithubView]:
    """GitHub's view of `small` of small-app: 4 jobs waiting since 11:30, disagreeing since."""
    values: dict[str, object] = {
        "scaleset": "small",
        "application": "small-app",
        "checked_at": NOW.isoformat(),
        "jobs_waiting": 4,
        "jobs_running": 1,
        "runners_busy": 1,
        "runners_idle": 0,
        "runners_not_ready": 2,
        "garm_busy": 1,
        "garm_idle": 2,
        "disagree": True,
        "waiting_since": (NOW - datetime.timedelta(minutes=30)).isoformat(),
        "disagree_since": (NOW - datetime.timedelta(minutes=15)).isoformat(),
    }
    values.update(fields)
    return {"small-app/small": GithubView(**values)}  # pyright: ignore[reportArgumentType]


def offline_check(removed: int, shown: int) -> OfflineReport:
    """An offline-runner check of `small` that showed `shown` offline and removed `removed`."""
    runner = IdleRunner("garm-1", 1, EntityKind.REPOSITORY, "o/r", "small", "small-app")
    return OfflineReport(True, (runner,) * removed, {("small-app", "small"): shown}, {})


# One installation's quota after a pass, as `github.http.Quotas.rows` gives it.
QUOTA = {
    "installation": 7,
    "limit": 5000,
    "remaining": 1200,
    "reserve": 1250,
    "reset": "2026-12-01T13:00:00+00:00",
    "skipped": ["finished jobs of acme", "scale sets of acme"],
}


def samples(text: str) -> dict[str, str]:
    """Every sample line of the text, `name{labels}` -> value."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a sample line of the text format: {line!r}"
        found[f"{match[1]}{match[2] or ''}"] = match[3]
    return found


def test_a_pass_becomes_one_series_per_metric_and_scale_set():
    """Arrange: `small` refreshing, stuck runners removed and kept, scheduled, missing at GitHub.

    (3 outdated without a job, 1 busy; 2 stuck removed, 1 kept; min idle 6 by the office
    window; 2nd in the surge budget's queue.)
    Act: after_pass, render (not paused).
    Assert: every per-scale-set metric with scaleset/application labels (min idle with the
    window), the pass's timestamp, paused 0; HELP and TYPE before each metric.
    """
    small = spec(min_idle_runners=6, min_idle_window=OFFICE)
    report = SpecReport(
        "small",
        Phase.REFRESHING,
        refreshing=True,
        outdated_runners=3,
        busy_outdated_runners=1,
        stuck_removed=2,
        stuck_unremovable=1,
        missing_at_github=True,
        queue_position=2,
    )

    text = render(
        after_pass(
            MetricsState(),
            completed(
                report,
                specs=(small,),
                github_api=(QUOTA,),
                offline=offline_check(1, 2),
                github_view=view(),
            ),
        ),
        paused=False,
    )

    labels = '{scaleset="small",application="small-app"}'
    assert samples(text) == {
        'garm_charm_github_api_remaining{installation="7"}': "1200",
        'garm_charm_github_api_reserve{installation="7"}': "1250",
        'garm_charm_github_checks_skipped{installation="7"}': "2",
        "garm_charm_paused": "0",
        "garm_charm_last_reconcile_timestamp_seconds": str(int(NOW.timestamp())),
        # Every outdated runner, the busy one too: the alert subtracts the busy ones itself.
        f"garm_charm_scaleset_outdated_runners{labels}": "4",
        f"garm_charm_scaleset_busy_outdated_runners{labels}": "1",
        f"garm_charm_scaleset_refreshing{labels}": "1",
        f"garm_charm_scaleset_stuck_runners_removed_total{labels}": "2",
        f"garm_charm_scaleset_stuck_runners_kept{labels}": "1",
        f'garm_charm_scaleset_min_idle_runners{labels[:-1]},window="{OFFICE}"}}': "6",
        f"garm_charm_scaleset_missing_at_github{labels}": "1",
        f"garm_charm_scaleset_queue_position{labels}": "2",
        "garm_charm_changeovers_queued": "1",
        f"garm_charm_scaleset_offline_runners{labels}": "2",
        f"garm_charm_scaleset_offline_runners_removed_total{labels}": "1",
        f"garm_charm_scaleset_github_jobs_waiting{labels}": "4",
        f"garm_charm_scaleset_github_jobs_running{labels}": "1",
        f"garm_charm_scaleset_github_jobs_waiting_since_timestamp_seconds{labels}": str(
            int(NOW.timestamp()) - 1800
        ),
        f"garm_charm_scaleset_github_runners_busy{labels}": "1",
        f"garm_charm_scaleset_github_runners_idle{labels}": "0",
        f"garm_charm_scaleset_github_runners_not_ready{labels}": "2",
        f"garm_charm_scaleset_garm_runners_busy{labels}": "1",
        f"garm_charm_scaleset_garm_runners_idle{labels}": "2",
        f"garm_charm_scaleset_github_disagrees{labels}": "1",
        f"garm_charm_scaleset_github_disagrees_since_timestamp_seconds{labels}": str(
            int(NOW.timestamp()) - 900
        ),
    }
    assert "# TYPE garm_charm_scaleset_stuck_runners_removed_total counter" in text
    for name in METRIC_NAMES:
        assert (
            text.index(f"# HELP {name} ") < text.index(f"# TYPE {name} ") < text.index(f"\n{name}")
        )


@pytest.mark.parametrize(("window", "shown"), [("", ""), ("default", "default"), (OFFICE, OFFICE)])
def test_the_min_idle_series_names_the_window_in_force(window: str, shown: str):
    """Arrange: no schedule, outside every window, in the office window. Act: render.

    Assert: the window label is empty, `default`, the window's text.
    """
    small = spec(min_idle_runners=2, min_idle_window=window)

    text = render(after_pass(MetricsState(), completed(specs=(small,))), paused=False)

    assert f'window="{shown}"}} 2' in text


def test_label_values_are_escaped_as_the_text_format_says():
    r"""Arrange: a scale set and an application whose names hold `\`, `"` and a line feed.

    Act: render. Assert: escaped as `\\`, `\"` and `\n`; every line still parses.
    """
    odd = spec('a\\b"c\nd', application='app"x')

    text = render(after_pass(MetricsState(), completed(specs=(odd,))), paused=False)

    assert 'scaleset="a\\\\b\\"c\\nd",application="app\\"x"' in text
    samples(text)
    assert escape_label_value('\\"\n') == '\\\\\\"\\n'


def test_the_stuck_counter_adds_up_across_passes_and_hooks():
    """Arrange: a pass removing 2 stuck runners, its state kept as JSON (another hook reads it).

    Act: a pass removing 3, then one removing none.

    Assert: the counter reads 2, 5, 5: cumulative, never this pass's count alone.
    """
    small = spec()

    def removed(count: int) -> CompletedPass:
        return completed(SpecReport("small", Phase.ACTIVE, stuck_removed=count), specs=(small,))

    first = after_pass(MetricsState(), removed(2))
    second = after_pass(MetricsState.from_json(first.to_json()), removed(3))
    third = after_pass(MetricsState.from_json(second.to_json()), removed(0))

    assert [state.scalesets[0].stuck_removed for state in (first, second, third)] == [2, 5, 5]


def test_the_counter_counts_what_a_real_pass_removed():
    """Arrange: a converged set whose runner errored 31 minutes ago (in-memory GARM, 30m timeout).

    Act: a pass; its report into the metrics.
    Assert: the counter reads 1 and nothing is left stuck.
    """
    small = make_spec(min_idle_runners=1)
    garm = MemoryGarm()
    converge(garm, [small])
    garm.advance(61)
    (runner,) = garm.runners_of(live_name(small))
    runner.status, runner.runner_status = "error", "failed"
    garm.advance(31 * 60)
    settings = dataclasses.replace(SETTINGS, runner_stuck_timeout=datetime.timedelta(minutes=30))

    report = run(garm, [small], settings=settings)
    state = after_pass(MetricsState(), CompletedPass(report, (small,), NOW))

    assert state.scalesets[0].stuck_removed == 1
    assert state.scalesets[0].stuck_kept == 0


def test_a_scale_set_no_longer_configured_disappears():
    """Arrange: a state with `small` and `large`; the next pass has only `small`.

    Act: after_pass, render. Assert: no series names `large` any more; `small` stays.
    """
    small, large = spec("small"), spec("large")
    both = after_pass(MetricsState(), completed(specs=(small, large)))

    text = render(after_pass(both, completed(specs=(small,))), paused=False)

    assert 'scaleset="large"' not in text
    assert 'scaleset="small"' in text


def test_a_name_removed_and_added_again_restarts_its_counter():
    """Arrange: `small` removed 4 stuck runners, then was unconfigured for a pass.

    Act: `small` configured again, a pass removing 1. Assert: the counter reads 1.
    """
    small = spec()
    counted = after_pass(
        MetricsState(),
        completed(SpecReport("small", Phase.ACTIVE, stuck_removed=4), specs=(small,)),
    )
    gone = after_pass(counted, completed(specs=()))

    back = after_pass(
        gone, completed(SpecReport("small", Phase.ACTIVE, stuck_removed=1), specs=(small,))
    )

    assert back.scalesets[0].stuck_removed == 1


def test_the_same_name_in_two_applications_keeps_two_series_and_two_counters():
    """Arrange: `small` published by `a` and by `b` (a contested name, one report).

    Act: two passes each reporting one removal. Assert: each family counts on its own.
    """
    pair = (spec(application="a"), spec(application="b"))
    report = SpecReport("small", Phase.BLOCKED, stuck_removed=1)

    state = after_pass(
        after_pass(MetricsState(), completed(report, specs=pair)), completed(report, specs=pair)
    )

    assert [(f.application, f.stuck_removed) for f in state.scalesets] == [("a", 2), ("b", 2)]


def test_paused_shows_the_kept_facts_and_says_so():
    """Arrange: a state kept from the last pass. Act: render paused.

    Assert: paused 1; the last pass's timestamp and facts as they were.
    """
    state = after_pass(
        MetricsState(),
        completed(SpecReport("small", Phase.ACTIVE, outdated_runners=2), specs=(spec(),)),
    )

    text = render(state, paused=True)

    found = samples(text)
    assert found["garm_charm_paused"] == "1"
    assert found["garm_charm_last_reconcile_timestamp_seconds"] == str(int(NOW.timestamp()))
    assert (
        found['garm_charm_scaleset_outdated_runners{scaleset="small",application="small-app"}']
        == "2"
    )


def test_before_the_first_pass_only_the_pause_gauge_is_there():
    """Arrange: no state. Act: render. Assert: one metric, `garm_charm_paused 0`."""
    assert samples(render(MetricsState(), paused=False)) == {"garm_charm_paused": "0"}


def test_a_fractional_timestamp_keeps_milliseconds():
    """Arrange: a pass at 12:00:00.250. Act: render. Assert: the timestamp ends in `.250`."""
    at = NOW + datetime.timedelta(milliseconds=250)

    text = render(after_pass(MetricsState(), completed(specs=(), at=at)), paused=False)

    assert f"garm_charm_last_reconcile_timestamp_seconds {int(NOW.timestamp())}.250\n" in text


@pytest.mark.parametrize(
    "kept",
    [
        "",
        "not json",
        "[1, 2]",
        json.dumps({"scalesets": [{"scaleset": "small"}]}),
        json.dumps({"scalesets": [{"scaleset": "s", "application": "a", "outdated": "3"}]}),
        json.dumps({"scalesets": [{"scaleset": "s", "application": "a", "refreshing": 1}]}),
        json.dumps({"scalesets": [], "last_reconcile": "yesterday"}),
        json.dumps({"scalesets": [], "last_reconcile": float("inf")}),
        json.dumps({"scalesets": [{"scaleset": "s", "application": "a", "surprise": 1}]}),
    ],
)
def test_an_unreadable_state_reads_as_none(kept: str):
    """Arrange: an empty, broken or foreign state file. Act: read it.

    Assert: no state (the counter restarts at 0, which Prometheus handles), never a crash.
    """
    assert MetricsState.from_json(kept) == MetricsState()


def test_the_state_round_trips():
    """Arrange: a state with every field set. Act: to JSON and back. Assert: equal."""
    state = MetricsState(
        (ScalesetFacts("s", "a", 1, 1, True, 7, 2, 6, OFFICE, True),), NOW.timestamp()
    )

    assert MetricsState.from_json(state.to_json()) == state


def test_the_offline_counts_carry_over_between_checks_and_the_removals_add_up():
    """Arrange: a check removing 1 of 3 offline, a pass without a check, a check removing 2.

    Act: after_pass each, through the kept JSON.

    Assert: the gauge shows the last check's count between checks; the counter adds up.
    """
    small = spec()
    first = after_pass(MetricsState(), completed(specs=(small,), offline=offline_check(1, 3)))
    between = after_pass(MetricsState.from_json(first.to_json()), completed(specs=(small,)))
    second = after_pass(
        MetricsState.from_json(between.to_json()),
        completed(specs=(small,), offline=offline_check(2, 0)),
    )

    assert [
        (s.scalesets[0].offline, s.scalesets[0].offline_removed) for s in (first, between, second)
    ] == [
        (3, 1),
        (3, 1),
        (0, 3),
    ]


def test_githubs_view_is_absent_until_github_answers_then_kept_between_checks():
    """Arrange: a pass before GitHub answered, one with GitHub's view, one without a check.

    Act: after_pass each, through the kept JSON; render the last.

    Assert: no view series at first; the view's counts after the check, kept by the pass
    without one (agreeing: since 0).
    """
    small = spec()
    before = after_pass(MetricsState(), completed(specs=(small,)))
    checked = after_pass(
        MetricsState.from_json(before.to_json()),
        completed(specs=(small,), github_view=view(disagree=False, disagree_since="")),
    )
    between = after_pass(MetricsState.from_json(checked.to_json()), completed(specs=(small,)))

    assert "scaleset_github" not in render(before, paused=False)
    shown = samples(render(between, paused=False))
    labels = '{scaleset="small",application="small-app"}'
    assert shown[f"garm_charm_scaleset_github_jobs_waiting{labels}"] == "4"
    assert shown[f"garm_charm_scaleset_github_disagrees{labels}"] == "0"
    assert shown[f"garm_charm_scaleset_github_disagrees_since_timestamp_seconds{labels}"] == "0"
