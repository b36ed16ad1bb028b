"""Properties of the scale-set changeover under random changes, traffic, faults and restarts.

A hypothesis state machine drives reconcile passes against the in-memory GARM. Every check reads
GARM's own state, clock and call log (`MemoryGarm.log`, `enabled_history`, `forced`), never the
charm's marker or its report, so a charm that misjudges its own marker is caught. After every pass:
no label gap; no hand-over before the replacement has served for the grace since GARM really
enabled it and has a runner online; no write to a draining scale set before its deadline (except
re-enabling it); every runner past its deadline forced off in that pass unless GARM refused
something else; a refused read ends the pass before any write; a blocked spec's scale sets
untouched; the report's request and write counts equal the calls GARM received; the Blocked text
counts what it does not name; no pass sends more writes than its bound; a pass starts a changeover
only within the surge budget, counted from GARM's state after it (ADR 0038). After every step: no
delete GARM would refuse, no runner removed before the deadline counted from when GARM really
disabled the set unless its job had ended and GitHub no longer listed it (GitHub answers the charm
or not, at random), hand-made scale sets untouched. Once inputs settle and faults stop (GitHub
accepts every label again, though it keeps the leftover scale sets of GARM's race, whose names the
charm then avoids): within a bounded number of passes each valid spec has exactly one scale set,
whose labels, min, max, flavor, image and extra specs are the spec's, no orphan is left, a blocked
spec does not excuse the others, and a further pass sends GARM no write.

Traffic reaches the corners through composite rules, and the run fails if any corner is reached in
fewer than `MIN_SHARE` of the examples (`CORNERS`; counts printed at the end, with `-s`). Measured
over three default runs (2026-12-01): a busy runner forced off past the deadline 35-49% of
examples, a retired set flipped back mid-drain 35-45%, an orphan swept 40-47%, a refused read
48-58%, a refused write 55-65%, an outage in the middle of a pass 56-63%, a restart between a
create and its marker 52-54%; 23-24 s of CPU, against 16-17 s for the machine before these rules.
With the GitHub path (a runner removed once GitHub no longer listed it: 40-42% of examples), 25-26
s.

Examples: 500 by default (`tox -e unit`), derandomized: the same examples every run, so the
corner floor cannot fail CI by chance (shares 32-60% on 2026-12-01);
`HYPOTHESIS_PROFILE=thorough` (`tox -e properties`) draws 5,000 longer random ones.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from doubles.memory_garm import CONSOLIDATION_SECONDS, REPO_ID, WRITE_OPERATIONS, Call, MemoryGarm
from garm_api import GarmApiError, GarmUnreachable
from garm_api.models import EntityKind, normalise_labels
from reconcile.github.dropped_verdict import ConfirmedCheck, Sightings
from reconcile.github.scalesets import CHECK_EVERY
from scaleset_reconciler import (
    FinishedAtGithub,
    GithubScaleSetRef,
    MissingAtGithub,
    Phase,
    ReconcileReport,
    blocked_message,
    dropped_and_kept,
    reconcile,
)
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.prepare import desired_create
from scaleset_reconciler.report import REPEATED_DELETE_FAILURES
from scaleset_reconciler.runners import REMOVABLE
from scaleset_reconciler.spec import ScalesetSpec
from status_text import STATUS_LIMIT, short_name
from unit.walks.hypothesis_budget import SHRINK_SECONDS, shrinking_bounded
from unit.walks.scalesets import SETTINGS, make_spec

LOGICAL = ("a", "b")
LABEL_SETS = (("x64", "gpu"), ("arm64", "GPU"), ("gpu",), ("x64",), ("X64", "Linux"))
READS = ("list_scalesets", "list_instances", "list_providers", "list_entities", "list_templates")
WRITES = ("create_scaleset", "update_scaleset", "delete_scaleset", "delete_instance")
IMAGES = ("ubuntu:22.04", "ubuntu:24.04")
FLAVORS = ("small", "large")
EXTRA_SPECS: tuple[dict[str, Any], ...] = ({}, {"disk_gb": 20})
# GitHub's word that a set is gone takes two checks a quarter hour apart (ADR 0029), for a
# dropped live set and again for its kept delete: more passes than the changeover alone.
SETTLE_PASSES = 24
# Attempts at one name the checks recognise (a few label retries within one run).
ATTEMPTS = 8

FORCED_BUSY = "a busy runner forced off past the drain deadline"
FLIPPED_BACK = "a retired set flipped back mid-drain"
ORPHAN_SWEPT = "an orphan swept"
REFUSED_READ = "a refused read"
REFUSED_WRITE = "a refused write"
OUTAGE_MID_PASS = "an outage in the middle of a pass"
RESTART_AFTER_CREATE = "a restart between a create and its marker"
FINISHED_AT_GITHUB = "a runner removed once GitHub no longer listed it"
CORNERS = (
    FORCED_BUSY,
    FLIPPED_BACK,
    ORPHAN_SWEPT,
    REFUSED_READ,
    REFUSED_WRITE,
    OUTAGE_MID_PASS,
    RESTART_AFTER_CREATE,
    FINISHED_AT_GITHUB,
)
MIN_SHARE = 0.2
# The surge budget (one changeover at a time: every spec here has min idle 1) and the bound on
# writes per pass (ADR 0038): both reached by ordinary traffic with two specs.
SURGE = 1
MAX_WRITES = 6
MACHINE_SETTINGS = dataclasses.replace(SETTINGS, changeover_surge=SURGE, max_writes=MAX_WRITES)

PROFILES = {
    "default": settings(
        max_examples=500,
        stateful_step_count=40,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    ),
    "thorough": settings(
        max_examples=5000,
        stateful_step_count=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
}
PROFILE = PROFILES.get(os.environ.get("HYPOTHESIS_PROFILE", "default"), PROFILES["default"])
# A failure found by the default run is reported within about a minute (shrinking bounded).
SHRINK_BOUND = (
    SHRINK_SECONDS if os.environ.get("HYPOTHESIS_PROFILE", "default") != "thorough" else 300
)


@dataclasses.dataclass
class _Config:
    """What the operator configured for one spec."""

    labels: tuple[str, ...] = ("x64",)
    max_runners: int = 2
    image: str = IMAGES[0]
    flavor: str = FLAVORS[0]
    extra_specs: dict[str, Any] = dataclasses.field(default_factory=dict[str, Any])


@dataclasses.dataclass
class _Before:
    """GARM as a pass found it: what the checks after the pass compare with."""

    calls: int
    forced: int
    serving: dict[str, list[frozenset[str]]]
    enabled: set[int]
    # Disabled sets with runners, before / past their deadline (from GARM's disable time).
    draining: dict[int, set[str]]
    overdue: dict[int, set[str]]
    unmarked: set[int]
    orphans: set[int]
    blocked: set[int]
    # Runners whose jobs ended: GitHub no longer lists them, GARM may still show them busy.
    finished: set[str]


class _Tally:
    """How many examples reached each corner, over one run of the state machine."""

    def __init__(self) -> None:
        self.examples = 0
        self.reached: collections.Counter[str] = collections.Counter()

    def reset(self) -> None:
        self.examples = 0
        self.reached.clear()

    def record(self, reached: set[str]) -> None:
        self.examples += 1
        self.reached.update(reached)

    def shares(self) -> dict[str, float]:
        return {c: self.reached[c] / max(1, self.examples) for c in CORNERS}

    def summary(self) -> str:
        lines = [f"corners reached over {self.examples} examples:"]
        lines += [f"  {share:6.1%}  {corner}" for corner, share in self.shares().items()]
        return "\n".join(lines)


TALLY = _Tally()


class ScalesetMachine(RuleBasedStateMachine):
    """The charm reconciling two specs while the world changes under it."""

    def __init__(self) -> None:
        super().__init__()
        self.garm = MemoryGarm()
        self.configs = {logical: _Config() for logical in LOGICAL}
        self.configured: set[str] = set(LOGICAL)
        # Specs the operator broke (an empty flavor): Blocked, their scale sets left alone.
        self.broken: set[str] = set()
        # Hand-made scale sets that look like the charm's: a bare name and a lookalike.
        self.hand_made = {
            self._hand_made("a"),
            self._hand_made("b-deadbeef"),
        }
        self.hand_snapshot = self._hand_state()
        self.passes = 0
        # Where the latest pass's calls start in GARM's log (what an invariant's failure names).
        self.pass_start = 0
        self.reached: set[str] = set()
        self.github_answers = True
        # GitHub's first "missing" answers, kept between passes as the charm keeps them, and
        # the live sets GitHub still has that its next answer wrongly names missing.
        self.github_sightings: Sightings = {}
        self.wrongly_missing: set[int] = set()
        # Runners removed before their drain deadline because their jobs had ended at GitHub.
        self.finished_removed: set[str] = set()

    # Inputs --------------------------------------------------------------------------------

    @rule(logical=st.sampled_from(LOGICAL), labels=st.sampled_from(LABEL_SETS))
    def change_labels(self, logical: str, labels: tuple[str, ...]) -> None:
        """The operator edits a spec's labels (including back to an earlier set)."""
        self.configs[logical].labels = labels

    @rule(logical=st.sampled_from(LOGICAL), labels=st.sampled_from(LABEL_SETS))
    def change_labels_mid_job(self, logical: str, labels: tuple[str, ...]) -> None:
        """A job lands on the spec's serving set, then its labels change: the job drains."""
        for row in self._family(logical):
            if row.enabled:
                self.garm.start_job_when_ready(row.id)
        self.configs[logical].labels = labels

    @rule(
        logical=st.sampled_from(LOGICAL),
        maximum=st.integers(1, 3),
        image=st.sampled_from(IMAGES),
        flavor=st.sampled_from(FLAVORS),
        extra_specs=st.sampled_from(EXTRA_SPECS),
    )
    def change_mutable(
        self, logical: str, maximum: int, image: str, flavor: str, extra_specs: dict[str, Any]
    ) -> None:
        """The operator edits fields GARM changes in place."""
        config = self.configs[logical]
        config.max_runners, config.image, config.flavor = maximum, image, flavor
        config.extra_specs = dict(extra_specs)

    @rule(logical=st.sampled_from(LOGICAL), broken=st.booleans())
    def break_spec(self, logical: str, broken: bool) -> None:
        """The operator empties a spec's flavor (Blocked), or fixes it."""
        if broken:
            self.broken.add(logical)
        else:
            self.broken.discard(logical)

    @rule(logical=st.sampled_from(LOGICAL), labels=st.sampled_from(LABEL_SETS))
    def add_spec(self, logical: str, labels: tuple[str, ...]) -> None:
        """A configurator (back) on the relation."""
        if logical not in self.configured:
            self.configured.add(logical)
            self.configs[logical].labels = labels

    @rule(logical=st.sampled_from(LOGICAL))
    def remove_spec(self, logical: str) -> None:
        """A configurator leaves (after coming back, if it had); passes sweep its orphans."""
        if logical not in self.configured:
            self.configured.add(logical)
            self._pass()
        self.configured.discard(logical)
        self.garm.end_outage()
        self.garm.keep_deletes = False
        self.garm.refusals.clear()
        self._pass()
        self.garm.advance(61)
        self._pass()

    # Traffic -------------------------------------------------------------------------------

    @rule(data=st.data())
    def start_job(self, data: st.DataObject) -> None:
        """A job lands on one of the enabled scale sets (on an idle runner, once one reports)."""
        enabled = sorted(r.id for r in self.garm.rows.values() if r.enabled)
        if enabled:
            self.garm.start_job_when_ready(data.draw(st.sampled_from(enabled)))

    @rule(data=st.data())
    def finish_job(self, data: st.DataObject) -> None:
        """A job ends; its runner goes away (on a retired set once GARM's consolidation runs)."""
        busy = sorted(n for n, r in self.garm.runners.items() if r.runner_status == "active")
        if busy:
            self.garm.finish_job(data.draw(st.sampled_from(busy)))

    @rule(seconds=st.sampled_from([1, 20, 61, 600, 3 * 3600, 7 * 3600]))
    def time_passes(self, seconds: int) -> None:
        """Time passes; GARM's worker runs."""
        self.garm.advance(seconds)

    # The composite rules cost several passes each: once their corner is reached, a run
    # spends its steps elsewhere (the runtime stays within 1.5 times that of the plain rules).
    @precondition(lambda self: FORCED_BUSY not in self.reached)
    @rule(
        logical=st.sampled_from(LOGICAL),
        labels=st.sampled_from(LABEL_SETS),
        jobs=st.integers(1, 2),
        refuse_one=st.booleans(),
    )
    def drain_busy_past_deadline(
        self, logical: str, labels: tuple[str, ...], jobs: int, refuse_one: bool
    ) -> None:
        """Jobs run on a set whose labels change; they outlive the drain deadline.

        The next pass past the deadline forces them off; GARM may refuse one of the removes.
        """
        old = self._change_over_busy(logical, labels, jobs)
        if old is None:
            return
        self.garm.advance(SETTINGS.drain_timeout.total_seconds() + 1)
        if refuse_one:
            self.garm.refuse("delete_instance", 500)
        self._pass()

    @precondition(lambda self: FLIPPED_BACK not in self.reached)
    @rule(logical=st.sampled_from(LOGICAL), labels=st.sampled_from(LABEL_SETS))
    def flip_back_mid_drain(self, logical: str, labels: tuple[str, ...]) -> None:
        """The labels change back while the old set drains a job; passes follow within the grace.

        The re-enabled set has a runner online at once (its job), so only the grace since GARM
        re-enabled it keeps its successor serving.
        """
        original = self.configs[logical].labels
        if self._change_over_busy(logical, labels, 1) is None:
            return
        self.configs[logical].labels = original
        self._pass()
        self.garm.advance(20)
        self._pass()

    @precondition(lambda self: FINISHED_AT_GITHUB not in self.reached)
    @rule(logical=st.sampled_from(LOGICAL), labels=st.sampled_from(LABEL_SETS))
    def finish_job_on_retired_set(self, logical: str, labels: tuple[str, ...]) -> None:
        """A job on a set whose labels changed ends before GARM's consolidation; a pass follows.

        GitHub no longer lists the runner and answers the charm, so the runner goes at once
        (`github_unreachable` covers a GitHub that does not answer).
        """
        old = self._change_over_busy(logical, labels, 1)
        if old is None:
            return
        for name, runner in list(self.garm.runners.items()):
            if runner.scaleset_id == old.id:
                self.garm.finish_job(name)
        self.garm.advance(20)
        self.github_answers = True
        self._pass()

    # Faults --------------------------------------------------------------------------------

    @rule(operation=st.sampled_from(WRITES), status=st.sampled_from([400, 500]))
    def refuse_write(self, operation: str, status: int) -> None:
        """GARM refuses the next call of one write; a pass follows."""
        self.garm.refuse(operation, status)
        self._pass()

    @rule(logical=st.sampled_from(LOGICAL), status=st.sampled_from([400, 500]))
    def refuse_update(self, logical: str, status: int) -> None:
        """An operator edit, then GARM refuses the pass's first update."""
        config = self.configs[logical]
        config.max_runners = config.max_runners % 3 + 1
        self.garm.refuse("update_scaleset", status)
        self._pass()

    @rule(operation=st.sampled_from(READS[1:]), status=st.sampled_from([400, 500]))
    def refuse_read(self, operation: str, status: int) -> None:
        """GARM refuses the next call of one read (made when the pass needs it); a pass follows."""
        self.garm.refuse(operation, status)
        self._pass()

    @rule(status=st.sampled_from([400, 500]))
    def refuse_listing(self, status: int) -> None:
        """GARM refuses the scale-set list that starts every pass; a pass follows."""
        self.garm.refuse("list_scalesets", status)
        self._pass()

    @rule(on=st.booleans())
    def outage(self, on: bool) -> None:
        """GARM stops (or starts) answering."""
        if on:
            self.garm.outage = True
        else:
            self.garm.end_outage()

    @rule(on=st.booleans())
    def github_unreachable(self, on: bool) -> None:
        """GitHub (asked about retired sets' busy runners) stops or starts answering."""
        self.github_answers = not on

    @rule(logical=st.sampled_from(LOGICAL), calls=st.integers(1, 3))
    def outage_mid_pass(self, logical: str, calls: int) -> None:
        """An operator edit, then GARM goes away after answering `calls` calls of the pass."""
        config = self.configs[logical]
        config.max_runners = config.max_runners % 3 + 1
        self.garm.end_outage()
        self.garm.outage_after(calls)
        self._pass()
        self.garm.end_outage()

    @rule(on=st.booleans())
    def keep_deletes(self, on: bool) -> None:
        """GitHub fails deletes, so GARM answers 200 and keeps the scale set (C9)."""
        self.garm.keep_deletes = on

    @rule(on=st.booleans())
    def drop_gpu_label(self, on: bool) -> None:
        """GitHub (GHES without multi-label support) drops the `gpu` label at creation."""
        self.garm.drop_labels = {"gpu"} if on else set()

    @rule(on=st.booleans())
    def stuck_boots(self, on: bool) -> None:
        """New runners never come online (a broken image or flavor), or boot again."""
        self.garm.stuck_boots = on

    @rule(logical=st.sampled_from(LOGICAL))
    def github_leftover(self, logical: str) -> None:
        """GitHub keeps a scale set of the name the spec's next create would use (GARM's race)."""
        name = live_name(self._spec(logical))
        if name not in self.garm.names():
            self.garm.github_leftovers.add(name)

    @rule()
    def restart_garm(self) -> None:
        """GARM restarts: its database stays, refusals queued in memory are gone.

        Its workers create the scale sets GitHub dropped again at GitHub (B33).
        """
        self.garm.refusals.clear()
        self.garm.restart()
        self.garm.tick()

    @rule(logical=st.sampled_from(LOGICAL))
    def github_drops_live_set(self, logical: str) -> None:
        """GitHub deletes the spec's newest enabled scale set: its listener was offline for days.

        GARM shows nothing of it; only the charm's question to GitHub tells (ADR 0029).
        """
        enabled = [row for row in self._family(logical) if row.enabled]
        if enabled:
            self.garm.drop_at_github(max(enabled, key=lambda row: row.id).id)

    @rule(logical=st.sampled_from(LOGICAL))
    def github_answers_count_zero_once(self, logical: str) -> None:
        """GitHub's next lookup of the spec's enabled sets answers `count: 0`, though it has them.

        One such answer must replace nothing: the verdict takes two checks (ADR 0029).
        """
        self.wrongly_missing |= {row.id for row in self._family(logical) if row.enabled}

    @rule(logical=st.sampled_from(LOGICAL), labels=st.sampled_from(LABEL_SETS))
    def restart_charm(self, logical: str, labels: tuple[str, ...]) -> None:
        """The charm dies right after GARM answers a create, before the marker; then a new pass.

        The charm keeps nothing between passes, so the restarted charm's first pass must adopt
        the unmarked scale set from its name alone.
        """
        self.configured.add(logical)
        self.broken.discard(logical)
        config = self.configs[logical]
        fresh = [ls for ls in LABEL_SETS if self._name_for(logical, ls) not in self.garm.names()]
        if not fresh:
            return
        config.labels = labels if labels in fresh else fresh[0]
        self.garm.end_outage()
        self.garm.refusals.clear()
        self.garm.outage_after_call("create_scaleset")
        self._pass()
        self.garm.end_outage()
        self._pass()

    # The charm -----------------------------------------------------------------------------

    @rule()
    def reconcile_pass(self) -> None:
        """One hook: a reconcile pass at GARM's current time."""
        self._pass()

    @rule()
    def reconcile_tick(self) -> None:
        """The leader's timer: a minute and its jitter later, the same pass as any hook."""
        self.garm.advance(63)
        self._pass()

    @precondition(lambda self: self.passes > 0)
    @rule()
    def settle(self) -> None:
        """Inputs settle and faults stop: a bounded number of passes converges."""
        self._settle_and_check()

    def teardown(self) -> None:
        """Every run ends by settling; the corners it reached are counted."""
        self._settle_and_check()
        if currently_in_test_context():
            TALLY.record(self.reached)

    # Invariants ----------------------------------------------------------------------------

    @invariant()
    def nothing_with_runners_or_enabled_is_deleted(self) -> None:
        """GARM never had to refuse a delete: the charm only deletes empty, disabled sets."""
        refused = self.garm.deletes_refused_with_runners + self.garm.deletes_refused_enabled
        assert not refused, f"GARM refused deleting {refused}: {self._calls_about(*refused)}"

    @invariant()
    def no_forced_drain_before_deadline(self) -> None:
        """Every force-removal hit a set GARM had disabled the drain timeout before.

        Or a runner whose job had ended, which GitHub no longer listed.
        """
        for forced in self.garm.forced:
            disabled_at = self.garm.disabled_at(forced.scaleset_id, forced.call)
            call = self.garm.log[forced.call - 1]
            assert disabled_at is not None, f"{call} forced {forced} off an enabled set"
            early = forced.at < disabled_at + SETTINGS.drain_timeout
            assert not early or forced.name in self.finished_removed, (
                f"{call} forced {forced} off before the drain deadline"
            )

    @invariant()
    def refresh_removes_only_idle_runners(self) -> None:
        """A rolling refresh (an unforced remove) never touches a runner with a job."""
        assert all(removed.runner_status == "idle" for removed in self.garm.removed)

    @invariant()
    def hand_made_untouched(self) -> None:
        """Hand-made scale sets are never written to."""
        touched = [
            call
            for call in self.garm.log
            if call.operation in ("update_scaleset", "delete_scaleset")
            and call.args[0] in self.hand_made
        ]
        assert not touched, f"hand-made scale set written by {touched}"
        assert self._hand_state() == self.hand_snapshot, self._calls_about(*self.hand_made)

    # A pass and its checks ------------------------------------------------------------------

    def _pass(self) -> ReconcileReport | None:
        """One pass at GARM's time, checked against what GARM saw; None if it did not finish."""
        garm = self.garm
        before = self._before()
        flying_before, held_before = self._in_flight()
        self.pass_start = before.calls
        self.passes += 1
        report = None
        check = ConfirmedCheck(
            self._github_scalesets(), dict(self.github_sightings), garm.now, CHECK_EVERY
        )
        dropped_before = {row.id for row in garm.rows.values() if row.dropped_at_github}
        # Named missing by the check before this one too: a second answer may confirm it.
        dropped_before |= set(self.github_sightings)
        try:
            report = reconcile(
                garm,
                self._specs(),
                now=garm.now,
                settings=MACHINE_SETTINGS,
                sweep_orphans=True,
                finished_at_github=self._github(),
                missing_at_github=check,
                sleep=garm.advance,
            )
            self.github_sightings = check.sightings
            self._check_replaced_only_if_dropped(report, dropped_before)
            if dropped_and_kept(report):
                # What the charm does with the answer: restart GARM (charm_reconcile).
                garm.restart()
        except GarmUnreachable:
            assert garm.outage
            _corner(self, "a pass during an outage")
        except GarmApiError:
            self._check_refused_read_ends_pass(garm.log[before.calls :])
        calls = garm.log[before.calls :]
        early = {f.name for f in garm.forced[before.forced :]} & before.finished
        if early:
            _corner(self, FINISHED_AT_GITHUB)
        self.finished_removed |= early
        self._check_no_label_gap(before.serving)
        self._check_handover_waited(before.enabled)
        self._check_draining_untouched(before, calls)
        self._check_blocked_untouched(before, calls)
        self._check_writes_bounded(calls)
        self._check_surge_budget(flying_before, held_before)
        if report is not None and not report.deferred_writes:
            self._check_overdue_forced(before, calls)
            self._check_counts(report, calls)
            check_blocked_text(report)
        self._tally(before, calls, report)
        return report

    def _check_replaced_only_if_dropped(
        self, report: ReconcileReport, dropped_before: set[int]
    ) -> None:
        """A live set is replaced as "dropped by GitHub" only if GitHub really dropped it.

        Or if GitHub named it missing at the check before as well: two wrong answers a check
        apart are what the charm takes for GitHub's word (ADR 0029); one never is.
        """
        for spec in report.specs:
            if not spec.missing_at_github:
                continue
            family = {row.id for row in self._family(spec.logical)}
            assert family & dropped_before, (
                f"{spec.logical}: replaced as dropped by GitHub, which still has it"
            )

    def _pass_writes(self) -> list[Call]:
        """The writes of the latest pass: what a check after the pass blames."""
        return [c for c in self.garm.log[self.pass_start :] if c.operation in WRITE_OPERATIONS]

    def _calls_about(self, *subjects: object) -> list[Call]:
        """The latest pass's calls naming one of `subjects` (scale-set ids, names, runners).

        Names resolve to their scale sets' ids too: GARM's calls carry ids.
        """
        wanted = set(subjects) | {
            row.id for row in self.garm.rows.values() if row.name in subjects
        }
        return [c for c in self.garm.log[self.pass_start :] if c.args and c.args[0] in wanted]

    def _before(self) -> _Before:
        garm = self.garm
        draining: dict[int, set[str]] = {}
        overdue: dict[int, set[str]] = {}
        finished = {n for n, r in garm.runners.items() if r.job_finished_at is not None}
        for row in garm.rows.values():
            runners = {r.name: r for r in garm.runners.values() if r.scaleset_id == row.id}
            disabled_at = garm.disabled_at(row.id)
            if disabled_at is None or not runners:
                continue
            if garm.now < disabled_at + SETTINGS.drain_timeout:
                # A set whose every job ended drains nothing: the charm may empty and delete it.
                if set(runners) - finished:
                    draining[row.id] = set(runners)
            else:
                overdue[row.id] = {n for n, r in runners.items() if r.status in REMOVABLE}
        unconfigured = [n for n in LOGICAL if n not in self.configured]
        return _Before(
            calls=len(garm.log),
            forced=len(garm.forced),
            serving=self._serving(),
            enabled={r.id for r in garm.rows.values() if r.enabled},
            draining=draining,
            overdue=overdue,
            unmarked={
                r.id
                for r in garm.rows.values()
                if r.id not in self.hand_made and not r.extended_state
            },
            orphans={r.id for n in unconfigured for r in self._family(n) if r.extended_state},
            blocked={r.id for n in self._blocked() for r in self._family(n)},
            finished=finished,
        )

    def _check_writes_bounded(self, calls: list[Call]) -> None:
        """No pass sends GARM more writes than its bound."""
        writes = [c for c in calls if c.operation in WRITE_OPERATIONS]
        assert len(writes) <= MAX_WRITES, [(c.operation, c.args[:1], c.refused) for c in writes]

    def _check_surge_budget(self, flying_before: set[str], held_before: int) -> None:
        """A pass starts a changeover only within the surge budget, as GARM shows it after.

        In flight, as GARM shows it: a spec with an enabled scale set of its wanted labels and
        an enabled one of others; each holds its min idle (1), and runners of disabled sets
        without a job hold one each. A changeover larger than the budget may start alone.
        """
        flying, held = self._in_flight()
        started = flying - flying_before
        if started:
            alone = held_before == 0 and len(started) == 1
            assert held <= SURGE or alone, (
                f"started {sorted(started)} with {held} extra runners held (budget {SURGE}), "
                f"by {self._pass_writes()}"
            )

    def _in_flight(self) -> tuple[set[str], int]:
        """The specs in flight and the extra runners held, from GARM's state alone."""
        flying: set[str] = set()
        held = 0
        for logical in self._valid():
            names = {live_name(self._spec(logical), attempt=n) for n in range(ATTEMPTS)}
            family = self._family(logical)
            enabled = [r for r in family if r.enabled]
            if any(r.name in names for r in enabled) and any(r.name not in names for r in enabled):
                flying.add(logical)
                held += 1
            disabled = {r.id for r in family if not r.enabled}
            held += sum(
                1
                for r in self.garm.runners.values()
                if r.scaleset_id in disabled and r.runner_status != "active"
            )
        return flying, held

    def _check_refused_read_ends_pass(self, calls: list[Call]) -> None:
        """A refused read ends the pass; before any write unless it was the confirming list."""
        assert calls, "the pass raised a refusal GARM never sent"
        last = calls[-1]
        assert last.refused is not None, last
        assert last.operation in READS, last
        if last.operation != "list_scalesets" or len(calls) == 1:
            assert not [c for c in calls if c.operation in WRITE_OPERATIONS], calls

    def _check_no_label_gap(self, before: dict[str, list[frozenset[str]]]) -> None:
        """Every label set that served keeps being served where it overlaps the desired one."""
        after = self._serving()
        for logical in self._valid():
            wanted = normalise_labels(self.configs[logical].labels)
            for served in before.get(logical, []):
                shared = served & wanted
                assert any(shared <= now for now in after[logical]), (
                    f"{logical}: labels {sorted(shared)} lost; before {before[logical]}, "
                    f"after {after[logical]}; by {self._pass_writes()}"
                )

    def _check_handover_waited(self, enabled_before: set[int]) -> None:
        """A scale set is retired only once its replacement is ready.

        Ready, as GARM saw it: all labels, enabled for the grace since GARM (re-)enabled it,
        and (min-idle > 0 here) a runner online.
        """
        garm = self.garm
        retired = {i for i in enabled_before if i in garm.rows and not garm.rows[i].enabled}
        for logical in self._valid():
            family = self._family(logical)
            for gone in (row for row in family if row.id in retired):
                needed = self._needed_from_replacement(logical, gone)
                assert any(
                    row.enabled
                    and needed <= self._labels(row)
                    and garm.enabled_since(row.id) + SETTINGS.handover_grace <= garm.now
                    and self._online(row)
                    for row in family
                ), (
                    f"{logical}: {gone.name} retired before a replacement was ready, by "
                    f"{self._calls_about(gone.id)}"
                )

    def _check_draining_untouched(self, before: _Before, calls: list[Call]) -> None:
        """A pass writes nothing to a draining set before its deadline, except re-enabling it.

        Unless GARM emptied the set during the pass: while a pass waits for GARM to remove a
        finished runner (the `sleep` seam advances GARM's clock), GARM's worker also removes
        idle runners of disabled sets, and an empty set may then be deleted.
        """
        for call in calls:
            draining = before.draining.get(call.args[0]) if call.args else None
            if draining is not None and call.operation in ("update_scaleset", "delete_scaleset"):
                left = draining & set(self.garm.runners)
                written = call.operation == "delete_scaleset" or call.args[1].enabled is not True
                assert not (written and left), f"draining set written: {call}; runners {left}"
            if call.operation == "delete_instance" and call.args[0] not in before.finished:
                assert not any(call.args[0] in names for names in before.draining.values()), (
                    f"runner of a draining set removed: {call}"
                )

    def _check_blocked_untouched(self, before: _Before, calls: list[Call]) -> None:
        """Bad input blocks its spec; nothing of that spec's is written, running or not."""
        runners = {n for n, r in self.garm.runners.items() if r.scaleset_id in before.blocked}
        for call in calls:
            if call.operation in ("update_scaleset", "delete_scaleset"):
                assert call.args[0] not in before.blocked, f"blocked spec's set written: {call}"
            if call.operation == "delete_instance":
                assert call.args[0] not in runners, f"blocked spec's runner removed: {call}"

    def _check_overdue_forced(self, before: _Before, calls: list[Call]) -> None:
        """Past the deadline, a finished pass forces off every runner of the set.

        Unless GARM refused another call in the pass (that owner's rest is skipped) or the
        pass re-enabled the set (its labels were wanted back).
        """
        if any(c.refused is not None and c.operation != "delete_instance" for c in calls):
            return
        removed = {c.args[0] for c in calls if c.operation == "delete_instance"}
        for scaleset_id, names in before.overdue.items():
            if scaleset_id in before.blocked or self.garm.disabled_at(scaleset_id) is None:
                continue
            assert names <= removed, f"runners {sorted(names - removed)} not forced off"

    def _check_counts(self, report: ReconcileReport, calls: list[Call]) -> None:
        """The report counts exactly the requests and writes GARM received."""
        writes = [c for c in calls if c.operation in WRITE_OPERATIONS]
        assert (report.requests, report.writes) == (len(calls), len(writes)), calls

    def _tally(self, before: _Before, calls: list[Call], report: ReconcileReport | None) -> None:
        """Count the corners this pass reached, judged from what GARM saw."""
        garm = self.garm
        forced = garm.forced[before.forced :]
        if any(f.runner_status == "active" and f.name not in before.finished for f in forced):
            _corner(self, FORCED_BUSY)
        if any(garm.rows[i].enabled for i in before.draining if i in garm.rows):
            _corner(self, FLIPPED_BACK)
        if before.orphans - set(garm.rows):
            _corner(self, ORPHAN_SWEPT)
        if any(c.refused is not None and c.operation in READS for c in calls):
            _corner(self, REFUSED_READ)
        if any(c.refused is not None and c.operation in WRITES for c in calls):
            _corner(self, REFUSED_WRITE)
        if report is None and garm.outage and calls:
            _corner(self, OUTAGE_MID_PASS)
        stamped = {
            c.args[0]
            for c in calls
            if c.operation == "update_scaleset" and c.args[1].extended_state and not c.refused
        }
        if stamped & before.unmarked:
            _corner(self, RESTART_AFTER_CREATE)

    # Settling ------------------------------------------------------------------------------

    def _settle_and_check(self) -> None:
        garm = self.garm
        garm.end_outage()
        garm.keep_deletes = False
        garm.refusals.clear()
        garm.drop_labels = set()
        garm.stuck_boots = False
        # A set GitHub dropped is deleted only once GitHub answers the charm (ADR 0029).
        self.github_answers = True
        for name in [n for n, r in garm.runners.items() if r.runner_status == "active"]:
            garm.finish_job(name)
        if any(r.job_finished_at is not None for r in garm.runners.values()):
            # Jobs that ended on retired sets are noticed only by GARM's consolidation.
            garm.advance(CONSOLIDATION_SECONDS)
        report = None
        problems = ["no pass yet"]
        for _ in range(SETTLE_PASSES):
            garm.advance(self._until_next_step(report))
            report = self._pass()
            assert report is not None
            problems = self._unsettled(report)
            if not problems:
                break
        assert not problems, problems
        calls = len(garm.log)
        garm.advance(1)
        self._pass()
        assert not [c for c in garm.log[calls:] if c.operation in WRITE_OPERATIONS]

    def _unsettled(self, report: ReconcileReport) -> list[str]:
        """What GARM shows that the specs do not ask for (empty once settled)."""
        problems: list[str] = []
        warnings = " ".join(w for spec in report.specs for w in spec.warnings)
        for logical in LOGICAL:
            family = self._family(logical)
            if logical not in self.configured:
                # An unmarked one (its create's marker never written) is left as hand-made.
                problems += [f"orphan {r.name} left" for r in family if r.extended_state]
            elif logical in self.broken:
                if report.spec(logical).phase is not Phase.BLOCKED:
                    problems.append(f"{logical}: broken but {report.spec(logical).phase}")
            else:
                problems += self._unsettled_spec(logical, family, warnings)
        return problems

    def _unsettled_spec(self, logical: str, family: list[Any], warnings: str) -> list[str]:
        """Exactly one scale set of the spec, enabled and as the spec says."""
        spec = self._spec(logical)
        names = {live_name(spec, attempt=n) for n in range(ATTEMPTS)}
        live = [r for r in family if r.extended_state and r.name in names]
        if len(live) != 1:
            return [f"{logical}: live sets {[r.name for r in live]}"]
        row = live[0]
        got = (
            self._labels(row),
            row.enabled,
            row.min_idle_runners,
            row.max_runners,
            row.flavor,
            row.image,
            row.extra_specs or {},
        )
        wanted = (
            normalise_labels(spec.labels),
            True,
            spec.min_idle_runners,
            spec.max_runners,
            spec.flavor,
            spec.image,
            dict(spec.extra_specs),
        )
        problems = [f"{logical}: {row.name} is {got}, wanted {wanted}"] if got != wanted else []
        if row.dropped_at_github:
            problems.append(f"{logical}: {row.name} serves nothing: GitHub dropped it")
        # Known limit: a generation created with labels GitHub dropped, whose marker write then
        # failed and whose spec changed before the next pass, cannot be told from a hand-made
        # one; it is left alone and every report names it.
        for other in family:
            if other is row:
                continue
            if other.extended_state or f"{other.name!r} looks like a generation" not in warnings:
                problems.append(f"{logical}: {other.name} left")
        return problems

    def _until_next_step(self, report: ReconcileReport | None) -> float:
        """A minute, or longer when a kept delete or a further attempt is put off."""
        kept = [] if report is None else [p for s in report.specs for p in s.predecessors]
        kept += [] if report is None else report.orphans
        retries = [p.delete_retry_at for p in kept if p.delete_retry_at is not None]
        if report is not None:
            retries += [s.relabel_at for s in report.specs if s.relabel_at is not None]
        # GitHub's first answer that a set is gone is confirmed a check later (ADR 0029).
        retries += [first + CHECK_EVERY for first in self.github_sightings.values()]
        if not retries:
            return 61
        return max(61, (min(retries) - self.garm.now).total_seconds() + 1)

    # Helpers -------------------------------------------------------------------------------

    def _change_over_busy(self, logical: str, labels: tuple[str, ...], jobs: int) -> Any | None:
        """Serve `logical`, run `jobs` jobs on its set, change its labels until that set retires.

        Faults that would stop the changeover end first. Returns the retired set, or None if it
        did not retire within a few passes.
        """
        garm = self.garm
        garm.end_outage()
        garm.refusals.clear()
        garm.stuck_boots = False
        garm.drop_labels = set()
        self.configured.add(logical)
        self.broken.discard(logical)
        old = None
        for _ in range(4):
            self._pass()
            old = self._serving_row(logical)
            if old is not None:
                break
            garm.advance(61)
        if old is None:
            return None
        for _ in range(jobs):
            garm.start_job_when_ready(old.id)
        wanted = normalise_labels(self.configs[logical].labels)
        if normalise_labels(labels) == wanted:
            labels = next(ls for ls in LABEL_SETS if normalise_labels(ls) != wanted)
        self.configs[logical].labels = labels
        self._pass()
        for _ in range(3):
            # Two runs of GARM's worker: the new set's runner comes up, then reports idle.
            garm.advance(31)
            garm.advance(30)
            self._pass()
            if old.id not in garm.rows or not garm.rows[old.id].enabled:
                break
        return old if garm.disabled_at(old.id) is not None and old.id in garm.rows else None

    def _serving_row(self, logical: str) -> Any | None:
        """The spec's enabled set with all its labels and a runner online, if there is one."""
        wanted = normalise_labels(self.configs[logical].labels)
        return next(
            (
                r
                for r in self._family(logical)
                if r.enabled and self._labels(r) == wanted and self._online(r)
            ),
            None,
        )

    def _valid(self) -> list[str]:
        return [n for n in LOGICAL if n in self.configured and n not in self.broken]

    def _blocked(self) -> list[str]:
        return [n for n in LOGICAL if n in self.configured and n in self.broken]

    def _github(self) -> FinishedAtGithub:
        """GitHub as the charm asks it: the in-memory GARM's runners, or no answer."""
        if self.github_answers:
            return self.garm.ask_github()
        return lambda busy: frozenset()

    def _github_scalesets(self) -> MissingAtGithub:
        """GitHub as the charm asks it about scale sets: the dropped ones, or no answer.

        A wrong answer (`github_answers_count_zero_once`) names its sets once.
        """
        asked = self.garm.ask_github_about_scalesets()

        def answer(refs: Sequence[GithubScaleSetRef]) -> frozenset[int]:
            wrong = frozenset(r.scaleset_id for r in refs if r.scaleset_id in self.wrongly_missing)
            self.wrongly_missing.clear()
            if not self.github_answers:
                return frozenset()
            return asked(refs) | wrong

        return answer

    def _specs(self) -> list[ScalesetSpec]:
        return [self._spec(n) for n in LOGICAL if n in self.configured]

    def _spec(self, logical: str) -> ScalesetSpec:
        config = self.configs[logical]
        return make_spec(
            logical,
            config.labels,
            max_runners=config.max_runners,
            min_idle_runners=1,
            image=config.image,
            flavor="" if logical in self.broken else config.flavor,
            extra_specs=dict(config.extra_specs),
        )

    def _name_for(self, logical: str, labels: tuple[str, ...]) -> str:
        return live_name(make_spec(logical, labels))

    def _hand_made(self, name: str) -> int:
        params = desired_create(make_spec(name), name)
        created = self.garm.create_scaleset(EntityKind.REPOSITORY, REPO_ID, params)
        return created.id

    def _hand_state(self) -> list[dict[str, Any]]:
        return [self.garm.rows[i].__dict__.copy() for i in sorted(self.hand_made)]

    def _family(self, logical: str) -> list[Any]:
        return [
            row
            for row in self.garm.rows.values()
            if row.id not in self.hand_made and row.name.startswith(f"{logical}-")
        ]

    def _serving(self) -> dict[str, list[frozenset[str]]]:
        return {
            logical: [self._labels(row) for row in self._family(logical) if row.enabled]
            for logical in LOGICAL
        }

    def _labels(self, row: Any) -> frozenset[str]:
        return frozenset(self.garm.tags[t][1].lower() for t in row.tag_ids)

    def _needed_from_replacement(self, logical: str, gone: Any) -> frozenset[str]:
        """The labels a replacement must have before `gone` may be retired.

        Every label wanted, except for an earlier attempt at the wanted labels that GitHub
        dropped some of (its name says so): a later attempt serving at least its labels may
        replace it.
        """
        wanted = normalise_labels(self.configs[logical].labels)
        spec = self._spec(logical)
        if gone.name in {live_name(spec, attempt=n) for n in range(ATTEMPTS)}:
            return self._labels(gone) & wanted
        return frozenset(wanted)

    def _online(self, row: Any) -> bool:
        """Whether a runner of `row` is online (every spec here has min-idle 1)."""
        return any(
            runner.scaleset_id == row.id
            and runner.status == "running"
            and runner.runner_status in ("idle", "active")
            for runner in self.garm.runners.values()
        )


