"""A fake GitHub (REST + Actions service + message queue) for running a real GARM on loopback.

It implements the calls GARM makes for scale sets (REFERENCE §9): rate limit, runner tools,
registration tokens, runner groups, the Actions-service scale-set and session API, JIT configs,
agents and a long-polled message queue. Start it with `with FakeGitHub() as github:`.
"""

from __future__ import annotations

from fake_github.server import FakeGitHub, FakeGitHubConfig

__all__ = ["FakeGitHub", "FakeGitHubConfig"]
