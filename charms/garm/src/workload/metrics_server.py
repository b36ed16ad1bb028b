"""The charm's metrics exporter: serves one file at `GET /metrics` on the loopback interface.

Standard library only: the charm copies this file out of its directory and systemd runs it
with the machine's `python3` as a hardened, unprivileged service (`workload.exporter`,
docs/adr/0030-charm-metrics-exporter.md). The charm writes the file (Prometheus' text format)
after each completed scale-set pass; this server only reads it, once per request, so a scrape
always sees one whole version of it (the charm replaces it by a rename).

A missing file (no pass completed yet) is an empty, successful scrape: the target is up with
no series. Any other path answers 404; other methods 501 (the standard library's default).
No access log: a scrape every few seconds would flood the journal.
"""

from __future__ import annotations

import argparse
import http.server
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

HOST: Final = "127.0.0.1"
METRICS_PATH: Final = "/metrics"
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
# A slow or stalled client must not hold a handler thread for long.
REQUEST_TIMEOUT_SECONDS: Final = 10


class MetricsHandler(http.server.BaseHTTPRequestHandler):
    """Answers `GET /metrics` with the file's bytes; 404 elsewhere."""

    metrics_file: Path = Path("/nonexistent")
    timeout = REQUEST_TIMEOUT_SECONDS
    server_version = "garm-charm-exporter"
    sys_version = ""

    def do_GET(self) -> None:
        """Serve the metrics file, or 404 for any other path."""
        if self.path.split("?", 1)[0] != METRICS_PATH:
            self._answer(404, b"not found: the metrics are at /metrics\n", "text/plain")
            return
        try:
            body = self.metrics_file.read_bytes()
        except FileNotFoundError:
            body = b""
        except OSError:
            self._answer(503, b"the metrics file cannot be read\n", "text/plain")
            return
        self._answer(200, body, CONTENT_TYPE)

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """No access log (see the module's docstring)."""


def make_server(
    metrics_file: Path, port: int, host: str = HOST
) -> http.server.ThreadingHTTPServer:
    """A server bound to `host:port` (port 0: any free port) serving `metrics_file`."""
    handler = type("BoundMetricsHandler", (MetricsHandler,), {"metrics_file": metrics_file})
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv: Sequence[str]) -> int:
    """Serve until stopped; 2 with a usage error, 1 when the port cannot be bound."""
    parser = argparse.ArgumentParser(description="Serve the garm charm's metrics file.")
    parser.add_argument("--file", type=Path, required=True, help="the metrics file to serve")
    parser.add_argument("--port", type=int, required=True, help="the loopback port")
    args = parser.parse_args(argv)
    try:
        server = make_server(args.file, args.port)
    except OSError as error:
        print(f"cannot listen on {HOST}:{args.port}: {error}", file=sys.stderr)
        return 1
    with server:
        server.serve_forever()
    return 0  # pragma: no cover (serve_forever returns only on shutdown)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
