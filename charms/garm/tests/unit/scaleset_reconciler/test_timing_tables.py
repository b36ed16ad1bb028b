"""Timing tables: (event, clock) -> the action a pass takes, one second either side of each edge.

Each row arranges a fresh GARM (the in-memory double), moves GARM's clock to the edge plus an
offset, runs one pass and checks what was done to GARM. The edges: the hand-over grace (60 s
after the new scale set serves), the hand-over timeout (30 min without a runner online), the
label retry (15 min, doubling per attempt up to 4 h, counted from when the attempt last began
to serve), the kept-delete back-off (1 min, doubling), the
drain deadline (7 h after retirement), the metrics-token refresh (30 days before expiry) and
the service takeover by a new leader (5 min after its claim, ADR 0005).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json

import pytest

from doubles.memory_garm import MemoryGarm
from reconcile.metrics_token import RENEW_BEFORE, token_is_current
from relations.peers.handover import TAKEOVER_DEADLINE, HostClaim, Verdict, decide
from scaleset_reconciler import Phase
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec
from unit.walks.scalesets import converge, make_spec, run

NEW_LABELS = ("x64", "gpu")
GRACE = datetime.timedelta(seconds=60)
HANDOVER_TIMEOUT = datetime.timedelta(minutes=30)
LABEL_RETRY = datetime.timedelta(minutes=15)
MAX_LABEL_RETRY = datetime.timedelta(hours=4)
FIRST_DELETE_RETRY = datetime.timedelta(minutes=1)
DRAIN = datetime.timedelta(hours=7)
# One second either side of the edge, and the edge itself (where the later action applies).
OFFSETS = [(-1, False), (0, True), (1, True)]


def move_to(garm: MemoryGarm, moment: datetime.datetime) -> None:
    """Move GARM's clock forward to `moment` (its worker runs on the way)."""
    seconds = (moment - garm.now).total_seconds()
    assert seconds >= 0, "the table's edge is in the past of the arrangement"
    garm.advance(seconds)


def calls_since(garm: MemoryGarm, start: int, operation: str) -> int:
    """How many calls of `operation` reached GARM after the first `start` calls."""
    return sum(1 for call in garm.log[start:] if call.operation == operation)


def relabel(garm: MemoryGarm, min_idle: int = 0) -> tuple[str, str, datetime.datetime]:
    """Converge `small`, change its labels in one pass; return (old, new, new's creation)."""
    converge(garm, [make_spec(min_idle_runners=min_idle)])
    garm.tick()
    changed = make_spec(labels=NEW_LABELS, min_idle_runners=min_idle)
    run(garm, [changed])
    new = live_name(changed)
    return live_name(make_spec(min_idle_runners=min_idle)), new, garm.by_name(new).created_at


@pytest.mark.parametrize(("offset", "retires"), OFFSETS)
def test_handover_grace(offset: int, retires: bool):
    """Arrange: labels changed; the new set serves (min-idle 0). Act: a pass at grace+offset.

    Assert: the old set is retired (disabled) from the edge on, and serves before it.
    """
    garm = MemoryGarm()
    old, _, created = relabel(garm)
    move_to(garm, created + GRACE + datetime.timedelta(seconds=offset))

    run(garm, [make_spec(labels=NEW_LABELS)])

    assert garm.by_name(old).enabled is not retires


@pytest.mark.parametrize(("offset", "blocks"), OFFSETS)
def test_handover_timeout(offset: int, blocks: bool):
    """Arrange: min-idle 1; labels changed; the new set's runners never boot.

    Act: a pass at timeout+offset. Assert: Blocked from the edge on, waiting before it; the
    old set serves with its counts either way.
    """
    garm = MemoryGarm()
    garm.stuck_boots = True
    old, _, created = relabel(garm, min_idle=1)
    move_to(garm, created + HANDOVER_TIMEOUT + datetime.timedelta(seconds=offset))

    report = run(garm, [make_spec(labels=NEW_LABELS, min_idle_runners=1)])

    assert (report.spec("small").phase is Phase.BLOCKED) is blocks
    assert garm.by_name(old).enabled
    assert garm.by_name(old).min_idle_runners == 1