def check_blocked_text(report: ReconcileReport) -> None:
    """The Blocked text fits, names at least one entry, and counts those it does not name.

    Entries are told apart by how each starts (their ends may be cut to fit).
    """
    starts = [f"{short_name(s.logical)}: " for s in report.specs if s.phase is Phase.BLOCKED]
    starts += [f.text()[:30] for f in report.failures if not f.retry]
    starts += [
        f"GARM kept the old scale set of {short_name(owner)} after"
        for owner, kept in [
            *((s.logical, p) for s in report.specs for p in s.predecessors),
            *((o.name, o) for o in report.orphans),
        ]
        if kept.delete_failures >= REPEATED_DELETE_FAILURES
    ]
    text = blocked_message(report)
    assert len(text) <= STATUS_LIMIT, text
    if not starts:
        assert text == ""
        return
    kinds = collections.Counter(starts)
    named = sum(min(count, text.count(start)) for start, count in kinds.items())
    assert named >= 1, (text, starts)
    more = re.search(r"; \+(\d+) more$", text)
    assert (int(more.group(1)) if more else 0) == len(starts) - named, (text, starts)


def _corner(machine: ScalesetMachine, name: str) -> None:
    """Count a corner (`pytest --hypothesis-show-statistics` shows the events too)."""
    machine.reached.add(name)
    if currently_in_test_context():
        event(f"corner: {name}")


