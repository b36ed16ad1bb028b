"""Repositories, organizations and enterprises."""

from __future__ import annotations

import uuid
from functools import partial

from garm_sim.errors import bad_request, conflict, invalid_request, not_found, server_error
from garm_sim.handlers.forge import find_credentials_by_name
from garm_sim.jsonbody import Body
from garm_sim.model import Entity, EntityKind
from garm_sim.routing import EMPTY, Request, Response, Route
from garm_sim.serialise import entity_json
from garm_sim.state import SimState
from garm_sim.versions import V021

COLLECTIONS: dict[EntityKind, str] = {
    "repository": "repositories",
    "organization": "organizations",
    "enterprise": "enterprises",
}
_SHORT: dict[EntityKind, str] = {
    "repository": "repo",
    "organization": "org",
    "enterprise": "enterprise",
}
_BALANCERS = ("", "roundrobin", "pack")


def routes() -> list[Route]:
    """Return the entity routes for all three kinds."""
    found: list[Route] = []
    for kind, collection in COLLECTIONS.items():
        found += [
            Route("GET", f"/{collection}", partial(list_entities, kind)),
            Route("POST", f"/{collection}", partial(create_entity, kind)),
            Route("GET", f"/{collection}/{{id}}", partial(get_entity, kind)),
            Route("PUT", f"/{collection}/{{id}}", partial(update_entity, kind)),
            Route("DELETE", f"/{collection}/{{id}}", partial(delete_entity, kind)),
        ]
    return found


def list_entities(kind: EntityKind, request: Request) -> Response:
    """List entities of a kind; `owner`/`name`/`endpoint` filters are exact and case-sensitive."""
    state = request.state
    found: list[Entity] = []
    for entity in state.entities.values():
        values = {
            "owner": entity.owner,
            "name": entity.name,
            "endpoint": state.credentials[entity.credentials_id].endpoint,
        }
        wanted = {key: request.query[key] for key in values if request.query.get(key)}
        if entity.kind == kind and all(values[key] == value for key, value in wanted.items()):
            found.append(entity)
    return Response(200, [entity_json(state, entity) for entity in found])


def create_entity(kind: EntityKind, request: Request) -> Response:
    """Create an entity: webhook secret required, credentials must exist, no duplicates."""
    state = request.state
    body = request.body()
    owner = body.text("owner") if kind == "repository" else ""
    name = body.text("name")
    if not name or (kind == "repository" and not owner):
        raise bad_request("missing owner or name")
    if not body.text("webhook_secret"):
        # v0.2.1 had no error mapping for the missing secret yet.
        if state.garm_version == V021:
            raise server_error()
        raise bad_request("error validating params: missing secret")
    balancer = body.text("pool_balancer_type")
    if balancer not in _BALANCERS:
        raise bad_request(f"invalid pool balancer type {balancer}")
    creds = find_credentials_by_name(state, body.text("credentials_name"))
    if creds is None:
        raise bad_request(f"credentials {body.text('credentials_name')} not defined")
    _refuse_duplicate(state, kind, owner, name, creds.endpoint)
    now = state.clock.stamp()
    entity = Entity(
        id=str(uuid.uuid4()),
        kind=kind,
        owner=owner,
        name=name,
        credentials_id=creds.id,
        webhook_secret=body.text("webhook_secret"),
        pool_balancing_type=balancer or "roundrobin",
        created_at=now,
        updated_at=now,
        agent_mode=bool(body.boolean("agent_mode")),
    )
    state.entities[entity.id] = entity
    return Response(200, entity_json(state, entity))


def get_entity(kind: EntityKind, request: Request) -> Response:
    """Return one entity by UUID, with its events (`entity_json`)."""
    entity = find_entity(request, kind, f"error fetching {kind}: ")
    return Response(200, entity_json(request.state, entity, events=True))


def update_entity(kind: EntityKind, request: Request) -> Response:
    """Change an entity's credentials, webhook secret or balancer."""
    state = request.state
    entity = find_entity(request, kind)
    body = request.body()
    _apply_update(state, entity, body)
    entity.updated_at = state.clock.stamp()
    return Response(200, entity_json(state, entity))


def delete_entity(kind: EntityKind, request: Request) -> Response:
    """Delete an entity: 200 empty; refused with 400 while it has scale sets."""
    state = request.state
    entity = find_entity(request, kind)
    if any(s.entity_id == entity.id for s in state.scalesets.values()):
        raise bad_request(f"{_SHORT[kind]} has scale sets defined; delete them first")
    del state.entities[entity.id]
    return Response(200, EMPTY)


def find_entity(request: Request, kind: EntityKind, context: str = "") -> Entity:
    """Return the entity named by the `{id}` path parameter.

    Args:
        request: the request.
        kind: the kind the path names.
        context: a prefix GARM puts in front of the not-found message.

    Raises:
        ApiError: 400 for a non-UUID id, 404 for an unknown entity.
    """
    raw_id = request.params["id"]
    try:
        uuid.UUID(raw_id)
    except ValueError as exc:
        raise invalid_request() from exc
    entity = request.state.entities.get(raw_id)
    if entity is None or entity.kind != kind:
        raise not_found(f"{context}error fetching {_SHORT[kind]}: not found")
    return entity


def _refuse_duplicate(
    state: SimState, kind: EntityKind, owner: str, name: str, endpoint: str
) -> None:
    for other in state.entities.values():
        same = (
            other.kind == kind
            and other.owner.lower() == owner.lower()
            and other.name.lower() == name.lower()
            and state.credentials[other.credentials_id].endpoint == endpoint
        )
        if same:
            # GARM names the kind in full and a repository with its owner.
            shown = f"{owner}/{name}" if kind == "repository" else name
            raise conflict(f"{kind} {shown} already exists")


def _apply_update(state: SimState, entity: Entity, body: Body) -> None:
    creds_name = body.string("credentials_name")
    if creds_name:
        creds = find_credentials_by_name(state, creds_name)
        if creds is None:
            raise bad_request(f"credentials {creds_name} not defined")
        entity.credentials_id = creds.id
    entity.webhook_secret = body.string("webhook_secret") or entity.webhook_secret
    balancer = body.string("pool_balancer_type")
    if balancer:
        if balancer not in _BALANCERS:
            raise bad_request(f"invalid pool balancer type {balancer}")
        entity.pool_balancing_type = balancer
