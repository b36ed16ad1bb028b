"""Scale sets: create under an entity, list, get, update, delete."""

from __future__ import annotations

import json
from functools import partial

from garm_sim.errors import ApiError, bad_request, not_found, server_error
from garm_sim.handlers.entities import COLLECTIONS, find_entity
from garm_sim.jsonbody import Body
from garm_sim.model import Entity, EntityKind, ScaleSet, Template
from garm_sim.routing import EMPTY, Request, Response, Route
from garm_sim.serialise import instance_json, scaleset_json
from garm_sim.state import SimState, parse_numeric_id
from garm_sim.versions import V021, GarmVersion

# Fields whose change bumps `generation` (GARM: flavor, image, OS, extra specs, group, shell).
_GENERATION_FIELDS = ("flavor", "image", "os_type", "os_arch", "extra_specs", "runner_group")
_V021_IGNORED_ON_UPDATE = ("disable_update", "proxy_id")
_NO_TEMPLATE = (
    "failed to find suitable template: "
    "no template ID supplied and no default template can be found"
)
# Both binaries' answer to an unknown `template_id` on create and on update (contract suite).
_UNKNOWN_TEMPLATE = (
    "failed to find suitable template: failed to get template: failed to get template: not found"
)


def routes() -> list[Route]:
    """Return the scale-set routes."""
    found: list[Route] = []
    for kind, collection in COLLECTIONS.items():
        found += [
            Route("POST", f"/{collection}/{{id}}/scalesets", partial(create_scaleset, kind)),
            Route("GET", f"/{collection}/{{id}}/scalesets", partial(list_entity_scalesets, kind)),
        ]
    return [
        *found,
        Route("GET", "/scalesets", list_scalesets),
        Route("GET", "/scalesets/{id}", get_scaleset),
        Route("PUT", "/scalesets/{id}", update_scaleset),
        Route("DELETE", "/scalesets/{id}", delete_scaleset),
        Route("GET", "/scalesets/{id}/instances", list_scaleset_instances),
    ]


def create_scaleset(kind: EntityKind, request: Request) -> Response:
    """Create a scale set the way GARM does: GitHub first, validation last (500 on failure)."""
    state = request.state
    body = request.body()
    entity = find_entity(
        request, kind, "error getting entity: error failed to get entity from db: "
    )
    template = _pick_template(state, body)
    _check_proxy(state, body, "error creating scale set")
    group = body.text("github-runner-group") or "Default"
    state.github.check_credentials()
    state.github.resolve_group(entity.id, group, is_repo=kind == "repository")
    name = body.text("name")
    github_record = state.github.create(entity.id, name, group, _dedupe(body.str_list("labels")))
    if not _valid_create(body):
        state.github.delete(github_record.id)  # GARM's deferred clean-up at GitHub
        raise server_error()
    scaleset = _insert(state, body, entity, template, github_record.id, github_record.labels)
    return Response(200, scaleset_json(state, scaleset, "detail"))


def list_entity_scalesets(kind: EntityKind, request: Request) -> Response:
    """List one entity's scale sets (empty endpoint; no template name, no instances)."""
    state = request.state
    entity = find_entity(request, kind)
    found = [s for s in state.scalesets.values() if s.entity_id == entity.id]
    return Response(200, [scaleset_json(state, s, "entity") for s in found])


def list_scalesets(request: Request) -> Response:
    """List every scale set (populated endpoint; no template name, no instances)."""
    state = request.state
    return Response(200, [scaleset_json(state, s, "all") for s in state.scalesets.values()])


def get_scaleset(request: Request) -> Response:
    """Return one scale set with `extra_specs`, `template_name` and `instances`."""
    state = request.state
    return Response(200, scaleset_json(state, state.scaleset(request.params["id"]), "detail"))


def update_scaleset(request: Request) -> Response:
    """Update mutable fields; labels and provider are ignored; GitHub sees name and group."""
    state = request.state
    scaleset = state.scaleset(request.params["id"])
    body = request.body()
    changes = _requested_changes(scaleset, body, state.garm_version)
    template_id = body.uint("template_id")
    if template_id and template_id != scaleset.template_id:
        # GARM applies a new template id after checking it fits the scale set's OS and forge.
        template = state.templates.get(template_id)
        if template is None:
            raise not_found(_UNKNOWN_TEMPLATE)
        if (template.os_type, template.forge_type) != (
            scaleset.os_type,
            "github",
        ):
            raise bad_request("template does not match the scale set's OS or forge")
        changes["template_id"] = template_id
    _check_update(scaleset, changes)
    if "proxy_id" in changes:
        _check_proxy(state, body, "error updating scale set")
    if "name" in changes:
        state.github.rename(scaleset.github_id, str(changes["name"]))
    if "runner_group" in changes:
        state.github.change_group(scaleset.github_id, str(changes["runner_group"]))
    if changes:
        if any(key in changes for key in (*_GENERATION_FIELDS, "enable_shell", "proxy_id")):
            scaleset.generation += 1
        for key, value in changes.items():
            setattr(scaleset, key, value)
        scaleset.updated_at = state.clock.stamp()
    return Response(200, scaleset_json(state, scaleset, "detail"))


