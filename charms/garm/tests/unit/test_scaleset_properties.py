"""Properties of the scale-set changeover under random changes, traffic, faults and restarts.

A hypothesis state machine drives reconcile passes against the in-memory GARM and checks after
every step: no label gap, no hand-over before the replacement has a runner online, no delete of
a scale set with runners (or enabled), no runner removed before its drain deadline unless GitHub
no longer listed it (its job had ended; GitHub answers or not at random), hand-made scale sets
untouched; and, once inputs settle and faults stop (GitHub accepts every label again, though it
keeps the leftover scale sets of GARM's race, whose names the charm then avoids),
convergence to exactly the live scale sets within a bounded number of passes, after which a
pass writes nothing.

Examples: 500 by default (`tox -e unit`); `HYPOTHESIS_PROFILE=thorough` runs 5,000 longer ones.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from memory_garm import CONSOLIDATION_SECONDS, REPO_ID, MemoryGarm
from scaleset_fixtures import SETTINGS, make_spec

from garm_api import GarmUnreachable
from garm_models import EntityKind, normalise_labels
from scaleset_marker import parse_marker
from scaleset_naming import live_name
from scaleset_plan import desired_create
from scaleset_reconciler import FinishedAtGithub, ReconcileReport, reconcile
from scaleset_spec import ScalesetSpec

LOGICAL = ("a", "b")
LABEL_SETS = (("x64", "gpu"), ("arm64", "GPU"), ("gpu",), ("x64",), ("X64", "Linux"))
OPERATIONS = ("create_scaleset", "update_scaleset", "delete_scaleset", "delete_instance")
SETTLE_PASSES = 12

PROFILES = {
    "default": settings(
        max_examples=500,
        stateful_step_count=40,
        deadline=None,
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


class ScalesetMachine(RuleBasedStateMachine):
    """The charm reconciling two specs while the world changes under it."""

    def __init__(self) -> None:
        super().__init__()
        self.garm = MemoryGarm()
        self.labels: dict[str, tuple[str, ...]] = {"a": ("x64",), "b": ("x64",)}
        self.max_runners = {"a": 2, "b": 2}
        # Hand-made scale sets that look like the charm's: a bare name and a lookalike.
        self.hand_made = {
            self._hand_made("a"),
            self._hand_made("b-deadbeef"),
        }
        self.hand_snapshot = self._hand_state()
        self.serving: dict[str, list[frozenset[str]]] = {}
        self.passes = 0
        self.github_answers = True
        # Runners removed before their drain deadline because their jobs had ended.
        self.finished_removed: set[str] = set()

    # Inputs --------------------------------------------------------------------------------

    @rule(logical=st.sampled_from(LOGICAL), labels=st.sampled_from(LABEL_SETS))
    def change_labels(self, logical: str, labels: tuple[str, ...]) -> None:
        """The operator edits a spec's labels (including back to an earlier set)."""
        self.labels[logical] = labels

    @rule(logical=st.sampled_from(LOGICAL), labels=st.sampled_from(LABEL_SETS))
    def change_labels_mid_job(self, logical: str, labels: tuple[str, ...]) -> None:
        """A job lands on the spec's serving set, then its labels change: the job drains."""
        for row in self._family(logical):
            if row.enabled:
                self.garm.start_job_when_ready(row.id)
        self.labels[logical] = labels

    @rule(logical=st.sampled_from(LOGICAL), maximum=st.integers(1, 3))
    def change_max_runners(self, logical: str, maximum: int) -> None:
        """The operator edits a mutable field."""
        self.max_runners[logical] = maximum

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

    # Faults --------------------------------------------------------------------------------

    @rule(operation=st.sampled_from(OPERATIONS), status=st.sampled_from([400, 500]))
    def refuse_next(self, operation: str, status: int) -> None:
        """GARM refuses the next call of one operation."""
        self.garm.refuse(operation, status)

    @rule(on=st.booleans())
    def outage(self, on: bool) -> None:
        """GARM stops (or starts) answering."""
        self.garm.outage = on

    @rule(on=st.booleans())
    def github_unreachable(self, on: bool) -> None:
        """GitHub (asked about retired sets' busy runners) stops or starts answering."""
        self.github_answers = not on

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
        """GARM restarts: its database stays, refusals queued in memory are gone."""
        self.garm.refusals.clear()
        self.garm.tick()

    @rule()
    def restart_charm(self) -> None:
        """The charm restarts: it keeps nothing between passes, so there is nothing to lose.

        The next pass is a fresh call with no state carried over, exactly as after a restart.
        """
        self.reconcile_pass()

    # The charm -----------------------------------------------------------------------------

    @rule()
    def reconcile_pass(self) -> None:
        """One hook: a reconcile pass at GARM's current time."""
        before = self._serving()
        enabled_before = {r.id for r in self.garm.rows.values() if r.enabled}
        forced_before = len(self.garm.forced)
        ended = {name for name, r in self.garm.runners.items() if r.job_finished_at is not None}
        self.passes += 1
        try:
            reconcile(
                self.garm,
                self._specs(),
                now=self.garm.now,
                settings=SETTINGS,
                sweep_orphans=True,
                finished_at_github=self._github(),
                sleep=self.garm.advance,
            )
        except GarmUnreachable:
            assert self.garm.outage
            _corner("a pass during an outage")
        removed = {name for name, *_ in self.garm.forced[forced_before:]} & ended
        if removed:
            _corner("a runner removed once GitHub no longer listed it")
        self.finished_removed |= removed
        self._check_no_label_gap(before)
        self._check_handover_waited(enabled_before)
        self._tally_corners(forced_before)

    def _tally_corners(self, forced_before: int) -> None:
        """Count the corners this pass reached (`pytest --hypothesis-show-statistics`)."""
        garm = self.garm
        if len(garm.forced) > forced_before:
            _corner("a busy runner removed (its job ended at GitHub, or the drain deadline)")
        retired = {r.id for r in garm.rows.values() if not r.enabled}
        if any(
            r.scaleset_id in retired and r.runner_status == "active" for r in garm.runners.values()
        ):
            _corner("a pass with a job on a retired set")

    @rule()
    def reconcile_tick(self) -> None:
        """The leader's timer: a minute and its jitter later, the same pass as any hook."""
        self.garm.advance(63)
        self.reconcile_pass()

    @precondition(lambda self: self.passes > 0)
    @rule()
    def settle(self) -> None:
        """Inputs settle and faults stop: a bounded number of passes converges."""
        self._settle_and_check()

    def teardown(self) -> None:
        """Every run ends by settling."""
        self._settle_and_check()

    # Invariants ----------------------------------------------------------------------------

    @invariant()
    def nothing_with_runners_or_enabled_is_deleted(self) -> None:
        """GARM never had to refuse a delete: the charm only deletes empty, disabled sets."""
        assert self.garm.deletes_refused_with_runners == []
        assert self.garm.deletes_refused_enabled == []

    @invariant()
    def no_forced_drain_before_deadline(self) -> None:
        """A runner was removed before its set's drain deadline only once its job had ended."""
        for name, _, when, state in self.garm.forced:
            marker = parse_marker(state)
            assert marker is not None
            assert marker.retired_at is not None
            early = when < marker.retired_at + SETTINGS.drain_timeout
            assert not early or name in self.finished_removed, f"{name} removed mid-job"

    @invariant()
    def hand_made_untouched(self) -> None:
        """Hand-made scale sets are never written to."""
        touched = {
            call[1][0]
            for call in self.garm.writes()
            if call[0] in ("update_scaleset", "delete_scaleset")
        }
        assert not touched & self.hand_made
        assert self._hand_state() == self.hand_snapshot

    # Helpers -------------------------------------------------------------------------------

    def _github(self) -> FinishedAtGithub:
        """GitHub as the charm asks it: the memory GARM's runners, or no answer."""
        if self.github_answers:
            return self.garm.ask_github()
        return lambda busy: frozenset()

    def _specs(self) -> list[ScalesetSpec]:
        return [self._spec(n) for n in LOGICAL]

    def _spec(self, logical: str) -> ScalesetSpec:
        return make_spec(
            logical,
            self.labels[logical],
            max_runners=self.max_runners[logical],
            min_idle_runners=1,
        )

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

    def _check_no_label_gap(self, before: dict[str, list[frozenset[str]]]) -> None:
        """Every label set that served keeps being served where it overlaps the desired one."""
        after = self._serving()
        for logical in LOGICAL:
            wanted = normalise_labels(self.labels[logical])
            for served in before[logical]:
                shared = served & wanted
                assert any(shared <= now for now in after[logical]), (
                    f"{logical}: labels {sorted(shared)} lost; before {before[logical]}, "
                    f"after {after[logical]}"
                )

    def _check_handover_waited(self, enabled_before: set[int]) -> None:
        """A scale set is retired only once its replacement is ready.

        Ready: all labels, past the grace, and (min-idle > 0 here) a runner online.
        """
        garm = self.garm
        retired = {i for i in enabled_before if i in garm.rows and not garm.rows[i].enabled}
        for logical in LOGICAL:
            family = self._family(logical)
            if not retired & {row.id for row in family}:
                continue
            for gone in (row for row in family if row.id in retired):
                needed = self._needed_from_replacement(logical, gone)
                assert any(
                    row.enabled
                    and needed <= self._labels(row)
                    and self._serving_since(row) + SETTINGS.handover_grace <= garm.now
                    and self._online(row)
                    for row in family
                ), f"{logical}: {gone.name} retired before a replacement was ready"

    def _needed_from_replacement(self, logical: str, gone: Any) -> frozenset[str]:
        """The labels a replacement must have before `gone` may be retired.

        Every label wanted, except for an earlier attempt at the wanted labels that GitHub
        dropped some of: a later attempt serving at least its labels may replace it.
        """
        wanted = normalise_labels(self.labels[logical])
        marker = parse_marker(gone.extended_state)
        attempt = marker.attempt if marker is not None else 0
        if gone.name == live_name(self._spec(logical), attempt=attempt):
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

    def _serving_since(self, row: Any) -> datetime.datetime:
        marker = parse_marker(row.extended_state)
        if marker is not None and marker.enabled_at is not None:
            return max(row.created_at, marker.enabled_at)
        return row.created_at

    def _until_next_step(self, report: ReconcileReport | None) -> float:
        """A minute, or longer when a kept delete or a further attempt is put off."""
        kept = [] if report is None else [p for s in report.specs for p in s.predecessors]
        kept += [] if report is None else report.orphans
        retries = [p.delete_retry_at for p in kept if p.delete_retry_at is not None]
        if report is not None:
            retries += [s.relabel_at for s in report.specs if s.relabel_at is not None]
        if not retries:
            return 61
        return max(61, (min(retries) - self.garm.now).total_seconds() + 1)

    def _settle_and_check(self) -> None:
        garm = self.garm
        garm.outage = False
        garm.keep_deletes = False
        garm.refusals.clear()
        garm.drop_labels = set()
        garm.stuck_boots = False
        for name in [n for n, r in garm.runners.items() if r.runner_status == "active"]:
            garm.finish_job(name)
        if any(r.job_finished_at is not None for r in garm.runners.values()):
            # Jobs that ended on retired sets are noticed only by GARM's consolidation.
            garm.advance(CONSOLIDATION_SECONDS)
        report = None
        for _ in range(SETTLE_PASSES):
            garm.advance(self._until_next_step(report))
            report = reconcile(
                garm, self._specs(), now=garm.now, settings=SETTINGS, sweep_orphans=True
            )
            if report.converged:
                break
        assert report is not None
        # Dropped labels recover by themselves through a further attempt: no spec stays blocked.
        assert report.converged, report
        wanted = {spec.live_name for spec in report.specs}
        owned = {r.name for r in garm.rows.values() if r.id not in self.hand_made}
        # Known limit: a generation created with labels GitHub dropped, whose marker write then
        # failed and whose spec changed before the next pass, cannot be told from a hand-made
        # one; it is left alone and every report names it.
        leftovers = owned - wanted
        warnings = " ".join(w for spec in report.specs for w in spec.warnings)
        for name in leftovers:
            row = next(r for r in garm.rows.values() if r.name == name)
            assert parse_marker(row.extended_state) is None
            assert f"{name!r} looks like a generation" in warnings
        assert wanted <= owned
        assert all(r.enabled for r in garm.rows.values() if r.name in wanted)
        garm.advance(1)
        again = reconcile(garm, self._specs(), now=garm.now, settings=SETTINGS, sweep_orphans=True)
        assert again.writes == 0


def _corner(name: str) -> None:
    """Count a corner for `pytest --hypothesis-show-statistics` (outside hypothesis: nothing)."""
    if currently_in_test_context():
        event(f"corner: {name}")


ScalesetMachine.TestCase.settings = PROFILE
TestScalesetChangeover = ScalesetMachine.TestCase


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
