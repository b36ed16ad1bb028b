"""GARM's background workers other than the scale-set worker, as one pass and a time rule.

What a client sees of them, as the real binaries show it (tests/contract/test_sim_fidelity.py):

- an entity's pool manager reports `{"failure_reason": "pool manager is starting up"}` until
  it has fetched the runner tools from GitHub, then `{"running": true}` and the entity (read by
  id) has the event `successfully updated tools`; the create answer carries `{}`. Here it
  starts at the first pass after the entity was created. That fetch is GARM's first call to
  GitHub with the entity's credentials, and GARM records the rate limit of every GitHub answer
  (its `X-RateLimit-*` headers), so from then on the credentials carry `rate_limit`;
- the newer GARM caches a new garm-agent releases index from its worker after the
  `PUT /controller` that set the URL, so `cached_garm_agent_release_fetched_at` is absent from
  that answer and appears about a second later;
- GitHub's rate limit is also fetched for every credential every 30 s from GARM's start, so
  credentials nothing uses carry no `rate_limit` key until the next fetch.
"""

from __future__ import annotations

from garm_sim.model import Credentials
from garm_sim.state import SimState

_NS_PER_SECOND = 1_000_000_000
AGENT_RELEASES_FETCH_NS = _NS_PER_SECOND
RATE_LIMIT_PERIOD_NS = 30 * _NS_PER_SECOND


def run(state: SimState) -> None:
    """Run one pass of the workers: start pool managers, finish a due releases fetch."""
    for entity in state.entities.values():
        if entity.pool_manager_running:
            continue
        entity.pool_manager_running = True
        entity.updated_at = state.clock.stamp()
        entity.events.append(
            {
                "id": len(entity.events) + 1,
                "created_at": state.clock.stamp(),
                "event_type": "status",
                "event_level": "info",
                "message": "successfully updated tools",
            }
        )
        creds = state.credentials.get(entity.credentials_id)
        if creds is not None and not state.github.behaviour.bad_credentials:
            creds.rate_limit_seen = True
    controller = state.controller
    due = controller.agent_releases_fetch_due_ns
    if due and state.clock.now_ns() >= due:
        controller.agent_releases_fetched_at = state.clock.stamp()
        controller.agent_releases_fetch_due_ns = 0


def rate_limit_fetched(state: SimState, creds: Credentials) -> bool:
    """Whether GARM's 30-second rate-limit loop has run since the credentials were created."""
    if creds.created_ns <= state.started_ns:
        return True
    now = state.clock.now_ns()
    return (now - state.started_ns) // RATE_LIMIT_PERIOD_NS > (
        creds.created_ns - state.started_ns
    ) // RATE_LIMIT_PERIOD_NS