class TestScalesetChangeover(ScalesetMachine.TestCase):
    """The state machine's run, then the share of examples that reached each corner."""

    settings = PROFILE

    def runTest(self) -> None:  # noqa: N802 (unittest's name)
        """Run the machine; fail if a corner was reached in fewer than `MIN_SHARE` of examples."""
        TALLY.reset()
        with shrinking_bounded(SHRINK_BOUND):
            super().runTest()
        print(f"\n{TALLY.summary()}")
        rare = {c: s for c, s in TALLY.shares().items() if s < MIN_SHARE}
        assert TALLY.examples, "no example ran"
        assert not rare, f"corners reached too rarely:\n{TALLY.summary()}"

    # So hypothesis's pytest plugin reports this test's statistics, as for the base runTest.
    runTest.is_hypothesis_test = True  # type: ignore[attr-defined]


def test_changeover_settles_after_a_flip_back_and_forth():
    """Arrange: a machine. Act: a fixed run of label flips, jobs and passes.

    Assert: the machine's invariants hold and it settles (a smoke run of the machine itself).
    """
    machine = ScalesetMachine()
    machine.reconcile_pass()
    machine.time_passes(61)
    machine.change_labels("a", ("x64", "gpu"))
    machine.reconcile_pass()
    machine.garm.start_job_when_ready(next(r.id for r in machine._family("a") if r.enabled))
    machine.time_passes(61)
    machine.reconcile_pass()
    machine.change_labels("a", ("x64",))
    machine.reconcile_pass()
    machine.time_passes(61)
    machine.reconcile_pass()
    machine.nothing_with_runners_or_enabled_is_deleted()
    machine.no_forced_drain_before_deadline()
    machine.hand_made_untouched()
    machine.teardown()


def test_blocked_text_counts_the_entries_it_does_not_name():
    """Arrange: three specs with an empty flavor (more Blocked entries than the text names).

    Act: a pass. Assert: the machine's Blocked-text check holds: one fits, then `+2 more`.
    """
    garm = MemoryGarm()
    specs = [make_spec(name, flavor="") for name in ("a", "b", "c")]

    report = reconcile(garm, specs, now=garm.now, settings=SETTINGS, sweep_orphans=True)

    check_blocked_text(report)
    assert blocked_message(report).endswith("; +2 more")
