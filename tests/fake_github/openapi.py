"""GitHub's published OpenAPI description, as a judge of requests and of the fake's answers.

The description comes from the `@octokit/openapi` npm package (GitHub's own description with
Octokit's extensions), fetched by `scripts/fetch_github_openapi.sh` (`.ci/run` runs it) and
never kept in the repository: `GITHUB_OPENAPI_DIR` names its `generated/` directory. One
`Description` is one file of it: `api.github.com.json` (the public service), `ghec.json`
(GitHub Enterprise Cloud: enterprise accounts, which the public service's file leaves out) or
`ghes-3.17.json` (GitHub Enterprise Server 3.17).

`Description.problems(request)` says why a request is not a documented operation (path,
method, path and query parameters) or why the answer does not validate against that
operation's response schema for its status. Schemas are OpenAPI 3.0 (`nullable`), turned into
JSON Schema, and closed: a property an object schema does not declare is a problem, so a fake
that names a field wrongly fails even where GitHub's schema would let an unknown field pass. A
status the operation does not document must be an error status with GitHub's `basic-error`
body.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

import jsonschema

PACKAGE = "@octokit/openapi"
VERSION = "23.0.2"
DIR_ENV = "GITHUB_OPENAPI_DIR"
PUBLIC = "api.github.com.json"
ENTERPRISE_CLOUD = "ghec.json"
# The oldest GitHub Enterprise Server release the charms support (docs/reference/garm-charm.md):
# the oldest one GitHub still supports, and so the oldest the pinned package describes.
OLDEST_GHES = "ghes-3.17.json"
FILES = (PUBLIC, ENTERPRISE_CLOUD, OLDEST_GHES)
Json = dict[str, Any]


@dataclass(frozen=True)
class Recorded:
    """One REST request to GitHub and the answer it got.

    Attributes:
        method: the HTTP method.
        target: the path under the API base URL, with its query (`/orgs/acme/actions/...`).
        status: the answer's status.
        body: the answer's decoded JSON body (None: empty).
    """

    method: str
    target: str
    status: int
    body: Any


def description_dir() -> Path | None:
    """The directory holding the description files, or None when it is not there."""
    configured = os.environ.get(DIR_ENV)
    if not configured:
        return None
    directory = Path(configured)
    return directory if all((directory / name).is_file() for name in FILES) else None


@cache
def load(name: str) -> Description:
    """Load one description file from `description_dir()` (once per process)."""
    directory = description_dir()
    if directory is None:
        raise FileNotFoundError(f"{DIR_ENV} does not name a directory holding {FILES}")
    return Description(name, json.loads((directory / name).read_text()))


class Description:
    """One OpenAPI description of GitHub's REST API."""

    def __init__(self, name: str, document: Json) -> None:
        self.name = name
        self.document = document
        self.paths = cast("dict[str, Json]", document["paths"])

    def problems(self, request: Recorded) -> list[str]:
        """Return why the request or its answer is not as this description documents it."""
        split = urlsplit(request.target)
        found = self.operation(request.method, split.path)
        if found is None:
            return [f"{self.name}: no operation {request.method} {split.path}"]
        template, operation, path_values = found
        where = f"{self.name}: {request.method} {template}"
        parameters = self._parameters(template, operation)
        problems = [f"{where}: {p}" for p in _parameter_problems(parameters, path_values, split)]
        return problems + [f"{where}: {p}" for p in self._answer_problems(operation, request)]

    def operation(self, method: str, path: str) -> tuple[str, Json, dict[str, str]] | None:
        """Return the documented operation for a concrete path, its template and path values.

        A template with more literal segments wins (`/runners/downloads` over
        `/runners/{runner_id}`).
        """
        segments = path.rstrip("/").split("/")
        matches: list[tuple[int, str, dict[str, str]]] = []
        for template in self.paths:
            values = _match(template.split("/"), segments)
            if values is not None:
                matches.append((len(segments) - len(values), template, values))
        for _, template, values in sorted(matches, key=lambda m: -m[0]):
            operation = self.paths[template].get(method.lower())
            if operation is not None:
                return template, operation, values
        return None

    def _parameters(self, template: str, operation: Json) -> list[Json]:
        shared = cast("list[Json]", self.paths[template].get("parameters", []))
        own = cast("list[Json]", operation.get("parameters", []))
        return [self.resolve(p) for p in [*shared, *own]]

    def _answer_problems(self, operation: Json, request: Recorded) -> list[str]:
        responses = cast("dict[str, Json]", operation["responses"])
        documented = responses.get(str(request.status))
        if documented is None:
            if request.status < 400:
                return [f"status {request.status} is not documented ({sorted(responses)})"]
            schema: Json = {"$ref": "#/components/schemas/basic-error"}
        else:
            content = cast("dict[str, Json]", self.resolve(documented).get("content", {}))
            media = content.get("application/json")
            if media is None:
                return [] if request.body is None else ["a body where none is documented"]
            schema = cast("Json", media["schema"])
        validator = jsonschema.Draft4Validator(self.json_schema(schema))
        return [
            f"answer {request.status} at {_place(error)}: {error.message}"
            for error in validator.iter_errors(request.body)
        ]

    def resolve(self, node: Json) -> Json:
        """Follow `$ref`s to a component."""
        while "$ref" in node:
            node = self._component(str(node["$ref"]))
        return node

    def _component(self, ref: str) -> Json:
        found: Any = self.document
        for part in ref.removeprefix("#/").split("/"):
            found = found[part]
        return cast("Json", found)

    def json_schema(self, schema: Json) -> Json:
        """Return an OpenAPI 3.0 schema as a closed JSON Schema (draft 4), refs inlined."""
        return self._convert(schema, (), closed=True)

    def _convert(self, schema: Json, seen: tuple[str, ...], *, closed: bool) -> Json:
        if "$ref" in schema:
            ref = str(schema["$ref"])
            if ref in seen:  # a recursive schema: accept what lies below the second visit
                return {}
            return self._convert(self._component(ref), (*seen, ref), closed=closed)
        out: Json = {k: v for k, v in schema.items() if k in _KEPT}
        for key, value in schema.items():
            if key == "properties":
                props = cast("dict[str, Json]", value)
                out[key] = {k: self._convert(v, seen, closed=True) for k, v in props.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self._convert(cast("Json", value), seen, closed=True)
            elif key in ("oneOf", "anyOf", "allOf"):
                # An allOf part sees only its own properties: only the whole may be closed.
                parts = cast("list[Json]", value)
                out[key] = [self._convert(v, seen, closed=key != "allOf") for v in parts]
        if schema.get("nullable"):
            return {"anyOf": [out, {"type": "null"}]}
        if closed and "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out


_KEPT = frozenset(
    {"type", "required", "enum", "format", "minimum", "maximum", "pattern", "additionalProperties"}
)


def _match(template: list[str], segments: list[str]) -> dict[str, str] | None:
    if len(template) != len(segments):
        return None
    values: dict[str, str] = {}
    for part, segment in zip(template, segments, strict=True):
        if part.startswith("{") and part.endswith("}"):
            values[part[1:-1]] = segment
        elif part != segment:
            return None
    return values


def _parameter_problems(
    parameters: list[Json], path_values: dict[str, str], split: Any
) -> list[str]:
    by_place: dict[tuple[str, str], Json] = {(p["in"], p["name"]): p for p in parameters}
    problems: list[str] = []
    for name, value in path_values.items():
        documented = by_place.get(("path", name))
        if documented is None:
            problems.append(f"path parameter {name} is not documented")
        elif not _fits(cast("Json", documented.get("schema", {})), value):
            problems.append(f"path parameter {name}={value!r} is not a {documented['schema']}")
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        documented = by_place.get(("query", name))
        if documented is None:
            problems.append(f"query parameter {name} is not documented")
        elif not _fits(cast("Json", documented.get("schema", {})), value):
            problems.append(f"query parameter {name}={value!r} is not a {documented['schema']}")
    return problems


def _fits(schema: Json, text: str) -> bool:
    """Whether a path or query value is of the parameter's type."""
    kind = schema.get("type")
    if kind == "integer":
        return text.lstrip("-").isdigit()
    if kind == "boolean":
        return text in ("true", "false")
    if "enum" in schema:
        return text in schema["enum"]
    return True


def _place(error: jsonschema.ValidationError) -> str:
    return "$" + "".join(f"[{p!r}]" for p in error.absolute_path)
