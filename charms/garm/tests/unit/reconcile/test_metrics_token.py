"""A metrics token whose claims are not a JSON object is not current.

Written from the survivors of a mutation run of `reconcile.metrics_token`
(docs/reference/testing.md).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json

import pytest

from reconcile.metrics_token import token_is_current

# --- Found by mutation testing (mutmut): claims that are not an object ---
# (was test_metrics_token_exact.py)

SECRET = "jwt-" + "Zq8#vT2m" * 6
NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed(claims: object) -> str:
    """A JWT with these claims, signed with `SECRET` as GARM signs its tokens (HS256)."""
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64url(json.dumps(claims).encode())
    signature = hmac.new(SECRET.encode(), f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64url(signature)}"


@pytest.mark.parametrize(
    "claims",
    [["read_metrics"], "read_metrics", 42, None],
    ids=["array", "string", "number", "null"],
)
def test_a_correctly_signed_token_whose_claims_are_no_object_is_replaced(claims: object):
    """Arrange: a token signed with the right secret whose claims are JSON but not an object.

    Act: check it. Assert: not current (replaced), never an exception.
    """
    assert token_is_current(signed(claims), SECRET, NOW) is False


def test_a_correctly_signed_metrics_token_far_from_expiry_is_current():
    """Arrange: a token signed with the right secret, `read_metrics`, expiring in a year.

    Act: check it. Assert: current (the helper above signs as GARM does).
    """
    expires = NOW + datetime.timedelta(days=365)

    token = signed({"read_metrics": True, "exp": int(expires.timestamp())})

    assert token_is_current(token, SECRET, NOW) is True