@pytest.mark.parametrize(
    ("attempt", "wait"),
    [
        (0, LABEL_RETRY),
        (1, 2 * LABEL_RETRY),
        (2, 4 * LABEL_RETRY),
        (4, MAX_LABEL_RETRY),
        (5, MAX_LABEL_RETRY),
    ],
)
@pytest.mark.parametrize(("offset", "creates"), OFFSETS)
def test_label_retry_backs_off(attempt: int, wait: datetime.timedelta, offset: int, creates: bool):
    """Arrange: GitHub drops `gpu`; labels changed; `attempt` further attempts made already.

    Act: a pass at the latest attempt's creation + its wait + offset.
    Assert: the next attempt is created from the edge on, nothing before it.
    """
    garm = MemoryGarm()
    garm.drop_labels = {"gpu"}
    changed = make_spec(labels=NEW_LABELS)
    _, latest_name, latest = relabel(garm)
    for made in range(attempt):
        move_to(garm, latest + min(LABEL_RETRY * 2**made, MAX_LABEL_RETRY))
        run(garm, [changed])
        latest_name = live_name(changed, attempt=made + 1)
        latest = garm.by_name(latest_name).created_at
    move_to(garm, latest + wait + datetime.timedelta(seconds=offset))
    start = len(garm.log)

    run(garm, [changed])

    assert calls_since(garm, start, "create_scaleset") == (1 if creates else 0)


@pytest.mark.parametrize(("offset", "creates"), OFFSETS)
def test_label_retry_counts_from_a_flip_backs_re_enable(offset: int, creates: bool):
    """Arrange: GitHub drops `gpu`; labels changed back, then to the new ones again.

    Changed back, the new set is retired; 10 minutes later it is re-enabled and serves again.
    Act: a pass at the re-enable + 15 min + offset.
    Assert: the next attempt is created from that edge on: the wait counts from when the
    attempt last began to serve, not from its creation (which is long past by then).
    """
    garm = MemoryGarm()
    garm.drop_labels = {"gpu"}
    changed, back = make_spec(labels=NEW_LABELS), make_spec()
    _, dropped, _ = relabel(garm)
    garm.advance(61)
    run(garm, [back])  # retires the new set: the old one serves with every label
    assert not garm.by_name(dropped).enabled
    garm.advance(600)
    run(garm, [changed])
    assert garm.by_name(dropped).enabled
    marker = parse_marker(garm.by_name(dropped).extended_state)
    assert marker is not None
    assert marker.enabled_at is not None
    move_to(garm, marker.enabled_at + LABEL_RETRY + datetime.timedelta(seconds=offset))
    start = len(garm.log)

    run(garm, [changed])

    assert calls_since(garm, start, "create_scaleset") == (1 if creates else 0)


def kept_delete(garm: MemoryGarm, failures: int) -> tuple[str, datetime.datetime]:
    """A retired, empty old set whose deletes GARM answered but kept `failures` times.

    Returns:
        The old set's name and the time of the last kept delete.
    """
    garm.keep_deletes = True
    old, _, created = relabel(garm)
    move_to(garm, created + GRACE)
    run(garm, [make_spec(labels=NEW_LABELS)])  # retires the old set
    last = garm.now
    for failure in range(failures):
        start = len(garm.log)
        if failure:
            move_to(garm, last + FIRST_DELETE_RETRY * 2 ** (failure - 1))
        run(garm, [make_spec(labels=NEW_LABELS)])
        assert calls_since(garm, start, "delete_scaleset") == 1
        last = garm.now
    return old, last


@pytest.mark.parametrize(
    ("failures", "wait"),
    [(1, FIRST_DELETE_RETRY), (2, 2 * FIRST_DELETE_RETRY), (3, 4 * FIRST_DELETE_RETRY)],
)
@pytest.mark.parametrize(("offset", "deletes"), OFFSETS)
def test_kept_delete_backs_off(
    failures: int, wait: datetime.timedelta, offset: int, deletes: bool
):
    """Arrange: GARM kept the old set after `failures` deletes (B15).

    Act: a pass at the last kept delete + the back-off + offset. Assert: the delete is tried
    again from the edge on, not before; the marker counts the failures.
    """
    garm = MemoryGarm()
    old, last = kept_delete(garm, failures)
    marker = parse_marker(garm.by_name(old).extended_state)
    assert marker is not None
    assert marker.delete_failures == failures
    move_to(garm, last + wait + datetime.timedelta(seconds=offset))
    start = len(garm.log)

    run(garm, [make_spec(labels=NEW_LABELS)])

    assert calls_since(garm, start, "delete_scaleset") == (1 if deletes else 0)


