"""GARM's error answers: `{"error": <title>, "details": <message>}` with GARM's status codes."""

from __future__ import annotations


class ApiError(Exception):
    """An error answer the simulator sends instead of a normal response.

    Args:
        status: HTTP status code.
        error: the `error` field (GARM's title for the status).
        details: the `details` field.
    """

    def __init__(self, status: int, error: str, details: str = "") -> None:
        super().__init__(f"{status} {error}: {details}")
        self.status = status
        self.error = error
        self.details = details

    def body(self) -> dict[str, str]:
        """Return the JSON body GARM sends for this error."""
        return {"error": self.error, "details": self.details}


def bad_request(details: str) -> ApiError:
    """Return a 400 `Bad Request` error."""
    return ApiError(400, "Bad Request", details)


def invalid_request() -> ApiError:
    """Return GARM's answer to an undecodable body or a malformed id."""
    return bad_request("invalid request")


def not_found(details: str) -> ApiError:
    """Return a 404 `Not Found` error."""
    return ApiError(404, "Not Found", details)


def conflict(details: str) -> ApiError:
    """Return a 409 `Conflict` error."""
    return ApiError(409, "Conflict", details)


def server_error() -> ApiError:
    """Return GARM's answer to any untyped error: 500 with empty details."""
    return ApiError(500, "Server error", "")


def not_authorized() -> ApiError:
    """Return GARM's answer to a wrong login (and to GitHub-side 401/403)."""
    return ApiError(401, "Not Authorized", "")


def authentication_failed() -> ApiError:
    """Return GARM's answer to a missing, malformed or expired token."""
    return ApiError(401, "Authentication failed", "")


def init_required() -> ApiError:
    """Return GARM's answer to everything but first-run before an admin exists."""
    return ApiError(409, "init_required", "Missing superuser")


def urls_required() -> ApiError:
    """Return GARM's answer to resource calls before the controller URLs are set."""
    return ApiError(
        409,
        "urls_required",
        "Missing required URLs. Make sure you update the metadata and callback URLs",
    )


def route_not_found() -> ApiError:
    """Return GARM's answer to an unknown path under /api/v1."""
    return ApiError(404, "Not found", "Resource not found")
