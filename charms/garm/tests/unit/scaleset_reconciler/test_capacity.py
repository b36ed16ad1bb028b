"""The hand-over waits for capacity: with min-idle > 0, a runner of the new set must be online."""

from __future__ import annotations

import dataclasses
import datetime

from doubles.memory_garm import MemoryGarm
from scaleset_reconciler import Phase, blocked_message, status_message
from scaleset_reconciler.naming import live_name
from unit.walks.scalesets import SETTINGS, converge, make_spec, run

NEW_LABELS = ("x64", "gpu")
TIMEOUT = datetime.timedelta(minutes=30)


def relabelled(garm: MemoryGarm, min_idle: int) -> tuple[str, str]:
    """Converge `small` with `min_idle` idle runners, change its labels; return (old, new)."""
    converge(garm, [make_spec(min_idle_runners=min_idle)])
    garm.tick()
    run(garm, [make_spec(labels=NEW_LABELS, min_idle_runners=min_idle)])
    return live_name(make_spec()), live_name(make_spec(labels=NEW_LABELS))


def test_past_the_grace_the_old_set_serves_until_a_new_runner_is_online():
    """Arrange: min-idle 1; labels changed; the grace passed, the new runner still booting.

    Act: a pass; then the runner comes online and another pass.
    Assert: first the old set still serves and the status says what it waits for and until
    when; then it is retired.
    """
    garm = MemoryGarm()
    old, _ = relabelled(garm, min_idle=1)
    garm.advance(61)  # the new set's runner is created now, still pending
    changed = make_spec(labels=NEW_LABELS, min_idle_runners=1)

    waiting = run(garm, [changed])

    created = garm.by_name(live_name(changed)).created_at
    until = (created + TIMEOUT).strftime("%H:%M UTC")
    assert garm.by_name(old).enabled
    assert waiting.spec("small").phase is Phase.CREATING
    assert status_message(waiting) == (
        "'small' labels changing: handing over "
        f"(waiting for an idle runner of the new set until {until})"
    )
    garm.tick()

    retired = run(garm, [changed])

    assert not garm.by_name(old).enabled
    assert retired.spec("small").phase is Phase.HANDING_OVER


def test_a_new_set_without_runners_blocks_after_the_timeout_and_recovers_by_itself():
    """Arrange: min-idle 1; labels changed to a set whose runners never come online.

    Act: a pass past the hand-over timeout; then a runner comes online and another pass.
    Assert: Blocked naming the new scale set; the old one still serves with its counts; once a
    runner is online the hand-over goes on without the operator.
    """
    garm = MemoryGarm()
    garm.stuck_boots = True
    old, new = relabelled(garm, min_idle=1)
    garm.advance(TIMEOUT.total_seconds())
    changed = make_spec(labels=NEW_LABELS, min_idle_runners=1)

    blocked = run(garm, [changed])

    assert blocked.spec("small").phase is Phase.BLOCKED
    assert new in blocked.spec("small").message
    assert blocked_message(blocked).startswith(f"'small': no idle runner of new set {new!r} after")
    assert garm.by_name(old).enabled
    assert garm.by_name(old).min_idle_runners == 1
    garm.stuck_boots = False
    garm.tick()  # the runner boots
    garm.tick()  # and reports idle

    recovered = run(garm, [changed])

    assert recovered.spec("small").phase is Phase.HANDING_OVER
    assert not garm.by_name(old).enabled


def test_with_min_idle_zero_the_grace_alone_decides():
    """Arrange: min-idle 0; labels changed; runners would never come online. Act: past grace.

    Assert: the old set is retired, and instances were not even listed for it.
    """
    garm = MemoryGarm()
    garm.stuck_boots = True
    old, _ = relabelled(garm, min_idle=0)
    garm.advance(61)
    garm.calls.clear()

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert report.spec("small").phase is Phase.HANDING_OVER
    assert not garm.by_name(old).enabled
    assert "list_instances" not in [call[0] for call in garm.calls]


def test_a_converged_set_with_idle_runners_lists_only_scale_sets():
    """Arrange: min-idle 1, converged. Act: a pass. Assert: one request, no writes."""
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])

    report = run(garm, [make_spec(min_idle_runners=1)])

    assert (report.requests, report.writes) == (1, 0)


def test_the_timeout_is_a_setting():
    """Arrange: a 5-minute hand-over timeout; runners stuck. Act: a pass 5 min after creation.

    Assert: blocked, saying 5 min.
    """
    garm = MemoryGarm()
    garm.stuck_boots = True
    relabelled(garm, min_idle=1)
    garm.advance(300)
    settings = dataclasses.replace(SETTINGS, handover_timeout=datetime.timedelta(minutes=5))

    report = run(garm, [make_spec(labels=NEW_LABELS, min_idle_runners=1)], settings=settings)

    assert "within 5 min" in report.spec("small").message
