"""An HTTP(S) proxy on 127.0.0.1 that forwards nothing: it refuses and records every request.

Give a real GARM `HTTP_PROXY`/`HTTPS_PROXY` pointing here: Go sends every non-loopback request
to the proxy (absolute-URI requests for http, `CONNECT host:port` for https) and resolves no
name itself, so nothing leaves the machine and no DNS lookup happens. Loopback addresses are
never proxied by Go, so a fake GitHub on 127.0.0.1 is still reached directly.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

REFUSAL = b"proxy sink: no outbound traffic from tests\n"


@dataclass(frozen=True)
class ProxiedRequest:
    """One request that reached the sink: `CONNECT api.github.com:443` or `GET http://...`."""

    method: str
    target: str


class ProxySink:
    """The proxy; answers 403 to `CONNECT` and 502 to anything else.

    Args:
        port: the port (0 = free).
    """

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self._requests: list[ProxiedRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """Return the proxy URL for `HTTP_PROXY`/`HTTPS_PROXY`."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[ProxiedRequest]:
        """Return what reached the sink, oldest first."""
        with self._lock:
            return list(self._requests)

    def __enter__(self) -> ProxySink:
        """Start serving."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop serving."""
        self.stop()

    def start(self) -> None:
        """Serve in a background thread."""
        handler = type("Handler", (_Handler,), {"sink": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def record(self, method: str, target: str) -> None:
        """Remember one request."""
        with self._lock:
            self._requests.append(ProxiedRequest(method, target))


class _Handler(BaseHTTPRequestHandler):
    sink: ProxySink

    def do_CONNECT(self) -> None:
        self._refuse(403)

    def do_GET(self) -> None:
        self._refuse(502)

    def do_HEAD(self) -> None:
        self._refuse(502)

    def do_POST(self) -> None:
        self._refuse(502)

    def do_PUT(self) -> None:
        self._refuse(502)

    def do_PATCH(self) -> None:
        self._refuse(502)

    def do_DELETE(self) -> None:
        self._refuse(502)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: `ProxySink.requests` is the record."""

    def _refuse(self, status: int) -> None:
        self.sink.record(self.command, self.path)
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(REFUSAL)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(REFUSAL)
