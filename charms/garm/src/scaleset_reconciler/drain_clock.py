"""The drain clock: a retired scale set's drain deadline counts only time the charm ran.

While the charm is paused (ADR 0024) no pass runs, so nothing drains a retired set on the
charm's behalf; a `resume` after `drain-timeout` would otherwise force-remove busy runners in
the action itself. Each pause the operator ended is kept as a hold (start, end); the deadline
is the moment the set has spent `drain-timeout` retired outside every hold (ADR 0042).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

Hold = tuple[datetime.datetime, datetime.datetime]


def drain_deadline(
    retired_at: datetime.datetime, timeout: datetime.timedelta, holds: Iterable[Hold]
) -> datetime.datetime:
    """When a set retired at `retired_at` has drained for `timeout` outside every hold.

    A hold before the retirement does not count, nor one after the deadline it would move:
    the clock had run out by then. Overlapping holds count their overlap once.
    """
    deadline = retired_at + timeout
    counted_until = retired_at
    for start, end in sorted(holds):
        begins = max(start, counted_until)
        if begins >= deadline:
            break
        if end > begins:
            deadline += end - begins
            counted_until = end
    return deadline
