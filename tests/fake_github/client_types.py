"""The Actions service's JSON types as GitHub's own client declares them, read from the docs.

`docs/reference/github-actions-service.md` records the types of `github.com/actions/scaleset`
(at the commit it names) as one table per type; `load_types` reads those tables, and
`problems(value, type_name)` says where a JSON value does not carry exactly a type's fields:
an unknown field (names compare with their case), a missing field the client sends without
`omitempty`, or a value of another JSON type.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "github-actions-service.md"
_HEADING = re.compile(r"^### `(\w+)`$")
_ROW = re.compile(r"^\| `([^`]+)` \| (\S+) \| (yes|no) \|$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
# What a job message's `messageType` makes it, beside `JobMessageBase`.
JOB_MESSAGE_TYPES = ("JobAvailable", "JobAssigned", "JobStarted", "JobCompleted")
# The service's .NET exception envelope around the client's `actionsExceptionError`.
EXCEPTION_ENVELOPE = ("$id", "innerException", "typeKey", "errorCode", "eventId")


@dataclass(frozen=True)
class Field:
    """One field of a type: its JSON type and whether it may be absent."""

    json_type: str
    omitempty: bool


Types = dict[str, dict[str, Field]]


def load_types(doc: Path = DOC) -> Types:
    """Read the tables of every type's section (a `###` heading naming it): name -> Field."""
    types: Types = {}
    current: dict[str, Field] | None = None
    for line in doc.read_text().splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = types.setdefault(heading.group(1), {})
            continue
        if line.startswith("## "):
            current = None
        row = _ROW.match(line)
        if row and current is not None:
            current[row.group(1)] = Field(row.group(2), row.group(3) == "yes")
    return types


def problems(types: Types, value: Any, type_name: str, where: str = "$") -> list[str]:
    """Return where `value` is not exactly a `type_name` (an empty list: it is)."""
    return _object(types, value, types[type_name], where)


def job_message_problems(types: Types, message: Any, where: str) -> list[str]:
    """Return where one job message (of a message's `body`) is not of its `messageType`."""
    if not isinstance(message, dict):
        return [f"{where}: not an object"]
    kind = cast("dict[str, Any]", message).get("messageType")
    if kind not in JOB_MESSAGE_TYPES:
        return [f"{where}.messageType: {kind!r} is not one of {JOB_MESSAGE_TYPES}"]
    fields = types["JobMessageBase"] | types[str(kind)]
    return _object(types, message, fields, where)


def exception_problems(types: Types, body: Any, where: str = "$") -> list[str]:
    """Return where an error answer is not an `actionsExceptionError` in the envelope."""
    if not isinstance(body, dict):
        return [f"{where}: an error answer is not an object"]
    fields = dict(types["actionsExceptionError"])
    fields = {name: Field(f.json_type, omitempty=False) for name, f in fields.items()}
    envelope = {
        key: cast("dict[str, Any]", body)[key] for key in EXCEPTION_ENVELOPE if key in body
    }
    rest = {k: v for k, v in cast("dict[str, Any]", body).items() if k not in envelope}
    return _object(types, rest, fields, where)


def _object(types: Types, value: Any, fields: dict[str, Field], where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is not an object"]
    found = cast("dict[str, Any]", value)
    out = [f"{where}.{key}: not a field of the type" for key in found if key not in fields]
    for name, field in fields.items():
        if name not in found:
            if not field.omitempty:
                out.append(f"{where}.{name}: missing")
            continue
        out += _value(types, found[name], field.json_type, f"{where}.{name}")
    return out


def _value(types: Types, value: Any, json_type: str, where: str) -> list[str]:
    if json_type.startswith("[") and json_type.endswith("]"):
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not an array"]
        items = cast("list[Any]", value)
        return [
            p
            for i, v in enumerate(items)
            for p in _value(types, v, json_type[1:-1], f"{where}[{i}]")
        ]
    if json_type in types:
        return _object(types, value, types[json_type], where)
    if _SCALARS[json_type](value):
        return []
    return [f"{where}: {value!r} is not a {json_type}"]


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return isinstance(value, str)


_SCALARS = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "time": lambda v: isinstance(v, str) and _TIME.match(v) is not None,
    "uuid": _is_uuid,
}
