"""A small stateful GARM for unit tests: the bootstrap gates and GARM's real bodies.

Gate bodies are the ones docs/reference/garm-behaviour.md B8 states; error bodies and the
scale-set list come from the recordings in tests/contract/wire/.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

WIRE = Path(__file__).resolve().parents[4] / "tests" / "contract" / "wire"
CONTROLLER_ID = "0d0d3c8a-6f44-4b86-9a42-6b1a1ef8a7a1"
INIT_REQUIRED = {"error": "init_required", "details": "Missing superuser"}
URLS_REQUIRED = {
    "error": "urls_required",
    "details": "Missing required URLs. Make sure you update the metadata and callback URLs",
}
ALREADY_INITIALISED = {"error": "Conflict", "details": "already initialized"}
NOT_AUTHORIZED = {"error": "Not Authorized", "details": ""}
AUTH_FAILED = {"error": "Authentication failed", "details": ""}
URL_FIELDS = ("metadata_url", "callback_url", "webhook_url", "agent_url")


def recorded_body(name: str) -> str:
    """The raw response of one recorded step."""
    return json.loads((WIRE / f"{name}.json").read_text())["raw_response"]


@dataclasses.dataclass
class FakeGarm:
    """GARM's bootstrap behaviour, enough for the charm: first-run, login, controller URLs."""

    admin: tuple[str, str] | None = None
    urls: dict[str, str] = dataclasses.field(default_factory=dict[str, str])
    calls: list[str] = dataclasses.field(default_factory=list[str])
    tokens: set[str] = dataclasses.field(default_factory=set[str])
    scalesets_body: str = "[]"
    credentials_body: str = "null"
    # What PUT /controller last set as the runners' CA bundle (base64 of the PEM), "" for none.
    ca_cert_bundle: str = ""
    # What GET /metrics-token answers, and how often it was asked.
    metrics_token: str = "metrics.token.signature"
    metrics_tokens_issued: int = 0
    # When set, the next token handed out is already expired (GARM answers 401 to it).
    expire_next_token: bool = False
    # "METHOD /path" -> (HTTP status, raw body): answered instead of the route, every time.
    answers: dict[str, tuple[int, str]] = dataclasses.field(
        default_factory=dict[str, tuple[int, str]]
    )

    def install(self, server: HTTPServer) -> None:
        """Answer every request on the server."""
        server.expect_request(re.compile(".*")).respond_with_handler(self.handle)

    def handle(self, request: Request) -> Response:
        """Route one request."""
        call = f"{request.method} {request.path}"
        self.calls.append(call)
        if call in self.answers:
            status, body = self.answers[call]
            return Response(body, status=status, content_type="application/json")
        route = {
            ("POST", "/api/v1/first-run"): self._first_run,
            ("POST", "/api/v1/auth/login"): self._login,
            ("GET", "/api/v1/controller-info"): self._controller_info,
            ("PUT", "/api/v1/controller"): self._update_controller,
            ("GET", "/api/v1/scalesets"): self._scalesets,
            ("GET", "/api/v1/github/credentials"): self._credentials,
            ("GET", "/api/v1/instances"): lambda _: _json(200, []),
            ("GET", "/api/v1/templates"): lambda _: _json(200, []),
            ("GET", "/api/v1/metrics-token"): self._metrics_token,
        }.get((request.method, request.path))
        if route is None:
            return _json(404, {"error": "Not Found", "details": ""})
        return route(request)

    def writes(self) -> list[str]:
        """The calls that change GARM."""
        return [call for call in self.calls if call.split()[0] in ("POST", "PUT", "DELETE")]

    def _first_run(self, request: Request) -> Response:
        if self.admin is not None:
            return _json(409, ALREADY_INITIALISED)
        body = request.get_json()
        if not str(body["username"]).isalnum():
            return _json(400, {"error": "Bad Request", "details": "invalid username"})
        self.admin = (body["username"], body["password"])
        return _json(
            200,
            {
                "id": "6c1f6f4e-7d3b-4a55-9a56-0c8c6a3f0f11",
                "created_at": "2026-11-29T10:00:00Z",
                "updated_at": "2026-11-29T10:00:00Z",
                "email": body["email"],
                "username": body["username"],
                "enabled": True,
                "is_admin": True,
            },
        )

    def _login(self, request: Request) -> Response:
        if self.admin is None:
            return _json(409, INIT_REQUIRED)
        body = request.get_json()
        if (body.get("username"), body.get("password")) != self.admin:
            return _json(401, NOT_AUTHORIZED)
        token = f"header.payload{len(self.calls)}.signature"
        if self.expire_next_token:
            self.expire_next_token = False
        else:
            self.tokens.add(token)
        return _json(200, {"token": token})

    def _gate(self, request: Request, *, urls: bool = True) -> Response | None:
        if self.admin is None:
            return _json(409, INIT_REQUIRED)
        if urls and not (self.urls.get("metadata_url") and self.urls.get("callback_url")):
            return _json(409, URLS_REQUIRED)
        header = request.headers.get("Authorization", "")
        if header.removeprefix("Bearer ") not in self.tokens:
            return _json(401, AUTH_FAILED)
        return None

    def _controller_info(self, request: Request) -> Response:
        return self._gate(request) or _json(200, self._info())

    def _update_controller(self, request: Request) -> Response:
        refused = self._gate(request, urls=False)
        if refused is not None:
            return refused
        body = request.get_json()
        self.urls.update({key: body[key] for key in URL_FIELDS if body.get(key)})
        if body.get("ca_cert_bundle"):
            self.ca_cert_bundle = body["ca_cert_bundle"]
        elif body.get("clear_ca_cert_bundle"):
            self.ca_cert_bundle = ""
        return _json(200, self._info())

    def _metrics_token(self, request: Request) -> Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        self.metrics_tokens_issued += 1
        return _json(200, {"token": self.metrics_token})

    def _scalesets(self, request: Request) -> Response:
        return self._gate(request) or Response(
            self.scalesets_body, status=200, content_type="application/json"
        )

    def _credentials(self, request: Request) -> Response:
        return self._gate(request) or Response(
            self.credentials_body, status=200, content_type="application/json"
        )

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "controller_id": CONTROLLER_ID,
            "hostname": "garm-0",
            "garm_agent_releases_url": "https://api.github.com/repos/cloudbase/garm-agent/releases",
            "enable_agent_tools_sync": False,
            "garm_agent_version": "",
            "allow_insecure_garm_agent": False,
            "minimum_job_age_backoff": 30,
            "version": "v0.2.1",
        }
        info.update(self.urls)
        if self.ca_cert_bundle:
            # GARM answers the bundle it keeps base64-encoded (garm-behaviour B29).
            info["ca_cert_bundle"] = self.ca_cert_bundle
        if self.urls.get("webhook_url"):
            info["controller_webhook_url"] = f"{self.urls['webhook_url']}/{CONTROLLER_ID}"
        return info


def _json(status: int, body: Any) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")
