"""GitHub endpoints and credentials."""

from __future__ import annotations

import base64
import binascii
from urllib.parse import urlsplit

from garm_sim.errors import ApiError, bad_request, conflict, not_found, server_error
from garm_sim.jsonbody import Body
from garm_sim.model import Credentials, Endpoint
from garm_sim.routing import EMPTY, Request, Response, Route
from garm_sim.serialise import credentials_json, endpoint_json
from garm_sim.state import SimState, parse_numeric_id

_URL_KEYS = ("api_base_url", "upload_base_url", "base_url")
_PKCS1_MARKER = b"-----BEGIN RSA PRIVATE KEY-----"
_CREATE_CREDENTIALS = "failed to create github credentials: error creating github credentials: "
# GARM checks the users of credentials in this order and names the first kind it finds.
_IN_USE = (
    ("repository", "repositories"),
    ("organization", "organizations"),
    ("enterprise", "enterprises"),
)


def routes() -> list[Route]:
    """Return the endpoint and credentials routes."""
    return [
        Route("GET", "/github/endpoints", list_endpoints),
        Route("POST", "/github/endpoints", create_endpoint),
        Route("GET", "/github/endpoints/{name}", get_endpoint),
        Route("DELETE", "/github/endpoints/{name}", delete_endpoint),
        Route("GET", "/github/credentials", list_credentials),
        Route("GET", "/credentials", list_credentials),
        Route("POST", "/github/credentials", create_credentials),
        Route("GET", "/github/credentials/{id}", get_credentials),
        Route("PUT", "/github/credentials/{id}", update_credentials),
        Route("DELETE", "/github/credentials/{id}", delete_credentials),
    ]


def list_endpoints(request: Request) -> Response:
    """List endpoints."""
    return Response(200, [endpoint_json(e) for e in request.state.endpoints.values()])


def create_endpoint(request: Request) -> Response:
    """Create an endpoint: all three URLs required, http(s) with a host; duplicates 409."""
    state = request.state
    body = request.body()
    name = body.text("name")
    urls = {key: body.text(key) for key in _URL_KEYS}
    for key, value in urls.items():
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise bad_request(f"invalid {key}")
    if _find_endpoint(state, name) is not None:
        raise conflict(
            "failed to create github endpoint: error creating github endpoint: "
            "error github endpoint already exists: duplicate"
        )
    now = state.clock.stamp()
    endpoint = Endpoint(
        name=name,
        description=body.text("description"),
        created_at=now,
        updated_at=now,
        ca_cert_bundle=body.text("ca_cert_bundle"),
        **urls,
    )
    state.endpoints[name] = endpoint
    return Response(200, endpoint_json(endpoint))


def get_endpoint(request: Request) -> Response:
    """Return one endpoint (name matched case-insensitively)."""
    endpoint = _find_endpoint(request.state, request.params["name"])
    if endpoint is None:
        raise not_found("failed to get github endpoint: github endpoint not found: not found")
    return Response(200, endpoint_json(endpoint))


def delete_endpoint(request: Request) -> Response:
    """Delete an endpoint: 204, refused while credentials use it."""
    state = request.state
    endpoint = _find_endpoint(state, request.params["name"])
    if endpoint is None:
        return Response(204)
    if any(c.endpoint == endpoint.name for c in state.credentials.values()):
        raise bad_request(
            "failed to delete github endpoint: error deleting github endpoint: "
            "cannot delete endpoint with associated entities: invalid request"
        )
    del state.endpoints[endpoint.name]
    return Response(204)


def list_credentials(request: Request) -> Response:
    """List credentials: JSON `null` when there are none (a nil Go slice)."""
    state = request.state
    found = [credentials_json(state, c, rate_limit=True) for c in state.credentials.values()]
    return Response(200, found or None)


