"""Run the simulator standalone: `python -m garm_sim --port 9997` from the tests/ directory."""

from __future__ import annotations

import argparse
import threading

from garm_sim.sim import GarmSim
from garm_sim.versions import GARM_VERSIONS, V021


def main(argv: list[str] | None = None) -> None:
    """Start the simulator, print its URL and admin credentials, serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m garm_sim", description=__doc__)
    parser.add_argument("--port", type=int, default=9997, help="port on 127.0.0.1 (0 = free)")
    parser.add_argument("--provider", action="append", help="provider name (repeatable)")
    parser.add_argument(
        "--fresh", action="store_true", help="start uninitialised (no admin, no URLs)"
    )
    parser.add_argument("--boot-seconds", type=float, default=0.0, help="runner boot time")
    parser.add_argument(
        "--garm-version",
        choices=GARM_VERSIONS,
        default=V021,
        help="the GARM to answer as: the release the charm installs, or the newer main branch",
    )
    parser.add_argument(
        "--runners-report",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=(
            "booted runners report to GARM by themselves (installing, then idle), as a working "
            "image does; --no-runners-report: they stay pending, as on a real GARM whose "
            "provider boots nothing, until something posts to /api/v1/callbacks/status"
        ),
    )
    args = parser.parse_args(argv)
    sim = GarmSim(
        args.provider,
        port=args.port,
        boot_seconds=args.boot_seconds,
        garm_version=args.garm_version,
    )
    sim.github.runners_report = args.runners_report
    sim.start()
    print(
        f"GARM simulator listening on {sim.url} (API under {sim.url}/api/v1), "
        f"answering as GARM {sim.garm_version}"
        f"{'' if args.runners_report else ', runners do not report by themselves'}",
        flush=True,
    )
    if not args.fresh:
        sim.bootstrap()
        print(f"admin username: admin\nadmin password: {sim.admin_password}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()


if __name__ == "__main__":
    main()
