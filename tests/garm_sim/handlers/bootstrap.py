"""First-run, login, controller info and URLs, metrics token, providers."""

from __future__ import annotations

import base64
import re
import uuid
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from garm_sim.auth import TokenSigner, user_problem
from garm_sim.errors import bad_request, conflict, not_authorized
from garm_sim.model import User
from garm_sim.routing import Request, Response, Route
from garm_sim.versions import V021, VERSION_STRINGS
from garm_sim.workers import AGENT_RELEASES_FETCH_NS

_URL_FIELDS = ("metadata_url", "callback_url", "webhook_url", "agent_url")


def routes(signer: TokenSigner) -> list[Route]:
    """Return the bootstrap routes."""
    return [
        Route("POST", "/first-run", first_run, gate="open"),
        Route("POST", "/auth/login", partial(login, signer), gate="init"),
        Route("GET", "/controller", controller_info, gate="controller"),
        Route("PUT", "/controller", update_controller, gate="controller"),
        Route("GET", "/controller-info", controller_info),
        Route("GET", "/metrics-token", partial(metrics_token, signer)),
        Route("GET", "/providers", list_providers),
    ]


def first_run(request: Request) -> Response:
    """Create the admin user, once."""
    state = request.state
    if state.admin is not None:
        raise conflict("already initialized")
    body = request.body()
    username, email, password = body.text("username"), body.text("email"), body.text("password")
    problem = user_problem(username, email, password)
    if problem is not None:
        raise bad_request(problem)
    now = state.clock.stamp()
    state.admin = User(str(uuid.uuid4()), username, email, body.text("full_name"), password, now)
    return Response(200, user_json(state.admin))


def user_json(user: User) -> dict[str, Any]:
    """Return the `User` GARM answers first-run with."""
    out: dict[str, Any] = {"id": user.id, "created_at": user.created_at}
    out |= {"updated_at": user.created_at, "email": user.email, "username": user.username}
    if user.full_name:
        out["full_name"] = user.full_name
    return out | {"enabled": True, "is_admin": True}


def login(signer: TokenSigner, request: Request) -> Response:
    """Exchange the admin's username and password for a token."""
    body = request.body()
    admin = request.state.admin
    if admin is None or (body.text("username"), body.text("password")) != (
        admin.username,
        admin.password,
    ):
        raise not_authorized()
    return Response(200, {"token": signer.issue(request.state, user=admin.username)})


def controller_info(request: Request) -> Response:
    """Return `ControllerInfo`."""
    return Response(200, controller_json(request))


def controller_json(request: Request) -> dict[str, Any]:
    """Return `ControllerInfo`; URL fields are absent until set."""
    controller = request.state.controller
    out: dict[str, Any] = {"controller_id": controller.controller_id, "hostname": "garm-sim"}
    for key in ("metadata_url", "callback_url", "webhook_url"):
        if getattr(controller, key):
            out[key] = getattr(controller, key)
    # GARM joins the webhook base and the id even when the base is empty (then: just the id).
    webhook_base = f"{controller.webhook_url}/" if controller.webhook_url else ""
    out["controller_webhook_url"] = f"{webhook_base}{controller.controller_id}"
    agent_url = controller.agent_url or _origin(controller.callback_url)
    if agent_url:
        out["agent_url"] = agent_url
    out |= {
        "garm_agent_releases_url": controller.garm_agent_releases_url,
        "enable_agent_tools_sync": False,
    }
    if request.state.garm_version != V021:
        out |= {"garm_agent_version": "", "allow_insecure_garm_agent": False}
    out |= {
        "minimum_job_age_backoff": controller.minimum_job_age_backoff,
        "version": VERSION_STRINGS[request.state.garm_version],
    }
    if controller.agent_releases_fetched_at:
        out["cached_garm_agent_release_fetched_at"] = controller.agent_releases_fetched_at
    if controller.ca_cert_bundle:
        out["ca_cert_bundle"] = controller.ca_cert_bundle
    return out


def update_controller(request: Request) -> Response:
    """Set the controller URLs (any scheme, but a scheme and a host are required)."""
    body = request.body()
    controller = request.state.controller
    updates: dict[str, str] = {}
    for key in _URL_FIELDS:
        value = body.string(key)
        if value is None:
            continue
        parts = urlsplit(value)
        if not parts.scheme or not parts.netloc:
            raise bad_request(f"invalid {key}")
        updates[key] = value
    releases = body.string("garm_agent_releases_url")
    if releases:
        updates["garm_agent_releases_url"] = releases
        # The newer GARM validates the index at once but caches it from its worker, after the
        # answer (garm_sim.workers); v0.2.1 reads it on its own schedule.
        if request.state.garm_version != V021:
            due = request.state.clock.now_ns() + AGENT_RELEASES_FETCH_NS
            controller.agent_releases_fetch_due_ns = due
    backoff = body.uint("minimum_job_age_backoff")
    bundle = _ca_bundle_update(body.string("ca_cert_bundle"), body.boolean("clear_ca_cert_bundle"))
    if bundle is not None:
        updates["ca_cert_bundle"] = bundle
    for key, value in updates.items():
        setattr(controller, key, value)
    if backoff is not None:
        controller.minimum_job_age_backoff = backoff
    info = controller_json(request)
    info.pop("hostname")  # GARM does not fill it in the PUT answer
    return Response(200, info)


def _ca_bundle_update(encoded: str | None, clear: bool | None) -> str | None:
    """The controller's new CA bundle (base64), "" to clear it, None to leave it.

    GARM keeps the bundle re-encoded: each certificate once, as standard 64-column PEM
    (garm-behaviour B29).
    """
    if encoded and clear:
        raise bad_request("ca_cert_bundle and clear_ca_cert_bundle are mutually exclusive")
    if clear:
        return ""
    if not encoded:
        return None
    try:
        pem = base64.b64decode(encoded, validate=True)
    except ValueError:
        raise bad_request("invalid ca_cert_bundle") from None
    bodies = [re.sub(rb"\s+", b"", body) for body in _PEM_BODY.findall(pem)]
    if not bodies:
        raise bad_request("invalid ca_cert_bundle")
    blocks = [
        b"-----BEGIN CERTIFICATE-----\n"
        + b"\n".join(body[i : i + 64] for i in range(0, len(body), 64))
        + b"\n-----END CERTIFICATE-----\n"
        for body in dict.fromkeys(bodies)
    ]
    return base64.b64encode(b"".join(blocks)).decode()


_PEM_BODY = re.compile(rb"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.DOTALL)


def metrics_token(signer: TokenSigner, request: Request) -> Response:
    """Return a token that can read /metrics (and nothing else)."""
    return Response(200, {"token": signer.issue(request.state, user="", read_metrics=True)})


def list_providers(request: Request) -> Response:
    """Return the configured providers (key `type`, not `provider_type`)."""
    return Response(200, [dict(provider) for provider in request.state.providers])


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
