"""A threaded HTTP server on 127.0.0.1, started and stopped from tests."""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class LoopbackServer:
    """Serve `handler_class()` on 127.0.0.1 in a background thread.

    Args:
        port: the port (0 = free; the chosen one is in `port` once started).
        tls: serve HTTPS with this server context (a certificate for `localhost`), else HTTP.
    """

    def __init__(self, port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        self.port = port
        self.tls = tls
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """Return `http://127.0.0.1:<port>`, or `https://localhost:<port>` when serving TLS."""
        if self.tls is not None:
            return f"https://localhost:{self.port}"
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Return whether it is serving."""
        return self._server is not None

    def __enter__(self) -> Self:
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

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """Return the request handler class bound to this server's state."""
        raise NotImplementedError

    def start(self) -> None:
        """Serve in a background thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler_class())
        self._server.daemon_threads = True
        if self.tls is not None:
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