def create_credentials(request: Request) -> Response:
    """Create PAT or App credentials; App keys must be PKCS#1 or GARM answers 500."""
    state = request.state
    body = request.body()
    name, endpoint_name = body.text("name"), body.text("endpoint")
    if not name:
        raise bad_request("missing name")
    endpoint = _find_endpoint(state, endpoint_name)
    if endpoint is None:
        raise not_found(f"{_CREATE_CREDENTIALS}github endpoint not found: not found")
    auth_type = body.text("auth_type")
    secret = _secret(body, auth_type)
    if any(c.name.lower() == name.lower() for c in state.credentials.values()):
        raise conflict(f"{_CREATE_CREDENTIALS}github credentials already exists: duplicate")
    now = state.clock.stamp()
    creds = Credentials(
        state.ids.credentials,
        name,
        body.text("description"),
        auth_type,
        endpoint.name,
        now,
        now,
        secret,
        state.clock.now_ns(),
    )
    state.credentials[creds.id] = creds
    state.ids.credentials += 1
    return Response(200, credentials_json(state, creds))


def get_credentials(request: Request) -> Response:
    """Return one set of credentials by numeric id."""
    creds = _credentials(request)
    return Response(200, credentials_json(request.state, creds, rate_limit=True, entities=True))


def update_credentials(request: Request) -> Response:
    """Update name, description or the secret; switching between PAT and App is refused."""
    creds = _credentials(request)
    body = request.body()
    if body.has("pat") and body.has("app"):
        raise bad_request("cannot update both PAT and App")
    for kind in ("pat", "app"):
        if body.has(kind):
            if kind != creds.auth_type:
                raise bad_request(f"cannot update {kind} credentials of a {creds.auth_type}")
            creds.secret = _secret(body, kind)
    creds.name = body.string("name") or creds.name
    creds.description = body.string("description") or creds.description
    creds.updated_at = request.state.clock.stamp()
    return Response(200, credentials_json(request.state, creds))


def delete_credentials(request: Request) -> Response:
    """Delete credentials: 204 (also for unknown ids); refused while entities use them."""
    state = request.state
    creds_id = parse_numeric_id(request.params["id"])
    for kind, plural in _IN_USE:
        if any(e.credentials_id == creds_id and e.kind == kind for e in state.entities.values()):
            raise bad_request(
                "failed to delete github credentials: error deleting github credentials: "
                f"cannot delete credentials with {plural}: invalid request"
            )
    state.credentials.pop(creds_id, None)
    return Response(204, EMPTY)


def find_credentials_by_name(state: SimState, name: str) -> Credentials | None:
    """Return the credentials with this name (case-insensitive), if any."""
    return next((c for c in state.credentials.values() if c.name.lower() == name.lower()), None)


def _credentials(request: Request) -> Credentials:
    creds = request.state.credentials.get(parse_numeric_id(request.params["id"]))
    if creds is None:
        raise not_found(
            "failed to get github credentials: github credentials not found: not found"
        )
    return creds


def _find_endpoint(state: SimState, name: str) -> Endpoint | None:
    return next((e for e in state.endpoints.values() if e.name.lower() == name.lower()), None)


def _secret(body: Body, auth_type: str) -> dict[str, object]:
    if auth_type == "pat":
        pat = body.obj("pat")
        if pat is None or not pat.text("oauth2_token"):
            raise bad_request("missing pat oauth2_token")
        return {"oauth2_token": pat.text("oauth2_token")}
    if auth_type == "app":
        return _app_secret(body.obj("app"))
    raise bad_request(f"invalid auth_type {auth_type!r}")


def _app_secret(app: Body | None) -> dict[str, object]:
    if app is None or not app.uint("app_id") or not app.uint("installation_id"):
        raise bad_request("missing app_id or installation_id")
    try:
        key = base64.b64decode(app.text("private_key_bytes"), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ApiError(400, "Bad Request", "invalid request") from exc
    if not key:
        raise bad_request("missing private_key_bytes")
    if _PKCS1_MARKER not in key:
        # GARM parses the key with x509.ParsePKCS1PrivateKey and reports the untyped error.
        raise server_error()
    return {"app_id": app.uint("app_id"), "installation_id": app.uint("installation_id")}