def delete_scaleset(request: Request) -> Response:
    """Delete: 200 empty, also for unknown ids; refused while instances exist or enabled.

    When GitHub does not confirm the delete with 204 (500, 404, bad credentials), GARM still
    answers 200 and keeps the scale set: a 200 proves nothing until a list confirms it.
    """
    state = request.state
    scaleset = state.scalesets.get(parse_numeric_id(request.params["id"]))
    if scaleset is None:
        return Response(200, EMPTY)
    if state.scaleset_instances(scaleset.id):
        raise bad_request("scale set has runners")
    if scaleset.enabled:
        raise bad_request("scale set is enabled; disable it first")
    if state.github.delete(scaleset.github_id):
        del state.scalesets[scaleset.id]
    return Response(200, EMPTY)


def list_scaleset_instances(request: Request) -> Response:
    """List a scale set's instances (`[]` for an unknown id)."""
    state = request.state
    scaleset_id = parse_numeric_id(request.params["id"])
    return Response(200, [instance_json(state, i) for i in state.scaleset_instances(scaleset_id)])


def _pick_template(state: SimState, body: Body) -> Template:
    os_type = body.text("os_type")
    template_id = body.uint("template_id")
    if template_id:
        template = state.templates.get(template_id)
        if template is None:
            raise not_found(_UNKNOWN_TEMPLATE)
        if template.os_type != os_type or template.forge_type != "github":
            raise bad_request("template not found or does not match os type and forge")
        return template
    for template in state.templates.values():
        if (template.owner_id, template.forge_type, template.os_type) == (
            "system",
            "github",
            os_type,
        ):
            return template
    raise bad_request(_NO_TEMPLATE)


def _check_proxy(state: SimState, body: Body, action: str) -> None:
    proxy_id = body.uint("proxy_id") or 0
    if state.garm_version != V021 and proxy_id and proxy_id not in state.proxies:
        raise bad_request(
            f"{action}: error checking scale set proxy: proxy with ID {proxy_id} does not exist"
        )


def _valid_create(body: Body) -> bool:
    required = ("name", "provider_name", "image", "flavor")
    max_runners = body.uint("max_runners") or 0
    return (
        all(body.text(key) for key in required)
        and max_runners >= 1
        and (body.uint("min_idle_runners") or 0) <= max_runners
    )


def _insert(
    state: SimState,
    body: Body,
    entity: Entity,
    template: Template,
    github_id: int,
    labels: list[str],
) -> ScaleSet:
    now = state.clock.stamp()
    extra_specs = body.raw("extra_specs")
    scaleset = ScaleSet(
        id=state.ids.scaleset,
        github_id=github_id,
        entity_id=entity.id,
        name=body.text("name"),
        provider_name=body.text("provider_name"),
        image=body.text("image"),
        flavor=body.text("flavor"),
        os_type=body.text("os_type"),
        os_arch=body.text("os_arch"),
        runner_prefix=body.text("runner_prefix") or "garm",
        runner_group=body.text("github-runner-group") or "Default",
        template_id=template.id,
        tag_ids=list(dict.fromkeys(state.tag_for(label).id for label in labels)),
        created_at=now,
        updated_at=state.clock.stamp(),
        max_runners=body.uint("max_runners") or 0,
        min_idle_runners=body.uint("min_idle_runners") or 0,
        enabled=bool(body.boolean("enabled")),
        disable_update=bool(body.boolean("disable_update")),
        enable_shell=bool(body.boolean("enable_shell")),
        runner_bootstrap_timeout=body.uint("runner_bootstrap_timeout") or 20,
        extra_specs=_compact(extra_specs),
        proxy_id=0 if state.garm_version == V021 else body.uint("proxy_id") or 0,
    )
    state.scalesets[scaleset.id] = scaleset
    state.ids.scaleset += 1
    return scaleset


def _requested_changes(
    scaleset: ScaleSet, body: Body, garm_version: GarmVersion
) -> dict[str, object]:
    """Return the fields the PUT would change (GARM ignores empty strings and absent keys).

    v0.2.1 knows neither `disable_update` nor `proxy_id` on update and ignores both.
    """
    wanted: dict[str, object] = {}
    for key in ("name", "image", "flavor", "os_type", "os_arch", "runner_prefix", "state"):
        if body.text(key):
            wanted[key] = body.text(key)
    if body.text("runner_group"):
        wanted["runner_group"] = body.text("runner_group")
    ignored = _V021_IGNORED_ON_UPDATE if garm_version == V021 else ()
    for key in ("max_runners", "min_idle_runners", "runner_bootstrap_timeout", "proxy_id"):
        if body.uint(key) is not None and key not in ignored:
            wanted[key] = body.uint(key)
    for key in ("enabled", "disable_update", "enable_shell"):
        if body.boolean(key) is not None and key not in ignored:
            wanted[key] = body.boolean(key)
    if body.string("extended_state") is not None:
        wanted["extended_state"] = body.string("extended_state")
    if body.has("extra_specs"):
        wanted["extra_specs"] = _compact(body.raw("extra_specs"))
    return {key: value for key, value in wanted.items() if getattr(scaleset, key) != value}


def _check_update(scaleset: ScaleSet, changes: dict[str, object]) -> None:
    if changes.get("runner_bootstrap_timeout") == 0:
        raise bad_request("runner_bootstrap_timeout cannot be 0")
    min_idle = changes.get("min_idle_runners", scaleset.min_idle_runners)
    max_runners = changes.get("max_runners", scaleset.max_runners)
    if isinstance(min_idle, int) and isinstance(max_runners, int) and min_idle > max_runners:
        raise bad_request("min_idle_runners cannot be larger than max_runners")


def _compact(value: object) -> str:
    if value is None:
        return ""
    try:
        return json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ApiError(400, "Bad Request", "invalid request") from exc


def _dedupe(labels: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for label in labels:
        seen.setdefault(label, label)
    return list(seen)
