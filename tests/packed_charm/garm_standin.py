"""The `garm` executable of the packed-charm run: GARM's API is the simulator (stdlib only).

Installed by the charm from the `garm-binary` resource like the real server, and run the same
ways: `garm --version` prints the version the simulator answers as; `garm --config FILE`
(the unit's ExecStart, run by the systemctl stand-in) hands FILE's text to the harness, which
(re)starts the simulator on the port, with the JWT secret and the providers FILE names, and
stops it when this process is stopped, as GARM's API goes down with its service. State lives
in the simulator across restarts, as GARM's lives in its database.

`CONTROL` and `VERSION` are written in when the resource is built (`garm_scenario`).
"""

from __future__ import annotations

import json
import signal
import sys
import urllib.request
from pathlib import Path

CONTROL = "http://127.0.0.1:0"
VERSION = "v0.2.1"


def main(argv: list[str]) -> int:
    """`--version`, or serve (through the harness) until stopped."""
    if "--version" in argv:
        print(VERSION)
        return 0
    config = Path(argv[argv.index("--config") + 1]).read_text()
    tell("start", config)
    signal.signal(signal.SIGTERM, lambda *_: stop())
    signal.signal(signal.SIGINT, lambda *_: stop())
    while True:
        signal.pause()


def stop() -> None:
    """The service stops: GARM's API goes down."""
    tell("stop", "")
    sys.exit(0)


def tell(action: str, config: str) -> None:
    """Ask the harness to start or stop the simulator."""
    body = json.dumps({"action": action, "config": config}).encode()
    request = urllib.request.Request(CONTROL, data=body, method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 (loopback http)
        answer.read()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
