"""What moves a runner's `updated_at` on the real binaries: the stuck-runner clock (ADR 0023).

The charm counts a runner stuck from its instance's `updated_at` (garm-behaviour B43). A scale
set's `updated_at` moves with every message GARM processes (B16); this checks that a runner's
does not move by itself while nothing happens to it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from contract.conftest import REAL_TARGETS, Target

# Longer than GARM's scale-set retry loop (5 s) and the fake GitHub's message polls, short
# enough for the contract suite.
QUIET = 20.0


@pytest.mark.parametrize("target_name", REAL_TARGETS)
def test_a_pending_runner_keeps_its_updated_at(target: Target):
    """Arrange: an enabled scale set (min idle 1) whose runner is `running`/`pending` (B17).

    Act: list the runner every second for 20 s while no runner reports (the fake provider
    boots none).

    Assert: it stays `running`/`pending` and its `updated_at` never moves, while its
    `created_at` stays before it: GARM's workers do not touch an instance nobody changes.
    """
    created = target.create_scaleset("clock", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}/instances"

    def runners() -> list[dict[str, Any]]:
        return target.call("GET", path).json or []

    assert target.wait_until(lambda: [r["status"] for r in runners()] == ["running"])
    first = runners()[0]
    seen: set[tuple[str, str, str]] = set()
    deadline = time.monotonic() + QUIET
    while time.monotonic() < deadline:
        (runner,) = runners()
        seen.add((runner["status"], runner["runner_status"], runner["updated_at"]))
        time.sleep(1)

    assert seen == {("running", "pending", first["updated_at"])}
    assert first["created_at"] <= first["updated_at"]
