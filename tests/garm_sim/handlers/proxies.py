"""Proxies (newer GARM only): outbound proxy definitions that scale sets can point at.

v0.2.1 has none of these routes (404 `Resource not found`), and it ignores `proxy_id` on scale
sets.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from garm_sim.errors import bad_request, conflict, not_found
from garm_sim.jsonbody import Body
from garm_sim.model import Proxy
from garm_sim.routing import EMPTY, Request, Response, Route
from garm_sim.serialise import proxy_json
from garm_sim.state import SimState, parse_numeric_id

_SCHEMES = ("http", "https", "socks5")
_URL_KEYS = ("http_proxy", "https_proxy")


def routes() -> list[Route]:
    """Return the proxy routes."""
    return [
        Route("GET", "/proxies", list_proxies),
        Route("POST", "/proxies", create_proxy),
        Route("GET", "/proxies/{id}", get_proxy),
        Route("PUT", "/proxies/{id}", update_proxy),
        Route("DELETE", "/proxies/{id}", delete_proxy),
    ]


def list_proxies(request: Request) -> Response:
    """List proxies (`[]` when there are none)."""
    return Response(200, [proxy_json(p) for p in request.state.proxies.values()])


def create_proxy(request: Request) -> Response:
    """Create a proxy: a name and at least one proxy URL; names are unique."""
    state = request.state
    body = request.body()
    problem = _create_problem(body)
    if problem:
        raise bad_request(f"failed to validate create params: {problem}")
    name = body.text("name")
    if any(p.name == name for p in state.proxies.values()):
        raise conflict("failed to create proxy: a proxy already exists with the specified name")
    now = state.clock.stamp()
    proxy = Proxy(state.ids.proxy, name, now, now)
    _apply(proxy, body)
    state.proxies[proxy.id] = proxy
    state.ids.proxy += 1
    return Response(200, proxy_json(proxy))


def get_proxy(request: Request) -> Response:
    """Return one proxy by numeric id."""
    return Response(200, proxy_json(find_proxy(request.state, request.params["id"])))


def update_proxy(request: Request) -> Response:
    """Update a proxy's fields (the name may not become empty)."""
    proxy = find_proxy(request.state, request.params["id"])
    body = request.body()
    if body.has("name") and not body.text("name"):
        raise bad_request("failed to validate update params: name cannot be empty")
    for key in _URL_KEYS:
        problem = _url_problem(body.text(key))
        if problem:
            raise bad_request(f"failed to validate update params: {problem}")
    _apply(proxy, body)
    proxy.updated_at = request.state.clock.stamp()
    return Response(200, proxy_json(proxy))


def delete_proxy(request: Request) -> Response:
    """Delete a proxy: 200 empty (also when unknown); refused while a scale set uses it."""
    state = request.state
    proxy_id = parse_numeric_id(request.params["id"])
    if any(s.proxy_id == proxy_id for s in state.scalesets.values()):
        raise bad_request(
            "failed to delete proxy: failed to delete proxy: "
            "cannot delete proxy while in use by pools or scale sets"
        )
    state.proxies.pop(proxy_id, None)
    return Response(200, EMPTY)


def find_proxy(state: SimState, raw_id: str) -> Proxy:
    """Return the proxy with this id.

    Raises:
        ApiError: 404 when there is none.
    """
    proxy = state.proxies.get(parse_numeric_id(raw_id))
    if proxy is None:
        raise not_found("failed to get proxy: failed to get proxy: not found")
    return proxy


def _create_problem(body: Body) -> str:
    if not body.text("name"):
        return "name cannot be empty"
    if not any(body.text(key) for key in _URL_KEYS):
        return "at least one of http_proxy or https_proxy must be set"
    for key in _URL_KEYS:
        problem = _url_problem(body.text(key))
        if problem:
            return problem
    if body.text("password") and not body.text("username"):
        return "password cannot be set without a username"
    return ""


def _url_problem(url: str) -> str:
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        return (
            f'invalid proxy URL scheme "{parts.scheme}"; '
            "supported schemes are http, https and socks5"
        )
    if not parts.hostname:
        return f'invalid proxy URL: "{url}"; missing host'
    if parts.username or parts.password:
        return (
            "proxy URLs must not embed credentials; use the username and password fields instead"
        )
    return ""


def _apply(proxy: Proxy, body: Body) -> None:
    for key in ("name", "description", *_URL_KEYS, "no_proxy", "username", "password"):
        value = body.string(key)
        if value is not None:
            setattr(proxy, key, value)
