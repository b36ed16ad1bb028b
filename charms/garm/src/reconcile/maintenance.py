"""Maintenance mode: while paused, the charm leaves GARM alone (docs/adr/0024-maintenance-mode.md).

The `pause` action writes who paused and since when into the peer relation's application data,
so a new leader keeps the pause; `resume` removes it. While paused, no hook starts, stops or
restarts GARM, installs a binary or calls GARM's write API, and the reconcile tick is removed:
an operator's hand work (or a restore) cannot be undone by the next tick.

Pure decisions only: the charm reads and writes the relation data.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Final

PAUSED_SINCE_KEY: Final = "maintenance-since"
PAUSED_BY_KEY: Final = "maintenance-by"
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
