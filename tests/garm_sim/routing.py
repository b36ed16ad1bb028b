"""Routes: method + path template -> handler, with the middleware gate each route sits behind."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from garm_sim.jsonbody import Body
from garm_sim.state import SimState

API_PREFIX = "/api/v1"

# GARM's middleware chains (apiserver/routers/routers.go):
#   open       /first-run: nothing
#   init       /auth/login: init-required only
#   controller /controller: init-required -> JWT (no URL check)
#   full       everything else: init-required -> URLs-required -> JWT
Gate = Literal["open", "init", "controller", "full"]

EMPTY: Any = object()  # a response with no body at all (GARM's DELETE answers)


@dataclass
class Request:
    """What a handler sees of a request."""

    state: SimState
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    raw_body: bytes
    username: str = ""
    # The `Authorization` header (the instance token, for callbacks).
    headers_authorization: str | None = None

    def body(self) -> Body:
        """Return the decoded JSON body (400 `invalid request` if it is not JSON)."""
        return Body.parse(self.raw_body)

    def flag(self, name: str) -> bool:
        """Return whether a boolean query parameter is true."""
        return self.query.get(name, "").lower() in ("true", "1")


@dataclass
class Response:
    """A handler's answer; `body` is JSON-encoded unless it is `EMPTY`."""

    status: int = 200
    body: Any = field(default=EMPTY)


Handler = Callable[[Request], Response]


@dataclass
class Route:
    """One route."""

    method: str
    template: str
    handler: Handler
    gate: Gate = "full"
    pattern: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        """Compile the template: `{name}` matches one path segment."""
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", API_PREFIX + self.template)
        self.pattern = re.compile(f"^{regex}/?$")

    @property
    def full_template(self) -> str:
        """Return the template with the API prefix, as the request log records it."""
        return API_PREFIX + self.template


@dataclass
class Match:
    """A matched route and its path parameters; `route` is None for a wrong method."""

    route: Route | None
    params: dict[str, str]
    template: str


class Router:
    """Finds the route for a method and path."""

    def __init__(self, routes: list[Route]) -> None:
        self._routes = routes

    def match(self, method: str, path: str) -> Match | None:
        """Return the match, a method-less match (405) or None (404)."""
        path_matched: Route | None = None
        for route in self._routes:
            found = route.pattern.match(path)
            if found is None:
                continue
            if route.method == method:
                return Match(route, found.groupdict(), route.full_template)
            path_matched = route
        if path_matched is not None:
            return Match(None, {}, path_matched.full_template)
        return None
