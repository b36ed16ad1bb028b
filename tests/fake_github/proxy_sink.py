"""An HTTP(S) proxy on 127.0.0.1 that forwards nothing: it refuses and records every request.

Give a real GARM `HTTP_PROXY`/`HTTPS_PROXY` pointing here: Go sends every non-loopback request
to the proxy (absolute-URI requests for http, `CONNECT host:port` for https) and resolves no
name itself, so nothing leaves the machine and no DNS lookup happens. Loopback addresses are
never proxied by Go, so a fake GitHub on 127.0.0.1 is still reached directly.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from fake_github.loopback import LoopbackServer

REFUSAL = b"proxy sink: no outbound traffic from tests\n"


@dataclass(frozen=True)
class ProxiedRequest:
    """One request that reached the sink: `CONNECT api.github.com:443` or `GET http://...`."""

    method: str
    target: str


class ProxySink(LoopbackServer):
    """The proxy; answers 403 to `CONNECT` and 502 to anything else.

    Args:
        port: the port (0 = free).
    """

    def __init__(self, port: int = 0) -> None:
        super().__init__(port)
        self._requests: list[ProxiedRequest] = []
        self._lock = threading.Lock()

    @property
    def requests(self) -> list[ProxiedRequest]:
        """Return what reached the sink, oldest first."""
        with self._lock:
            return list(self._requests)

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """Return the request handler bound to this sink."""
        return type("Handler", (_Handler,), {"sink": self})

    def record(self, method: str, target: str) -> None:
        """Remember one request."""
        with self._lock:
            self._requests.append(ProxiedRequest(method, target))


class _Handler(BaseHTTPRequestHandler):
    sink: ProxySink

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: `ProxySink.requests` is the record."""

    def refuse(self) -> None:
        """Record the request and refuse it: 403 to CONNECT, 502 to anything else."""
        self.sink.record(self.command, self.path)
        self.close_connection = True
        self.send_response(403 if self.command == "CONNECT" else 502)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(REFUSAL)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(REFUSAL)

    # The stdlib dispatches on these names.
    do_CONNECT = do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = refuse  # noqa: N815
