"""Route handlers, one module per family of GARM resources."""

from __future__ import annotations

from garm_sim.auth import TokenSigner
from garm_sim.handlers import (
    bootstrap,
    callbacks,
    entities,
    forge,
    instances,
    proxies,
    scalesets,
    templates,
)
from garm_sim.routing import Route
from garm_sim.versions import V021, GarmVersion


def all_routes(signer: TokenSigner, garm_version: GarmVersion = V021) -> list[Route]:
    """Return every route the simulator serves as this GARM version."""
    return [
        *bootstrap.routes(signer),
        *forge.routes(),
        *entities.routes(),
        *templates.routes(),
        *scalesets.routes(),
        *instances.routes(),
        *callbacks.routes(signer),
        *([] if garm_version == V021 else proxies.routes()),
    ]
