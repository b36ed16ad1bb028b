"""What the packed-charm cases share: where `tox -e pack` left the artifacts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from must_run import cannot_run
from packed_charm.pack import charm_name


@pytest.fixture(scope="session")
def packed_dir() -> Path:
    """Where `tox -e pack` put the charms."""
    directory = Path(os.environ.get("PACKED_CHARMS_DIR", "/nonexistent"))
    if not any(directory.glob("*.charm")):
        cannot_run(f"no packed charms in {directory}: run `tox -e pack` first")
    return directory


def packed_file(packed_dir: Path, charm_dir: Path, platform: str) -> Path:
    """The artifact charmcraft names `<name>_<platform>.charm`."""
    path = packed_dir / f"{charm_name(charm_dir)}_{platform}.charm"
    if not path.is_file():
        cannot_run(f"{path.name} was not packed: run `tox -e pack`")
    return path
