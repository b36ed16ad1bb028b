"""Maintenance mode: while paused, the charm leaves GARM alone (docs/adr/0024-maintenance-mode.md).

The `pause` action writes who paused and since when into the peer relation's application data,
so a new leader keeps the pause; `resume` removes it. While paused, no hook starts, stops or
restarts GARM, installs a binary or calls GARM's write API: an operator's hand work (or a
restore) cannot be undone by the next hook. The reconcile tick keeps running, at most
`PAUSED_TICK` apart, because the pause promises GARM keeps running and its lease is renewed by
leader hooks only (ADR 0019); under a pause a tick renews the lease and nothing else.

A pause holds the drain clock (ADR 0042): `resume` keeps the pause it ends as a hold, and a
retired scale set's drain deadline moves by the holds since it retired.

Pure decisions only: `relations.peers.PeerData` reads and writes the relation data.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Mapping
from typing import Final, cast

from relations.peers.keys import HOLDS_KEY, PAUSED_BY_KEY, PAUSED_SINCE_KEY
from scaleset_reconciler.drain_clock import Hold

# A hold matters only to a set retired before it ended and draining still; no drain lasts this
# long (drain-timeout is at most 144 h), so older holds are dropped.
HOLDS_KEPT_FOR: Final = datetime.timedelta(days=30)
# While paused the tick only renews the lease (lease.RENEW_WHEN_LEFT: leader hooks at most
# 7 minutes apart keep it); this keeps that whatever reconcile-interval or update-status say.
PAUSED_TICK: Final = datetime.timedelta(minutes=1)
# Who may hold a pause: the operator's action, or an action that pauses for its own duration.
OPERATOR: Final = "operator"
RESTORE: Final = "restore-backup"


@dataclasses.dataclass(frozen=True)
class Maintenance:
    """A pause in force: since when, and who holds it (`OPERATOR` or an action's name)."""

    since: datetime.datetime
    by: str = OPERATOR

    @classmethod
    def from_app_data(cls, data: Mapping[str, str]) -> Maintenance | None:
        """The pause in the peer application data; None when there is none.

        An unreadable time still pauses (a pause must never be lost to a typo in the data): it
        reads as the epoch, which the status shows, so the operator sees something is odd.
        """
        text = data.get(PAUSED_SINCE_KEY, "")
        if not text:
            return None
        try:
            since = datetime.datetime.fromisoformat(text)
        except ValueError:
            since = datetime.datetime.fromtimestamp(0, datetime.UTC)
        if since.tzinfo is None:
            since = since.replace(tzinfo=datetime.UTC)
        return cls(since, data.get(PAUSED_BY_KEY, "") or OPERATOR)

    def as_app_data(self) -> dict[str, str]:
        """The pause as peer application data."""
        return {PAUSED_SINCE_KEY: self.since.isoformat(), PAUSED_BY_KEY: self.by}

    def status_message(self) -> str:
        """What `juju status` shows while paused (at most 120 characters)."""
        when = self.since.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        if self.by == OPERATOR:
            return f"paused since {when}: the charm leaves GARM alone; run resume when done"
        return f"paused by {self.by} since {when}; see its output, then run resume"


def cleared() -> dict[str, str]:
    """The peer application data that removes a pause (empty values delete the keys)."""
    return {PAUSED_SINCE_KEY: "", PAUSED_BY_KEY: ""}


def paused_tick(interval: datetime.timedelta) -> datetime.timedelta:
    """The tick's interval while paused: `reconcile-interval`, at most `PAUSED_TICK`.

    `reconcile-interval=0` (no tick) still gets one: while paused it is the lease's renewal.
    """
    return min(interval, PAUSED_TICK) if interval else PAUSED_TICK


def resumed(
    pause: Maintenance | None, data: Mapping[str, str], now: datetime.datetime
) -> tuple[dict[str, str], datetime.timedelta]:
    """The peer application data that ends `pause`, keeping it as a hold; and its length.

    Args:
        pause: the pause in force, if any (none: nothing is held).
        data: the peer application data (its holds so far).
        now: the time of the resume.

    Returns:
        The data to write, and how long the drain clock stood still for this pause.
    """
    kept = [hold for hold in holds(data, None, now) if now - hold[1] < HOLDS_KEPT_FOR]
    held = datetime.timedelta(0)
    if pause is not None and pause.since < now:
        held = now - max(pause.since, now - HOLDS_KEPT_FOR)
        kept.append((now - held, now))
    body = json.dumps([[start.isoformat(), end.isoformat()] for start, end in kept])
    return cleared() | {HOLDS_KEY: body if kept else ""}, held


def holds(
    data: Mapping[str, str], pause: Maintenance | None, now: datetime.datetime
) -> tuple[Hold, ...]:
    """The holds the peer application data keeps, and `pause` (still in force) until `now`.

    An unreadable entry is skipped: it moves no deadline, as without it.
    """
    try:
        entries: object = json.loads(data.get(HOLDS_KEY) or "[]")
    except ValueError:
        entries = []
    found = [hold for hold in map(_hold, _items(entries)) if hold is not None]
    if pause is not None and pause.since < now:
        found.append((pause.since, now))
    return tuple(found)


def _items(value: object) -> list[object]:
    return list(cast("list[object]", value)) if isinstance(value, list) else []


def _hold(entry: object) -> Hold | None:
    pair = _items(entry)
    if len(pair) != 2 or not all(isinstance(when, str) for when in pair):
        return None
    try:
        start, end = (datetime.datetime.fromisoformat(str(when)) for when in pair)
    except ValueError:
        return None
    if start.tzinfo is None or end.tzinfo is None or end <= start:
        return None
    return start, end
