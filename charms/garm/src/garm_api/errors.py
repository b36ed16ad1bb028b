"""Everything `garm_api` raises about GARM, and how an answer maps onto it.

Errors form families that never overlap:

- `GarmApiError`: GARM answered and refused (400, 401, 404, 409, 5xx...). Each carries the HTTP
  status, GARM's `error` title and `details`.
- `GarmUnreachable`: no answer at all (refused, reset, timed out, TLS failure, a redirect). A
  handler meant for refusals (`except GarmApiError`) can never swallow an outage.
- `WireFormatError`: GARM answered 2xx with a body that is not what its API documents; it names
  the call. Like the other two it is a `GarmError`, so `except GarmError` handles every answer.

`InvalidRequest` is apart: the client refused to send a request at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast


class GarmError(Exception):
    """Base of everything `garm_api` raises about GARM."""


class WireFormatError(GarmError, ValueError):
    """GARM answered with a body that cannot be read as the documented type.

    Neither a refusal nor an outage: GARM answered, but not what its API documents. The
    transport names the call that got the answer, so the status can say which one.

    Attributes:
        operation: the call that got the answer ("" until the transport names it).
        problem: what was wrong with the body.
    """

    def __init__(self, problem: str, *, operation: str = "") -> None:
        super().__init__(f"{operation}: {problem}" if operation else problem)
        self.operation = operation
        self.problem = problem


class GarmUnreachable(GarmError):
    """GARM did not answer: connection refused or reset, timeout, TLS failure, a redirect."""

    def __init__(self, operation: str, reason: str) -> None:
        super().__init__(f"{operation}: GARM is unreachable: {reason}")
        self.operation = operation
        self.reason = reason


class GarmApiError(GarmError):
    """GARM answered with an error status."""

    def __init__(self, operation: str, status: int, error: str, details: str) -> None:
        text = f"{operation}: HTTP {status} {error}".rstrip()
        super().__init__(f"{text}: {details}" if details else text)
        self.operation = operation
        self.status = status
        self.error = error
        self.details = details


class GarmBadRequest(GarmApiError):
    """400: GARM refused the request (validation, state rules such as 'scale set has runners')."""


class GarmUnauthorized(GarmApiError):
    """401: bad or expired token, wrong password, or GitHub refusing GARM's credentials."""


class GarmNotFound(GarmApiError):
    """404: the object does not exist."""


class GarmConflict(GarmApiError):
    """409: a duplicate (name, entity, credentials) or a second first-run."""


class GarmNotReady(GarmApiError):
    """409 before GARM is usable: one of the bootstrap gates below."""


class GarmNotInitialised(GarmNotReady):
    """409 `init_required`: first-run has not happened yet."""


class GarmUrlsRequired(GarmNotReady):
    """409 `urls_required`: the controller's metadata and callback URLs are not set yet."""


class GarmServerError(GarmApiError):
    """5xx: GARM failed (GARM reports its late validation failures this way, with no details)."""


class InvalidRequest(ValueError):
    """The client refused to send a request GARM would reject late (garm-behaviour B13)."""


def api_error(operation: str, status: int, payload: bytes) -> GarmApiError:
    """The `GarmApiError` an error status (400 or more) and GARM's body mean.

    The 409 gates are told apart by GARM's `error` title (garm-behaviour B8).
    """
    error, details = _error_fields(payload)
    if status == 409 and error == "init_required":
        return GarmNotInitialised(operation, status, error, details)
    if status == 409 and error == "urls_required":
        return GarmUrlsRequired(operation, status, error, details)
    by_status: dict[int, type[GarmApiError]] = {
        400: GarmBadRequest,
        401: GarmUnauthorized,
        404: GarmNotFound,
        409: GarmConflict,
    }
    kind = by_status.get(status, GarmServerError if status >= 500 else GarmApiError)
    return kind(operation, status, error, details)


def _error_fields(payload: bytes) -> tuple[str, str]:
    """Read GARM's `{"error", "details"}`; a non-JSON body (e.g. `Unauthorized`) is the title."""
    text = payload.decode("utf-8", errors="replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:200], ""
    if not isinstance(body, Mapping):
        return text[:200], ""
    fields = cast("Mapping[str, Any]", body)
    return str(fields.get("error") or ""), str(fields.get("details") or "")


def outage_reason(error: BaseException) -> str:
    """How a failed exchange reads in `GarmUnreachable`: the exception's type and reason."""
    reason = getattr(error, "reason", None)
    return f"{type(error).__name__}: {reason or error}"
