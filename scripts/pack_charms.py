"""Pack both charms for every platform they declare, as charmcraft 4.5 packs them.

Run by `tox -e pack` (an interpreter with charmcraft and Debian's python3-apt); each charm and
platform is one `charmcraft pack --destructive-mode` in a copy of the charm directory, with
the patches `tests/packed_charm/charmcraft_pack.py` lists for a host that is not ubuntu@24.04.
Writes `<output>/<name>_<platform>.charm` and prints each path.

Usage: `python scripts/pack_charms.py --output DIR [--platform amd64] [--python PATH]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from packed_charm.pack import CHARMS, pack_all, runtime_python


def main(argv: list[str]) -> int:
    """Pack, and say how long each took."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--platform", action="append", help="only these (default: all)")
    parser.add_argument("--python", help="the runtime's Python 3.12 (default: found)")
    args = parser.parse_args(argv)
    python = args.python or runtime_python()
    if python is None:
        print("pack_charms: no Python 3.12 (ubuntu@24.04's) found to build the venv for")
        return 1
    started = time.monotonic()
    for packed in pack_all(args.output, python=python, platforms=args.platform):
        print(f"packed {packed} ({packed.stat().st_size // 1024} KiB)")
    print(f"packed {len(CHARMS)} charms in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
