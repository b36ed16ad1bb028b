"""The HTTP server: GARM's middlewares, the fault table and the request log around the routes."""

from __future__ import annotations

import json
import socket
import ssl
import struct
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from garm_sim.errors import ApiError, route_not_found
from garm_sim.faults import Fault
from garm_sim.requestlog import LoggedRequest
from garm_sim.routing import API_PREFIX, EMPTY, Match, Request, Response

if TYPE_CHECKING:
    from garm_sim.sim import GarmSim


class SimHTTPServer(ThreadingHTTPServer):
    """A threading server that knows the simulator it serves."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, sim: GarmSim, context: ssl.SSLContext | None = None) -> None:
        self.sim = sim
        super().__init__(("127.0.0.1", port), SimRequestHandler)
        if context is not None:
            # GARM with `[apiserver] use_tls` serves everything over HTTPS on the same port
            # (garm-behaviour B27). A plain request gets no answer here, where GARM answers 400.
            self.socket = context.wrap_socket(self.socket, server_side=True)


class SimRequestHandler(BaseHTTPRequestHandler):
    """Serves one request: fault, gates, authentication, handler, log."""

    protocol_version = "HTTP/1.0"  # one request per connection: stopping the sim stops GARM

    def do_GET(self) -> None:
        """Serve a GET."""
        self._serve("GET")

    def do_POST(self) -> None:
        """Serve a POST."""
        self._serve("POST")

    def do_PUT(self) -> None:
        """Serve a PUT."""
        self._serve("PUT")

    def do_PATCH(self) -> None:
        """Serve a PATCH."""
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        """Serve a DELETE."""
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: the request log is the record."""

    @property
    def sim(self) -> GarmSim:
        """Return the simulator this handler serves."""
        server = self.server
        assert isinstance(server, SimHTTPServer)
        return server.sim

    def _serve(self, method: str) -> None:
        sim = self.sim
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw_body = self.rfile.read(length) if length > 0 else b""
        match = sim.router.match(method, parts.path)
        template = match.template if match else parts.path
        fault = sim.faults.take(method, parts.path, template)
        if fault is not None and self._apply_fault(fault):
            sim.log.add(LoggedRequest(method, parts.path, template, 0, raw_body))
            return
        request = Request(
            sim.state, method, parts.path, {}, dict(parse_qsl(parts.query)), raw_body
        )
        status, payload = self._encode(self._answer(fault, match, request), fault)
        sim.log.add(LoggedRequest(method, parts.path, template, status, raw_body, payload))
        self._send(status, payload)

    def _apply_fault(self, fault: Fault) -> bool:
        """Apply a fault; return True when the request ends here without an answer."""
        if fault.delay > 0:
            time.sleep(fault.delay)
        if fault.kind == "reset":
            # SO_LINGER with a zero timeout turns close() into a TCP reset.
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
            self.connection.close()
            self.close_connection = True
            return True
        if fault.kind == "drop":
            self.close_connection = True
            return True
        if fault.kind == "before" and fault.action is not None:
            fault.action()
        return False

    def _answer(self, fault: Fault | None, match: Match | None, request: Request) -> Response:
        if fault is not None and fault.kind == "status":
            title = "Server error" if fault.status >= 500 else "Injected fault"
            return Response(fault.status, {"error": title, "details": ""})
        try:
            return self.sim.dispatch(match, request, self.headers.get("Authorization"))
        except ApiError as error:
            return Response(error.status, error.body())

    @staticmethod
    def _encode(response: Response, fault: Fault | None) -> tuple[int, bytes]:
        if fault is not None and fault.kind == "status" and fault.body is not None:
            return fault.status, fault.body.encode()
        if response.body is EMPTY:
            return response.status, b""
        return response.status, json.dumps(response.body, separators=(",", ":")).encode() + b"\n"

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if payload:
            self.wfile.write(payload)


def not_routed(match: Match | None, request: Request) -> Response | None:
    """Return the answer for a path no route serves (404) or a wrong method (405)."""
    if match is None or not request.path.startswith(API_PREFIX):
        raise route_not_found()
    if match.route is None:
        return Response(405, EMPTY)
    return None
