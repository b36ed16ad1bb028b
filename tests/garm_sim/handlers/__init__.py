"""Route handlers, one module per family of GARM resources."""

from __future__ import annotations

from garm_sim.auth import TokenSigner
from garm_sim.handlers import bootstrap, entities, forge, instances, scalesets, templates
from garm_sim.routing import Route


def all_routes(signer: TokenSigner) -> list[Route]:
    """Return every route the simulator serves."""
    return [
        *bootstrap.routes(signer),
        *forge.routes(),
        *entities.routes(),
        *templates.routes(),
        *scalesets.routes(),
        *instances.routes(),
    ]
