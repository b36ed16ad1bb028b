"""Validate charmcraft.yaml files with charmcraft's own project models.

`charmcraft pack` cannot run on machines without LXD, but the models it validates with can.
"""

import pathlib
import sys

from charmcraft.models.project import CharmcraftProject
from charmcraft.parts import setup_parts


def main(charm_dirs: list[str]) -> int:
    """Validate each charm directory's charmcraft.yaml and report every failure."""
    setup_parts()  # registers the charm plugin, as charmcraft does at start-up
    failures = 0
    for charm_dir in charm_dirs:
        path = pathlib.Path(charm_dir) / "charmcraft.yaml"
        try:
            CharmcraftProject.from_yaml_file(path)
        except Exception as error:  # report every kind of failure, then fail
            failures += 1
            details = getattr(error, "details", None) or ""
            print(f"{path}: INVALID: {error} {details}".rstrip())
        else:
            print(f"{path}: valid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
