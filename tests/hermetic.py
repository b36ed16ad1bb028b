"""Run a Python script where resolving a name or connecting beyond loopback fails loudly.

`python tests/hermetic.py SCRIPT [ARGS...]` runs SCRIPT as `__main__` with `socket.getaddrinfo`
and `socket.socket.connect` guarded: any other name or address prints `HERMETIC VIOLATION ...`
to stderr and raises, so a caller that swallows the error still leaves the line behind.
"""

from __future__ import annotations

import ipaddress
import runpy
import socket
import sys
from typing import Any

LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})
VIOLATION = "HERMETIC VIOLATION"


def main() -> None:
    """Guard the socket module, then run the script with its arguments."""
    resolve, connect = socket.getaddrinfo, socket.socket.connect

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if not _loopback(name):
            _violation(f"resolve {name}")
        return resolve(host, *args, **kwargs)

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(str(address[0])):
            _violation(f"connect {address[0]}")
        connect(sock, address)

    socket.getaddrinfo = guarded_getaddrinfo
    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


def _loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _violation(what: str) -> None:
    print(f"{VIOLATION}: {what}", file=sys.stderr, flush=True)
    raise OSError(f"hermetic run: {what} refused")


if __name__ == "__main__":
    main()
