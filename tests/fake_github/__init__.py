"""A fake GitHub (REST + Actions service + message queue) for running a real GARM on loopback.

It implements the calls GARM makes for scale sets: rate limit, runner tools, registration
tokens, runner groups, GitHub App installation tokens, the Actions-service scale-set and session
API, JIT configs, agents, a long-polled message queue and a garm-agent releases index. Start it
with `with FakeGitHub() as github:`; `github.issued_tokens()` lists every secret it handed out.
"""

from __future__ import annotations

from fake_github.server import FakeGitHub, FakeGitHubConfig, Fault

__all__ = ["FakeGitHub", "FakeGitHubConfig", "Fault"]
