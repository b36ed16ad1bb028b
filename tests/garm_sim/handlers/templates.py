"""Runner install templates."""

from __future__ import annotations

import base64
import binascii

from garm_sim.errors import bad_request, conflict, not_found
from garm_sim.model import Template
from garm_sim.routing import EMPTY, Request, Response, Route
from garm_sim.serialise import template_json
from garm_sim.state import parse_numeric_id

_OS_TYPES = ("linux", "windows")
_FORGES = ("github", "gitea")
# Both binaries' answer to deleting a template a scale set refers to (contract suite).
_IN_USE = (
    "failed to delete template: failed to delete template: "
    "cannot delete template while in use by pools or scale sets"
)


def routes() -> list[Route]:
    """Return the template routes."""
    return [
        Route("GET", "/templates", list_templates),
        Route("POST", "/templates", create_template),
        Route("POST", "/templates/restore", restore_templates),
        Route("GET", "/templates/{id}", get_template),
        Route("PUT", "/templates/{id}", update_template),
        Route("DELETE", "/templates/{id}", delete_template),
    ]


def list_templates(request: Request) -> Response:
    """List templates (`data: null`), filtered by `osType`, `forgeType` and `partialName`."""
    query = request.query
    partial_name = query.get("partialName", "").lower()
    found = [
        template_json(t, with_data=False)
        for t in request.state.templates.values()
        if query.get("osType", t.os_type) == t.os_type
        and query.get("forgeType", t.forge_type) == t.forge_type
        and partial_name in t.name.lower()
    ]
    return Response(200, found)


def create_template(request: Request) -> Response:
    """Create a template owned by the caller; duplicate names for one owner are 409."""
    state = request.state
    body = request.body()
    name, os_type, forge = body.text("name"), body.text("os_type"), body.text("forge_type")
    if not name or os_type not in _OS_TYPES or forge not in _FORGES:
        raise bad_request("invalid template parameters")
    data = _decode(body.text("data"), empty='invalid create params "template data is empty"')
    owner = request.username
    if any(t.name == name and t.owner_id == owner for t in state.templates.values()):
        raise conflict(
            "failed to create template: a template name already exists with the specified name"
        )
    template = state.add_template(name, body.text("description"), os_type, forge, owner, data)
    return Response(200, template_json(template, with_data=True))


def get_template(request: Request) -> Response:
    """Return one template with its base64 `data`."""
    return Response(200, template_json(_template(request), with_data=True))


def update_template(request: Request) -> Response:
    """Change a template's name, description or data."""
    template = _template(request)
    body = request.body()
    if body.has("data"):
        template.data = _decode(body.text("data"))
    template.name = body.string("name") or template.name
    template.description = body.string("description") or template.description
    template.updated_at = request.state.clock.stamp()
    return Response(200, template_json(template, with_data=True))


def delete_template(request: Request) -> Response:
    """Delete a template: 200 (also unknown ids); 400 while a scale set uses it."""
    state = request.state
    template_id = parse_numeric_id(request.params["id"])
    if any(s.template_id == template_id for s in state.scalesets.values()):
        raise bad_request(_IN_USE)
    state.templates.pop(template_id, None)
    return Response(200, EMPTY)


def restore_templates(request: Request) -> Response:
    """Recreate missing system templates."""
    request.state.seed_system_templates()
    return Response(200, EMPTY)


def _template(request: Request) -> Template:
    template = request.state.templates.get(parse_numeric_id(request.params["id"]))
    if template is None:
        raise not_found("template not found")
    return template


def _decode(data: str, empty: str = "missing template data") -> bytes:
    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise bad_request("invalid request") from exc
    if not decoded:
        raise bad_request(empty)
    return decoded
