"""A runner GitHub shows offline, on both real binaries: what the offline reaping rests on.

The charm removes idle runners GitHub has shown offline for 15 minutes with an unforced
`DELETE /instances/{name}` (ADR 0040). This checks, against GARM v0.2.1 and the newer build
with the fake GitHub showing the runner's agent offline, that GARM itself does nothing about it
(the runner keeps its state: the capacity stays pinned), and that the charm's unforced removal
goes through: GARM removes the agent at GitHub and then the runner (garm-behaviour B50). The
fake provider boots no runner, so the runner is `running`/`pending`, never `idle`: GARM's
removal path does not depend on the runner's report (B32).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from contract.conftest import REAL_TARGETS, Target

# Longer than GARM's scale-set retry loop (5 s) and several of the fake GitHub's polls.
QUIET = 15.0


@pytest.mark.parametrize("target_name", REAL_TARGETS)
def test_garm_keeps_a_runner_github_shows_offline_and_an_unforced_delete_removes_it(
    target: Target,
):
    """Arrange: an enabled scale set's running runner; GitHub shows its agent offline.

    Act: watch the runner for 15 s; then DELETE it without flags, as the charm's reaping does.

    Assert: GARM keeps it as it was (same status and `updated_at`); the DELETE answers 200,
    GitHub no longer lists the agent, and the runner leaves GARM's list.
    """
    assert target.real is not None
    github = target.real.github
    created = target.create_scaleset("offline", enabled=True, min_idle_runners=1)
    sid = created["id"]
    path = f"/scalesets/{sid}/instances"

    def runners() -> list[dict[str, Any]]:
        return target.call("GET", path).json or []

    assert target.wait_until(lambda: [r["status"] for r in runners()] == ["running"])
    (runner,) = runners()
    name = str(runner["name"])
    github.set_offline(name)
    with github.lock:
        shown = [r.get("status") for r in github.runners.values() if r["name"] == name]
    seen: set[tuple[str, str, str]] = set()
    deadline = time.monotonic() + QUIET
    while time.monotonic() < deadline:
        seen |= {(r["status"], r["runner_status"], r["updated_at"]) for r in runners()}
        time.sleep(1)
    # Disabled again, so GARM makes no replacement while the removal is watched.
    target.call("PUT", f"/scalesets/{sid}", {"enabled": False})

    reply = target.call("DELETE", f"/instances/{name}")

    assert shown == ["offline"]
    assert seen == {("running", runner["runner_status"], runner["updated_at"])}
    assert (reply.status, reply.raw) == (200, "")
    with github.lock:
        listed = {r["name"] for r in github.runners.values()}
    assert name not in listed
    assert target.wait_until(lambda: name not in {r["name"] for r in runners()}, timeout=30)
