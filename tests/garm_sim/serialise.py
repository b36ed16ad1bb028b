"""GARM's JSON shapes, including which fields Go's `omitempty` leaves out.

Keys come out in the order of GARM's Go structs, because that is what the recordings show.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from garm_sim import workers
from garm_sim.clock import GO_ZERO_TIME
from garm_sim.model import (
    Credentials,
    Endpoint,
    Entity,
    Instance,
    Proxy,
    ScaleSet,
    Template,
)
from garm_sim.state import SimState, b64encode
from garm_sim.versions import V021

Json = dict[str, Any]
ScaleSetView = Literal["detail", "all", "entity"]


def endpoint_json(endpoint: Endpoint) -> Json:
    """Return a `ForgeEndpoint`."""
    out: Json = {
        "name": endpoint.name,
        "description": endpoint.description,
        "api_base_url": endpoint.api_base_url,
        "upload_base_url": endpoint.upload_base_url,
        "base_url": endpoint.base_url,
    }
    _put(out, "ca_cert_bundle", endpoint.ca_cert_bundle)
    out |= {
        "created_at": endpoint.created_at,
        "updated_at": endpoint.updated_at,
        "endpoint_type": "github",
    }
    return out


def credentials_json(
    state: SimState, creds: Credentials, *, rate_limit: bool = False, entities: bool = False
) -> Json:
    """Return `ForgeCredentials` (note the response key `auth-type`); secrets never appear.

    Args:
        state: the database.
        creds: the record.
        rate_limit: add GitHub's rate limit as GARM's cache holds it (GET and list answers;
            not the create answer nor credentials embedded in entities), once GARM fetched
            one for these credentials (no key before: `garm_sim.workers`). `used` is omitted
            when 0, like every zero field of it.
        entities: list the repositories, organizations and enterprises using them (the answer
            to GET by id), each in its embedded form.
    """
    endpoint = state.endpoints[creds.endpoint]
    out: Json = {"id": creds.id, "name": creds.name}
    _put(out, "description", creds.description)
    out |= {
        "api_base_url": endpoint.api_base_url,
        "upload_base_url": endpoint.upload_base_url,
        "base_url": endpoint.base_url,
        "auth-type": creds.auth_type,
        "forge_type": "github",
    }
    if entities:
        for kind, key in _ENTITY_LISTS:
            users = [e for e in state.entities.values() if e.kind == kind]
            found = [
                entity_json(state, e, embedded=True) for e in users if e.credentials_id == creds.id
            ]
            _put(out, key, found)
    out |= {
        "endpoint": endpoint_json(endpoint),
        "created_at": creds.created_at,
        "updated_at": creds.updated_at,
    }
    fetched = rate_limit and (creds.rate_limit_seen or workers.rate_limit_fetched(state, creds))
    if fetched and not state.github.behaviour.bad_credentials:
        reset = int(state.clock.now()) + _RATE_LIMIT_WINDOW
        out["rate_limit"] = {"limit": _RATE_LIMIT, "remaining": _RATE_LIMIT, "reset": reset}
    return out


def entity_json(
    state: SimState, entity: Entity, *, embedded: bool = False, events: bool = False
) -> Json:
    """Return a repository, organization or enterprise.

    Args:
        state: the database.
        entity: the record.
        embedded: the form inside a credentials answer: GARM leaves the entity's credentials
            and endpoint empty there (zero times only).
        events: add the entity's events (the answer to GET by id only).
    """
    creds = state.credentials[entity.credentials_id]
    credentials = _ZERO_CREDENTIALS if embedded else credentials_json(state, creds)
    endpoint = _ZERO_ENDPOINT if embedded else endpoint_json(state.entity_endpoint(entity))
    out: Json = {"id": entity.id}
    if entity.kind == "repository":
        # GARM's Repository struct orders its fields differently from Organization's.
        out |= {"owner": entity.owner, "name": entity.name, "credentials_name": creds.name}
        out |= {"credentials_id": creds.id, "credentials": credentials}
        out |= {"agent_mode": entity.agent_mode, "pool_manager_status": _pool_manager(entity)}
        out |= {"pool_balancing_type": entity.pool_balancing_type, "endpoint": endpoint}
        out |= {"created_at": entity.created_at, "updated_at": entity.updated_at}
        if events:
            _put(out, "events", [dict(event) for event in entity.events])
        return out
    out |= {
        "name": entity.name,
        "credentials_name": creds.name,
        "credentials": credentials,
        "credentials_id": creds.id,
        "pool_manager_status": _pool_manager(entity),
        "pool_balancing_type": entity.pool_balancing_type,
        "endpoint": endpoint,
        "created_at": entity.created_at,
        "updated_at": entity.updated_at,
    }
    if events:
        _put(out, "events", [dict(event) for event in entity.events])
    out["agent_mode"] = entity.agent_mode
    return out


def _pool_manager(entity: Entity) -> Json:
    """The entity's pool manager status: `{}` in the create answer, running from a pass on."""
    return {"running": True} if entity.pool_manager_running else {}


_ZERO_ENDPOINT: Json = {"created_at": GO_ZERO_TIME, "updated_at": GO_ZERO_TIME}
_ZERO_CREDENTIALS: Json = {"endpoint": _ZERO_ENDPOINT} | _ZERO_ENDPOINT


def template_json(template: Template, *, with_data: bool) -> Json:
    """Return a `Template`; list responses carry `data: null`; `description` even when empty."""
    out: Json = {
        "id": template.id,
        "created_at": template.created_at,
        "updated_at": template.updated_at,
        "name": template.name,
        "description": template.description,
    }
    out |= {
        "os_type": template.os_type,
        "forge_type": template.forge_type,
        "data": b64encode(template.data) if with_data else None,
        "owner_id": template.owner_id,
    }
    return out


