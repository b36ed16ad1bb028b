"""Typed access to decoded JSON request bodies, failing the way Go's decoder does."""

from __future__ import annotations

import json
from typing import Any, cast

from garm_sim.errors import invalid_request

_MAX_UINT = 2**64 - 1


class Body:
    """A decoded JSON object; wrong types answer 400 `invalid request` like GARM's decoder.

    Absent keys and JSON `null` both read as `None`: Go leaves the zero value (or a nil pointer)
    in both cases.

    Args:
        data: the decoded object.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @classmethod
    def parse(cls, raw: bytes) -> Body:
        """Decode a request body.

        Args:
            raw: the request bytes.

        Returns:
            The body; an empty request reads as an empty object.

        Raises:
            ApiError: 400 `invalid request` when it is not a JSON object.
        """
        if not raw.strip():
            return cls({})
        try:
            data: Any = json.loads(raw)
        except ValueError as exc:
            raise invalid_request() from exc
        if not isinstance(data, dict):
            raise invalid_request()
        return cls(cast("dict[str, Any]", data))

    def has(self, key: str) -> bool:
        """Return whether the key is present and not null."""
        return self._data.get(key) is not None

    def raw(self, key: str) -> Any:
        """Return the undecoded value of a key (None when absent)."""
        return self._data.get(key)

    def string(self, key: str) -> str | None:
        """Return a string field."""
        value = self._data.get(key)
        if value is None or isinstance(value, str):
            return value
        raise invalid_request()

    def text(self, key: str) -> str:
        """Return a string field, empty when absent (Go's zero value)."""
        return self.string(key) or ""

    def uint(self, key: str) -> int | None:
        """Return an unsigned integer field."""
        value = self._data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_UINT:
            raise invalid_request()
        return value

    def boolean(self, key: str) -> bool | None:
        """Return a boolean field."""
        value = self._data.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise invalid_request()

    def str_list(self, key: str) -> list[str]:
        """Return a list of strings, empty when absent."""
        value = self._data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise invalid_request()
        items = cast("list[Any]", value)
        if not all(isinstance(item, str) for item in items):
            raise invalid_request()
        return [cast("str", item) for item in items]

    def obj(self, key: str) -> Body | None:
        """Return a nested object."""
        value = self._data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise invalid_request()
        return Body(cast("dict[str, Any]", value))
