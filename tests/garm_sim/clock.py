"""A controllable clock: real time plus an offset that tests can advance."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

_NS_PER_SECOND = 1_000_000_000
GO_ZERO_TIME = "0001-01-01T00:00:00Z"


class SimClock:
    """Wall-clock time that tests can move forward, and that never repeats a reading.

    GARM stamps rows with nanosecond timestamps, and tests compare `updated_at` before and after
    a change; two changes in the same nanosecond must still read differently, so every reading
    is strictly later than the previous one.

    Args:
        frozen: when true the clock only moves by `advance()` (plus one nanosecond per reading),
            which makes runner timing fully deterministic.
        start: the initial time (defaults to now).
    """

    def __init__(self, *, frozen: bool = False, start: datetime | None = None) -> None:
        base = start if start is not None else datetime.now(UTC)
        self._frozen = frozen
        self._base_ns = int(base.timestamp() * _NS_PER_SECOND)
        self._real_start_ns = time.time_ns()
        self._offset_ns = 0
        self._last_ns = 0
        self._lock = threading.Lock()

    def advance(self, seconds: float) -> None:
        """Move the clock forward.

        Args:
            seconds: how far; negative values are refused because GARM's clock never goes back.

        Raises:
            ValueError: for a negative amount.
        """
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        delta = int(seconds * _NS_PER_SECOND)
        with self._lock:
            self._offset_ns += delta
            # Readings already bumped past the base must move by the full amount too.
            self._last_ns += delta

    def now_ns(self) -> int:
        """Return the current time in nanoseconds since the epoch, strictly increasing."""
        with self._lock:
            elapsed = 0 if self._frozen else time.time_ns() - self._real_start_ns
            reading = max(self._base_ns + elapsed + self._offset_ns, self._last_ns + 1)
            self._last_ns = reading
            return reading

    def now(self) -> float:
        """Return the current time in seconds since the epoch."""
        return self.now_ns() / _NS_PER_SECOND

    def stamp(self) -> str:
        """Return the current time formatted the way GARM (Go's RFC3339Nano) writes it."""
        return format_go_time(self.now_ns())


def format_go_time(ns: int) -> str:
    """Format nanoseconds since the epoch like Go's `time.RFC3339Nano` in UTC.

    Args:
        ns: nanoseconds since the epoch.

    Returns:
        For example `2026-11-29T22:50:07.06260339Z` (trailing zeros of the fraction dropped).
    """
    seconds, fraction = divmod(ns, _NS_PER_SECOND)
    head = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    digits = f"{fraction:09d}".rstrip("0")
    return f"{head}.{digits}Z" if digits else f"{head}Z"
