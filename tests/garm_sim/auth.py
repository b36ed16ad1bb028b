"""Tokens, first-run validation and the middleware gates (init, URLs, JWT)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from typing import Any, cast

from garm_sim.errors import authentication_failed, init_required, urls_required
from garm_sim.model import Instance
from garm_sim.password import is_strong
from garm_sim.routing import Gate
from garm_sim.state import SimState

TOKEN_TTL_SECONDS = 24 * 3600
# GARM's instance tokens outlive the bootstrap timeout by its reap interval.
_REAP_SECONDS = 5 * 60
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class TokenSigner:
    """Issues and checks HS256 JWTs like GARM's (`user`, `is_admin`, `exp`, `iss: garm`, ...).

    Args:
        secret: GARM's `[jwt_auth] secret` (random when not given).
        time_to_live: GARM's `[jwt_auth] time_to_live`, in seconds.
    """

    def __init__(self, secret: str | None = None, time_to_live: float = TOKEN_TTL_SECONDS) -> None:
        self._secret = secret.encode() if secret else secrets.token_bytes(32)
        self.time_to_live = time_to_live

    def rekey(self, secret: str) -> None:
        """Sign with another secret from now on (GARM restarted with a new one)."""
        self._secret = secret.encode()

    def issue(self, state: SimState, *, user: str, read_metrics: bool = False) -> str:
        """Return a signed token for a user (empty user = a metrics token)."""
        claims: dict[str, Any] = {
            "user": user,
            "token_id": secrets.token_hex(8),
            "full_name": state.admin.full_name if state.admin and user else "",
            "is_admin": bool(user),
            "read_metrics": read_metrics,
            "generation": state.admin.generation if state.admin else 0,
            "exp": int(state.clock.now() + self.time_to_live),
            "iss": "garm",
        }
        return self._signed(claims)

    def user_of(self, state: SimState, authorization: str | None) -> str:
        """Return the admin username a request is authenticated as.

        Args:
            state: the database (for the admin and the clock).
            authorization: the `Authorization` header.

        Raises:
            ApiError: 401 `Authentication failed` for a missing, malformed, forged or expired
                token, and for a metrics token (it has no user).
        """
        parts = (authorization or "").split(" ")
        if len(parts) != 2:  # GARM splits on spaces and wants exactly two parts
            raise authentication_failed()
        claims = self._verified_claims(parts[1])
        admin = state.admin
        valid = (
            claims is not None
            and admin is not None
            and claims.get("user") == admin.username
            and claims.get("generation") == admin.generation
            and int(claims.get("exp", 0)) > state.clock.now()
        )
        if not valid or admin is None:
            raise authentication_failed()
        return admin.username

    def issue_instance(self, state: SimState, instance: Instance) -> str:
        """Return the token GARM hands a new instance's provider (`instance-token`).

        It lasts the scale set's bootstrap timeout plus GARM's reap interval (5 minutes).
        """
        scaleset = state.scalesets.get(instance.scaleset_id)
        minutes = scaleset.runner_bootstrap_timeout if scaleset is not None else 20
        entity = state.entities.get(scaleset.entity_id) if scaleset is not None else None
        claims: dict[str, Any] = {
            "id": instance.id,
            "name": instance.name,
            "provider_id": "",
            "scope": entity.kind if entity is not None else "",
            "entity": entity.display_name if entity is not None else "",
            "create_attempt": 0,
            "forge_type": "github",
            "is_agent": False,
            "exp": int(state.clock.now() + minutes * 60 + _REAP_SECONDS),
            "iss": "garm",
        }
        return self._signed(claims)

    def instance_of(self, state: SimState, authorization: str | None) -> Instance:
        """Return the instance a callback is authenticated as (GARM's instance middleware).

        Raises:
            ApiError: 401 `Authentication failed` for a missing, forged or expired token, an
                unknown instance, a runner that finished installing (only `pending` and
                `installing` runners may call back) or an instance neither creating nor
                running.
        """
        parts = (authorization or "").split(" ")
        claims = self._verified_claims(parts[1]) if len(parts) == 2 else None
        if claims is None or claims.get("is_agent") or not claims.get("name"):
            raise authentication_failed()
        instance = state.instances.get(str(claims["name"]))
        valid = (
            instance is not None
            and int(claims.get("exp", 0)) > state.clock.now()
            and instance.runner_status in ("pending", "installing")
            and instance.status in ("creating", "running")
        )
        if not valid or instance is None:
            raise authentication_failed()
        return instance

    def _signed(self, claims: dict[str, Any]) -> str:
        header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = _b64url(json.dumps(claims).encode())
        return f"{header}.{payload}.{self._sign(f'{header}.{payload}')}"

    def _verified_claims(self, token: str) -> dict[str, Any] | None:
        pieces = token.split(".")
        if len(pieces) != 3:
            return None
        header, payload, signature = pieces
        if not hmac.compare_digest(signature, self._sign(f"{header}.{payload}")):
            return None
        try:
            decoded: Any = json.loads(
                base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
            )
        except ValueError:
            return None
        return cast("dict[str, Any]", decoded) if isinstance(decoded, dict) else None

    def _sign(self, signing_input: str) -> str:
        digest = hmac.new(self._secret, signing_input.encode(), hashlib.sha256).digest()
        return _b64url(digest)


def check_gate(state: SimState, gate: Gate) -> None:
    """Apply the init-required and URLs-required middlewares in GARM's order.

    Raises:
        ApiError: 409 `init_required` before first-run, 409 `urls_required` before the
            controller URLs are set (on `full` routes, before authentication).
    """
    if gate == "open":
        return
    if state.admin is None:
        raise init_required()
    controller = state.controller
    if gate == "full" and not (controller.metadata_url and controller.callback_url):
        raise urls_required()


def user_problem(username: str, email: str, password: str) -> str | None:
    """Return why first-run refuses these values, or None when they are acceptable."""
    if not username or not email:
        return "missing username or email"
    if len(username) > 64 or not username.isalnum():
        return "invalid username"
    if len(email) > 254 or not _EMAIL.match(email):
        return "invalid email address"
    if not is_strong(password):
        return "password is too weak"
    return None


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
