"""An HTTPS proxy on 127.0.0.1 that tunnels `CONNECT` to loopback ports only, and records them.

The model's proxy as the charm meets it: a client that uses it sends `CONNECT host:port`, then
speaks TLS with the server through the tunnel, so the server's certificate is still checked
against the client's CA bundle. Only 127.0.0.1 and `localhost` are reached; anything else is
refused with 403, so nothing leaves the machine.
"""

from __future__ import annotations

import select
import socket
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from fake_github.loopback import LoopbackServer

_LOOPBACK = {"127.0.0.1", "localhost"}


class TunnelProxy(LoopbackServer):
    """The proxy; `tunnels` lists the `host:port` of every CONNECT it was asked for.

    Args:
        port: the port (0 = free).
    """

    def __init__(self, port: int = 0) -> None:
        super().__init__(port)
        self._tunnels: list[str] = []
        self._lock = threading.Lock()

    @property
    def tunnels(self) -> list[str]:
        """Return every CONNECT target asked for, oldest first."""
        with self._lock:
            return list(self._tunnels)

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """Return the request handler bound to this proxy."""
        return type("Handler", (_Handler,), {"proxy": self})

    def record(self, target: str) -> None:
        """Remember one CONNECT."""
        with self._lock:
            self._tunnels.append(target)


class _Handler(BaseHTTPRequestHandler):
    proxy: TunnelProxy

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: `TunnelProxy.tunnels` is the record."""

    def do_CONNECT(self) -> None:
        self.proxy.record(self.path)
        host, _, port = self.path.rpartition(":")
        if host not in _LOOPBACK:
            self.send_error(403)
            return
        with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as upstream:
            self.send_response(200, "Connection established")
            self.end_headers()
            self.wfile.flush()
            _pump(self.connection, upstream)
        self.close_connection = True


def _pump(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    sockets = [client, upstream]
    while True:
        readable, _, _ = select.select(sockets, [], [], 10)
        if not readable:
            return
        for source in readable:
            data = source.recv(65536)
            if not data:
                return
            (upstream if source is client else client).sendall(data)