@pytest.mark.parametrize(("offset", "forces"), OFFSETS)
def test_drain_deadline(offset: int, forces: bool):
    """Arrange: the old set retired with a runner still running a job.

    Act: a pass at retirement + drain timeout + offset. Assert: the runner is force-removed
    from the edge on; before it, nothing is forced and the job keeps running.
    """
    garm = MemoryGarm()
    garm.tick()
    converge(garm, [make_spec(min_idle_runners=1)])
    garm.tick()
    garm.tick()
    old = live_name(make_spec(min_idle_runners=1))
    busy = garm.start_job(garm.by_name(old).id)
    assert busy is not None
    changed = make_spec(labels=NEW_LABELS, min_idle_runners=1)
    converge_until_retired(garm, changed, old)
    marker = parse_marker(garm.by_name(old).extended_state)
    assert marker is not None
    assert marker.retired_at is not None
    move_to(garm, marker.retired_at + DRAIN + datetime.timedelta(seconds=offset))

    run(garm, [changed])

    assert [forced.name for forced in garm.forced] == ([busy] if forces else [])


def converge_until_retired(garm: MemoryGarm, spec: ScalesetSpec, old: str) -> None:
    """Passes a minute apart until the old set is disabled (its runner keeps its job)."""
    for _ in range(10):
        run(garm, [spec])
        if not garm.by_name(old).enabled:
            return
        garm.advance(61)
    raise AssertionError(f"{old} was never retired")


SECRET = "jwt-secret-for-the-table"


def metrics_token(expires: datetime.datetime, secret: str = SECRET) -> str:
    """GARM's metrics token: HS256 over its claims, `read_metrics`, expiring at `expires`."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = part(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = part(json.dumps({"read_metrics": True, "exp": int(expires.timestamp())}).encode())
    signature = hmac.new(secret.encode(), f"{header}.{claims}".encode(), hashlib.sha256)
    return f"{header}.{claims}.{part(signature.digest())}"


@pytest.mark.parametrize(("offset", "renews"), OFFSETS)
def test_metrics_token_refresh(offset: int, renews: bool):
    """Arrange: a token signed with the JWT secret, expiring at E.

    Act: ask at E - 30 days + offset. Assert: replaced from the edge on, kept before it.
    """
    expires = datetime.datetime(2027, 6, 1, 12, 0, tzinfo=datetime.UTC)
    now = expires - RENEW_BEFORE + datetime.timedelta(seconds=offset)

    assert token_is_current(metrics_token(expires), SECRET, now) is not renews


@pytest.mark.parametrize(("offset", "runs"), OFFSETS)
def test_service_takeover_deadline(offset: int, runs: bool):
    """Arrange: a new leader claimed GARM at T; the old leader still says it runs GARM.

    Act: decide at T + 5 min + offset. Assert: it runs GARM from the edge on, waits before it.
    """
    claimed = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
    claim = HostClaim("garm/1", claimed)
    now = claimed + TAKEOVER_DEADLINE + datetime.timedelta(seconds=offset)

    decision = decide("garm/1", claim, {"garm/0": True}, sqlite=False, now=now)

    assert decision.verdict is (Verdict.RUN if runs else Verdict.WAIT)
    assert decision.claim == claim


@pytest.mark.parametrize(("offset", "forces"), OFFSETS)
def test_drain_deadline_after_a_flip_back(offset: int, forces: bool):
    """Arrange: the old set retired with a busy runner, re-enabled, then retired again.

    Act: a pass at the second retirement + drain timeout + offset.
    Assert: the deadline counts from the second retirement, not from the re-enable.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(min_idle_runners=1)])
    garm.tick()
    garm.tick()
    old = live_name(make_spec(min_idle_runners=1))
    busy = garm.start_job(garm.by_name(old).id)
    assert busy is not None
    changed = make_spec(labels=NEW_LABELS, min_idle_runners=1)
    converge_until_retired(garm, changed, old)
    garm.advance(600)
    back = make_spec(min_idle_runners=1)
    for _ in range(5):
        run(garm, [back])
        garm.advance(61)
    assert garm.by_name(old).enabled
    converge_until_retired(garm, changed, old)
    marker = parse_marker(garm.by_name(old).extended_state)
    assert marker is not None
    assert marker.retired_at is not None
    move_to(garm, marker.retired_at + DRAIN + datetime.timedelta(seconds=offset))

    run(garm, [changed])

    assert [forced.name for forced in garm.forced] == ([busy] if forces else [])
