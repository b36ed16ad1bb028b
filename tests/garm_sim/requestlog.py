"""A log of every request the simulator answered, with counters for tests and benchmarks."""

from __future__ import annotations

import threading
from dataclasses import dataclass

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Logging in is a write by method but changes nothing; benchmarks count changes.
_NOT_WRITES = frozenset({"/api/v1/auth/login"})


@dataclass(frozen=True)
class LoggedRequest:
    """One answered (or faulted) request: `body` is what was sent, `answer` what came back."""

    method: str
    path: str
    template: str
    status: int
    body: bytes
    answer: bytes = b""

    @property
    def call(self) -> str:
        """Return the request as `METHOD /path`, e.g. `GET /api/v1/scalesets`."""
        return f"{self.method} {self.path}"


class RequestLog:
    """Thread-safe list of requests."""

    def __init__(self) -> None:
        self._entries: list[LoggedRequest] = []
        self._lock = threading.Lock()

    def add(self, entry: LoggedRequest) -> None:
        """Record a request."""
        with self._lock:
            self._entries.append(entry)

    def entries(self) -> list[LoggedRequest]:
        """Return a copy of the log."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        """Forget every request."""
        with self._lock:
            self._entries.clear()

    def count(self, method: str | None = None, path: str | None = None) -> int:
        """Count requests by method and by path (a template or a concrete path)."""
        return sum(
            1
            for entry in self.entries()
            if (method is None or entry.method == method)
            and (path is None or path in (entry.path, entry.template))
        )

    def write_count(self) -> int:
        """Count requests that can change GARM's state (login excluded)."""
        return sum(
            1
            for entry in self.entries()
            if entry.method in WRITE_METHODS and entry.template not in _NOT_WRITES
        )
