"""Check requests and answers with OpenStack's own schemas, in a venv with Nova and Keystone.

This script is not imported by the tests: `schemas.SchemaChecker` starts it with the Python of a
virtual environment built from `requirements-schemas.txt` (the `nova` and `keystone` packages,
pinned), because Nova's modules monkey-patch the standard library with eventlet on import. It
reads one JSON object a line on standard input and answers one a line on standard output:

    {"kind": "request" | "response", "operation": "servers.create", "microversion": "2.67",
     "document": <the body, or the query as a mapping of lists>}
    -> {"error": null} or {"error": "<the service's own message>"}

Each operation is the method of the service's controller that serves it, and the schema is the
one that method registers for the request's microversion, chosen by Nova's own `Schemas`: Nova's
`ServersController.create` and its friends, Keystone's `validate_issue_token_auth`. The message
is the one the service puts in its 400 answer.
"""

from __future__ import annotations

import json
import sys
import types
import warnings
from typing import Any

warnings.simplefilter("ignore")

from keystone import exception as keystone_exception  # noqa: E402  # pyright: ignore[reportMissingImports]
from keystone.auth import schema as keystone_auth  # noqa: E402  # pyright: ignore[reportMissingImports]
from nova import exception as nova_exception  # noqa: E402  # pyright: ignore[reportMissingImports]
from nova.api.openstack import api_version_request  # noqa: E402  # pyright: ignore[reportMissingImports]
from nova.api.openstack.compute import (  # noqa: E402  # pyright: ignore[reportMissingImports]
    deferred_delete,
    flavors,
    servers,
)
from nova.api.validation import validators  # noqa: E402  # pyright: ignore[reportMissingImports]

_NOVA: dict[str, Any] = {
    "servers.create": servers.ServersController.create,
    "servers.detail": servers.ServersController.detail,
    "servers.show": servers.ServersController.show,
    "servers.os-start": servers.ServersController._start,
    "servers.os-stop": servers.ServersController._stop,
    "servers.forceDelete": deferred_delete.DeferredDeleteController._force_delete,
    "flavors.detail": flavors.FlavorsController.detail,
    "flavors.show": flavors.FlavorsController.show,
}
_SCHEMAS = {
    ("request", True): "request_body_schemas",
    ("request", False): "request_query_schemas",
    ("response", True): "response_body_schemas",
}


def main() -> None:
    """Answer every line of standard input until it ends."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        try:
            error = check(message)
        except Exception as failure:
            error = f"the schema check itself failed: {type(failure).__name__}: {failure}"
        print(json.dumps({"error": error}), flush=True)


def check(message: dict[str, Any]) -> str | None:
    """The service's refusal of `message`'s document, or None when its schema accepts it."""
    operation: str = message["operation"]
    document = message["document"]
    if operation == "identity.tokens":
        return _keystone_token(document) if message["kind"] == "request" else None
    method = _NOVA[operation]
    is_body = message.get("is_body", True)
    attribute = _SCHEMAS.get((message["kind"], is_body))
    schemas = getattr(method, attribute, None) if attribute else None
    if schemas is None:
        return None
    request = types.SimpleNamespace(
        api_version_request=api_version_request.APIVersionRequest(message["microversion"])
    )
    schema = schemas(request)
    if schema is None:
        return None
    try:
        validators._SchemaValidator(schema, False, is_body).validate(document)
    except nova_exception.ValidationError as refusal:
        return str(refusal.format_message())
    return None


def _keystone_token(document: Any) -> str | None:
    try:
        keystone_auth.validate_issue_token_auth((document or {}).get("auth"))
    except keystone_exception.SchemaValidationError as refusal:
        return str(refusal)
    return None


if __name__ == "__main__":
    main()
