"""Stuck changeovers that recover by themselves: further attempts under distinct names."""

from __future__ import annotations

import datetime

from doubles.memory_garm import MemoryGarm
from scaleset_reconciler import Phase, blocked_message
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.naming import live_name
from unit.walks.scalesets import converge, make_spec, run

NEW_LABELS = ("x64", "gpu")
RETRY = datetime.timedelta(minutes=15)


def attempt(garm: MemoryGarm, name: str) -> int:
    """The attempt number in the marker of the scale set `name`."""
    marker = parse_marker(garm.by_name(name).extended_state)
    assert marker is not None
    return marker.attempt


def test_dropped_labels_recover_by_themselves_once_github_accepts_them():
    """Arrange: `small` serves x64; GitHub drops `gpu`; labels change to x64,gpu.

    Act: passes while GitHub drops it; then GitHub accepts it (multi-label enabled) and passes
    go on for the retry time, the grace and the hand-over.
    Assert: first Blocked, naming the label and when it retries, with the old set serving; then
    a second attempt under a distinct name gets both labels and replaces the old set and the
    first attempt; only it remains, and a converged pass writes nothing.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    old = live_name(make_spec())
    garm.drop_labels = {"gpu"}
    changed = make_spec(labels=NEW_LABELS)
    first = live_name(changed)
    run(garm, [changed])
    garm.advance(61)

    blocked = run(garm, [changed])

    retry_at = garm.by_name(first).created_at + RETRY
    assert blocked.spec("small").phase is Phase.BLOCKED
    assert blocked_message(blocked) == (
        "'small': GitHub dropped labels gpu (old set serves): change labels; "
        f"retry {retry_at:%H:%M} UTC"
    )
    assert garm.by_name(old).enabled
    garm.drop_labels = set()
    garm.advance(RETRY.total_seconds())

    retried = run(garm, [changed])

    second = live_name(changed, attempt=1)
    assert second != first
    assert garm.by_name(second).normalised_labels == {"x64", "gpu"}
    assert attempt(garm, second) == 1
    assert retried.spec("small").phase is Phase.BLOCKED  # until the next pass sees the new one
    report = converge(garm, [changed])
    assert report.converged
    assert garm.names() == {second}
    assert report.spec("small").live_name == second
    assert run(garm, [changed]).writes == 0


def test_attempts_back_off_and_failed_ones_do_not_pile_up():
    """Arrange: GitHub keeps dropping `gpu` after a label change to x64,gpu.

    Act: passes every minute for two hours.
    Assert: further attempts at 15, 45 and 105 minutes (the wait doubles), each replacing the
    previous failed attempt once it serves (never more than one of them beside the old set);
    the old set serves throughout.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    garm.drop_labels = {"gpu"}
    changed = make_spec(labels=NEW_LABELS)

    counts: list[int] = []
    for _ in range(120):
        run(garm, [changed])
        counts.append(len(garm.rows))
        garm.advance(60)

    attempts = {attempt(garm, name) for name in garm.names() - {live_name(make_spec())}}
    assert attempts == {3}
    assert max(counts) == 3
    assert garm.by_name(live_name(make_spec())).enabled


def test_a_name_github_still_holds_is_replaced_and_reported():
    """Arrange: GitHub still holds a runner scale set named like the one the change needs.

    Act: change labels; passes until converged.
    Assert: GARM's 409 is met with the next attempt's name; the leftover is reported (warning
    and report); the changeover completes with the replacement name.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    changed = make_spec(labels=NEW_LABELS)
    garm.github_leftovers = {live_name(changed)}

    created = run(garm, [changed])

    replacement = live_name(changed, attempt=1)
    spec = created.spec("small")
    assert spec.leftovers == [live_name(changed)]
    assert spec.live_name == replacement
    assert any("delete the leftover at GitHub" in w for w in spec.warnings)
    assert spec.phase is Phase.CREATING
    report = converge(garm, [changed])
    assert report.converged
    assert garm.names() == {replacement}


def test_when_every_spare_name_is_taken_the_refusal_is_reported():
    """Arrange: GitHub holds the first four names. Act: create. Assert: Blocked, naming 409."""
    garm = MemoryGarm()
    spec = make_spec()
    garm.github_leftovers = {live_name(spec, attempt=n) for n in range(4)}

    report = run(garm, [spec])

    assert blocked_message(report) == (
        "GARM refused to create 'small' (HTTP 409): see juju debug-log"
    )
    assert garm.names() == set()


def test_a_replacement_created_before_its_marker_is_adopted():
    """Arrange: GitHub holds the first name; the marker update after the replacement fails.

    Act: the next pass. Assert: the unmarked replacement is adopted as the live scale set and
    stamped (attempt 1); nothing is created again.
    """
    garm = MemoryGarm()
    spec = make_spec()
    garm.github_leftovers = {live_name(spec)}
    garm.refuse("update_scaleset")
    run(garm, [spec])
    replacement = live_name(spec, attempt=1)
    assert parse_marker(garm.by_name(replacement).extended_state) is None
    garm.calls.clear()

    report = run(garm, [spec])

    assert report.spec("small").live_name == replacement
    assert attempt(garm, replacement) == 1
    assert "create_scaleset" not in [call[0] for call in garm.calls]
