"""Whether the metrics scrape's token still opens GARM's `/metrics`. No ops imports.

GARM answers `/metrics` only with a token from `GET /api/v1/metrics-token` (garm-behaviour
B28): an HS256 JWT signed with GARM's JWT secret, claiming `read_metrics`, expiring after the
JWT time-to-live. The charm knows that secret, so it checks the token it keeps here, without a
call: a token signed with a rotated secret, or close to its expiry, is replaced.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
from typing import Any, Final, cast

# Replaced this long before it expires, so a scrape never meets an expired token.
RENEW_BEFORE: Final = datetime.timedelta(days=30)


def token_is_current(token: str, jwt_secret: str, now: datetime.datetime) -> bool:
    """Whether `token` is GARM's metrics token, signed with `jwt_secret`, not about to expire."""
    parts = token.split(".")
    if len(parts) != 3:  # header, claims, signature
        return False
    header, claims, signature = parts
    expected = hmac.new(jwt_secret.encode(), f"{header}.{claims}".encode(), hashlib.sha256)
    if not hmac.compare_digest(_b64url(expected.digest()), signature):
        return False
    decoded = _claims(claims)
    expires = decoded.get("exp")
    if decoded.get("read_metrics") is not True or not isinstance(expires, int | float):
        return False
    return expires - now.timestamp() > RENEW_BEFORE.total_seconds()


def _claims(encoded: str) -> dict[str, Any]:
    try:
        decoded: Any = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except ValueError:
        return {}
    return cast("dict[str, Any]", decoded) if isinstance(decoded, dict) else {}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
