"""Plain urllib calls to a GARM (simulated or real) and helpers to compare with recordings."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

WIRE_DIR = Path(__file__).parent / "wire"
TIMEOUT = 10.0


@dataclass(frozen=True)
class Reply:
    """One HTTP answer."""

    status: int
    raw: str

    @property
    def json(self) -> Any:
        """Return the decoded body (None for an empty body)."""
        return json.loads(self.raw) if self.raw.strip() else None


def call(
    base_url: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    raw_body: bytes | None = None,
) -> Reply:
    """Send one request to `<base_url>/api/v1<path>` and return the answer, errors included."""
    data = raw_body if raw_body is not None else None
    if body is not None:
        data = json.dumps(body).encode()
    url = f"{base_url}/api/v1{path}"
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - loopback http
    request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310 - loopback http
            return Reply(response.status, response.read().decode())
    except urllib.error.HTTPError as error:
        return Reply(error.code, error.read().decode())


def recording(name: str) -> dict[str, Any]:
    """Load a recorded GARM exchange by file name (without `.json`)."""
    return cast("dict[str, Any]", json.loads((WIRE_DIR / f"{name}.json").read_text()))


def recorded_body(name: str) -> dict[str, Any]:
    """Return the request body of a recorded exchange."""
    return cast("dict[str, Any]", recording(name)["request"]["body"])


def assert_same_shape(actual: Any, recorded: Any, where: str = "$") -> None:
    """Assert two JSON values have the same keys (in the same order) and value types.

    Values themselves (ids, timestamps, names) are free to differ; list elements are compared
    against the recording's first element.
    """
    if isinstance(recorded, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        actual_dict = cast("dict[str, Any]", actual)
        recorded_dict = cast("dict[str, Any]", recorded)
        assert list(actual_dict) == list(recorded_dict), (
            f"{where}: keys differ: {list(actual_dict)} != {list(recorded_dict)}"
        )
        for key, value in recorded_dict.items():
            assert_same_shape(actual_dict[key], value, f"{where}.{key}")
    elif isinstance(recorded, list):
        assert isinstance(actual, list), f"{where}: expected a list, got {actual!r}"
        recorded_list = cast("list[Any]", recorded)
        for index, item in enumerate(cast("list[Any]", actual)):
            if recorded_list:
                assert_same_shape(item, recorded_list[0], f"{where}[{index}]")
    else:
        assert type(actual) is type(recorded), f"{where}: {actual!r} vs recorded {recorded!r}"
