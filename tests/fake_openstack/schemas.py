"""OpenStack's own request and response schemas, asked from a checker in its own virtual env.

The fake OpenStack validates every request the real provider sends, and every answer it gives,
with the schemas the services register for that operation: Nova's (`nova` package, at the
microversion the request names) and Keystone's (`keystone` package), pinned in
`requirements-schemas.txt`. Nova's modules monkey-patch the standard library with eventlet on
import, so they run in `schema_checker.py`, a child process under the Python of a virtual
environment that has them, named by `OPENSTACK_SCHEMAS_PYTHON` (`.ci/run` builds it; see
docs/how-to/test-against-a-real-garm.md). Glance and Neutron are only read from (list calls with
query filters), and their packages expose no request schema for those: they are not checked.

Without that environment the fake cannot say what OpenStack would refuse, so the tests using it
cannot run (skipped here, failed in CI: `must_run`).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from must_run import cannot_run

SCHEMAS_PYTHON_ENV = "OPENSTACK_SCHEMAS_PYTHON"
CHECKER = Path(__file__).with_name("schema_checker.py")
REQUIREMENTS = Path(__file__).with_name("requirements-schemas.txt")
# How long a case waits for `.ci/run` to finish building the environment in the background.
BUILD_WAIT_SECONDS = 900


class SchemaChecker:
    """One checker process for the whole test run; its answers are the services' own."""

    _shared: SchemaChecker | None = None
    _shared_lock = threading.Lock()

    def __init__(self, python: Path) -> None:
        self._process = subprocess.Popen(
            [str(python), str(CHECKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lock = threading.Lock()
        ready = self._read()
        if ready.get("ready") is not True:
            raise RuntimeError(f"the OpenStack schema checker did not start: {ready}")

    @classmethod
    def shared(cls) -> SchemaChecker:
        """The run's checker, started on first use; the case cannot run without one."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls(_schemas_python())
                atexit.register(cls._shared.close)
            return cls._shared

    def request(
        self, operation: str, document: Any, *, microversion: str = "", query: bool = False
    ) -> str | None:
        """The service's refusal of a request body (or query), or None when it accepts it."""
        return self._ask("request", operation, document, microversion, is_body=not query)

    def response(self, operation: str, document: Any, *, microversion: str = "") -> str | None:
        """Why the service's response schema refuses an answer of the fake, or None."""
        return self._ask("response", operation, document, microversion, is_body=True)

    def close(self) -> None:
        """Stop the checker."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()

    def _ask(
        self, kind: str, operation: str, document: Any, microversion: str, *, is_body: bool
    ) -> str | None:
        message = {
            "kind": kind,
            "operation": operation,
            "microversion": microversion or "2.1",
            "document": document,
            "is_body": is_body,
        }
        with self._lock:
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(message) + "\n")
            self._process.stdin.flush()
            answer = self._read()
        error = answer.get("error")
        return error if isinstance(error, str) else None

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the OpenStack schema checker exited")
        return json.loads(line)


def _schemas_python() -> Path:
    """The Python of the environment with Nova and Keystone; the case cannot run without it."""
    value = os.environ.get(SCHEMAS_PYTHON_ENV, "")
    if not value:
        cannot_run(
            f"the fake OpenStack checks requests with Nova's and Keystone's own schemas: set "
            f"{SCHEMAS_PYTHON_ENV} to the Python of a venv with {REQUIREMENTS.name} installed"
        )
    python = Path(value)
    _await_build(python)
    if not (python.is_file() and os.access(python, os.X_OK)):
        cannot_run(f"{SCHEMAS_PYTHON_ENV}={value} is not an executable file")
    return python


def _await_build(python: Path) -> None:
    """Wait while `.ci/run` builds the environment (in `<venv>.partial`, then renamed)."""
    venv = python.parent.parent
    partial = venv.with_name(f"{venv.name}.partial")
    deadline = time.monotonic() + BUILD_WAIT_SECONDS
    while not python.exists() and partial.exists() and time.monotonic() < deadline:
        time.sleep(2)
    if venv.with_name(f"{venv.name}.failed").exists() and not python.exists():
        cannot_run(f"the OpenStack schemas venv could not be built: see {venv}.log")
