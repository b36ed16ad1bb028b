"""Faults injected per route: error answers, dropped or reset connections, added latency."""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

FaultKind = Literal["status", "reset", "drop", "latency", "before"]


@dataclass
class Fault:
    """One injected fault.

    Attributes:
        kind: `status` answers `status` with a GARM-shaped error body (or `body`, when set);
            `reset` closes the connection with a TCP reset; `drop` closes it without an
            answer; `latency` waits `delay` seconds and then serves the request normally;
            `before` runs `action` (what another client or time did meanwhile: a race) and
            then serves the request normally.
        method: HTTP method to match, or `*`.
        path: a route template (`/api/v1/scalesets/{id}`), a concrete path, or a glob.
        status: the status for `status` faults.
        delay: the wait for `latency` faults (also applied before other kinds when set).
        times: how many requests it hits before it expires; None = until removed.
        body: the raw answer of a `status` fault (e.g. what a proxy in front of GARM sends).
        action: what a `before` fault runs.
    """

    kind: FaultKind
    method: str = "*"
    path: str = "*"
    status: int = 500
    delay: float = 0.0
    times: int | None = None
    hits: int = 0
    body: str | None = None
    action: Callable[[], object] | None = None

    def matches(self, method: str, path: str, template: str) -> bool:
        """Return whether this fault applies to a request."""
        method_ok = self.method in ("*", method)
        path_ok = self.path in (path, template) or fnmatch.fnmatchcase(path, self.path)
        return method_ok and path_ok and (self.times is None or self.hits < self.times)


class FaultTable:
    """The active faults; the first match wins."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> Fault:
        """Activate a fault and return it."""
        with self._lock:
            self._faults.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        """Deactivate a fault."""
        with self._lock:
            if fault in self._faults:
                self._faults.remove(fault)

    def clear(self) -> None:
        """Deactivate every fault."""
        with self._lock:
            self._faults.clear()

    def take(self, method: str, path: str, template: str) -> Fault | None:
        """Return the fault for a request, counting the hit."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path, template):
                    fault.hits += 1
                    return fault
        return None