def instance_json(
    state: SimState, instance: Instance, *, embedded: bool = False, detail: bool = False
) -> Json:
    """Return an `Instance`; instances embedded in a scale set lack `provider_name`.

    Only the answer for one instance (`detail`) carries its status messages.
    """
    out: Json = {"id": instance.id}
    # The provider's id and OS details come with its create answer: none while booting.
    _put(out, "provider_id", instance.provider_id)
    out |= {
        "provider_name": "" if embedded else instance.provider_name,
        "agent_id": instance.agent_id,
        "name": instance.name,
    }
    _put(out, "os_type", instance.os_type)
    if instance.provider_id:
        out |= {"os_name": "ubuntu", "os_version": "24.04"}
    _put(out, "os_arch", instance.os_arch)
    out |= {"status": instance.status, "runner_status": instance.runner_status}
    out["scale_set_id"] = instance.scaleset_id
    if instance.provider_fault:
        out["provider_fault"] = b64encode(instance.provider_fault)
    if detail:
        _put(out, "status_messages", [dict(message) for message in instance.status_messages])
    out |= {
        "created_at": instance.created_at,
        "updated_at": instance.updated_at,
        "github-runner-group": instance.runner_group,
        "heartbeat": GO_ZERO_TIME,
        "capabilities": {"has_shell": False},
        "generation": 0,
    }
    return out


_RATE_LIMIT = 5000
_ENTITY_LISTS = (
    ("repository", "repositories"),
    ("organization", "organizations"),
    ("enterprise", "enterprises"),
)
_RATE_LIMIT_WINDOW = 3600


def proxy_json(proxy: Proxy) -> Json:
    """Return a `Proxy` (newer GARM); the password is never sent back."""
    out: Json = {"id": proxy.id, "created_at": proxy.created_at}
    out |= {"updated_at": proxy.updated_at, "name": proxy.name}
    for key in ("description", "http_proxy", "https_proxy", "no_proxy", "username"):
        _put(out, key, getattr(proxy, key))
    return out


def scaleset_json(state: SimState, scaleset: ScaleSet, view: ScaleSetView) -> Json:
    """Return a `ScaleSet` as GARM sends it from one of its three read paths.

    Args:
        state: the database.
        scaleset: the record.
        view: `detail` (GET by id, create, update), `all` (GET /scalesets: no
            `template_name`, `instances`) or `entity` (per-entity lists: the same omissions
            and an empty endpoint).
    """
    out: Json = {"runner_prefix": scaleset.runner_prefix}
    out |= {"created_at": scaleset.created_at, "updated_at": scaleset.updated_at}
    out["id"] = scaleset.id
    _put(out, "scale_set_id", scaleset.github_id)
    out |= {"name": scaleset.name, "disable_update": scaleset.disable_update}
    out["state"] = scaleset.state
    _put(out, "extended_state", scaleset.extended_state)
    out["provider_name"] = scaleset.provider_name
    _put(out, "max_runners", scaleset.max_runners)
    _put(out, "min_idle_runners", scaleset.min_idle_runners)
    out |= {"image": scaleset.image, "flavor": scaleset.flavor, "os_type": scaleset.os_type}
    _put(out, "os_arch", scaleset.os_arch)
    _put(out, "enabled", scaleset.enabled)
    if view == "detail":
        embedded = [
            instance_json(state, i, embedded=True) for i in state.scaleset_instances(scaleset.id)
        ]
        _put(out, "instances", embedded)
    _put(out, "desired_runner_count", scaleset.desired_runner_count)
    out |= {"enable_shell": scaleset.enable_shell, "generation": scaleset.generation}
    out["endpoint"] = _scaleset_endpoint(state, scaleset, view)
    out["runner_bootstrap_timeout"] = scaleset.runner_bootstrap_timeout
    if scaleset.extra_specs:
        # Every read path carries them (observed on both binaries), lists included.
        out["extra_specs"] = json.loads(scaleset.extra_specs)
    out["github-runner-group"] = scaleset.runner_group
    tags = sorted((state.tags[tag_id] for tag_id in scaleset.tag_ids), key=lambda tag: tag.id)
    _put(out, "tags", [{"id": tag.id, "name": tag.name} for tag in tags])
    out["status_messages"] = None
    out |= _entity_keys(state, state.entities[scaleset.entity_id])
    out["template_id"] = scaleset.template_id
    if view == "detail":
        out["template_name"] = state.templates[scaleset.template_id].name
    proxy = state.proxies.get(scaleset.proxy_id)
    if proxy is not None and state.garm_version != V021:
        # Only the detail view joins the proxy's name; lists carry the id alone.
        out["proxy_id"] = proxy.id
        if view == "detail":
            out["proxy_name"] = proxy.name
    return out


def _scaleset_endpoint(state: SimState, scaleset: ScaleSet, view: ScaleSetView) -> Json:
    if view == "entity":
        return {"created_at": GO_ZERO_TIME, "updated_at": GO_ZERO_TIME}
    return endpoint_json(state.entity_endpoint(state.entities[scaleset.entity_id]))


def _entity_keys(state: SimState, entity: Entity) -> Json:
    prefix = {"repository": "repo", "organization": "org", "enterprise": "enterprise"}[entity.kind]
    return {f"{prefix}_id": entity.id, f"{prefix}_name": entity.display_name}


def _put(out: Json, key: str, value: Any) -> None:
    """Set a key unless the value is Go's zero value (what `omitempty` drops)."""
    if value not in (None, "", 0, False, [], {}):
        out[key] = value
