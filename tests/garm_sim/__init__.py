"""A GARM simulator: a real HTTP server on 127.0.0.1 that answers like GARM does.

Start it in-process with `with GarmSim() as sim:` (`sim.url` is the base URL; the API is under
`/api/v1`), or standalone with `python -m garm_sim --port N` from the `tests/` directory.
"""

from __future__ import annotations

from garm_sim.clock import SimClock
from garm_sim.faults import Fault
from garm_sim.github import GitHubBehaviour
from garm_sim.requestlog import LoggedRequest
from garm_sim.sim import GarmSim

__all__ = ["Fault", "GarmSim", "GitHubBehaviour", "LoggedRequest", "SimClock"]
