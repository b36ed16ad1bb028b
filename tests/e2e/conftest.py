"""Fixtures for the end-to-end machine tests: real GARM binaries, found or skipped with a reason.

The binaries come from `GARM_BIN_V0_2_1` and `GARM_BIN_NEWER` (paths to GARM server
executables), or else from the workspace's `../shared/garm/bin/` beside the repository. Without
them the tests skip and say where they looked.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e import postgres
from e2e.machine import Machine, build_tarball

REPOSITORY = Path(__file__).resolve().parents[2]
# The charm tests' helpers (the configurator's publication) are shared with the e2e tests.
sys.path.insert(0, str(REPOSITORY / "charms" / "garm" / "tests" / "unit"))
WORKSPACE_BINARIES = REPOSITORY.parent / "shared" / "garm" / "bin"
BINARIES = {
    # The release the charm installs (no PostgreSQL, no [proxy] section).
    "v0.2.1": ("GARM_BIN_V0_2_1", "garm-v0.2.1"),
    # A build of GARM's main branch past v0.2.1 (PostgreSQL, [proxy]).
    "newer": ("GARM_BIN_NEWER", "garm-afda4e76"),
}


def garm_binary(version: str) -> Path | None:
    """The GARM binary to test as `version`, or None when none is available."""
    variable, filename = BINARIES[version]
    given = os.environ.get(variable)
    path = Path(given) if given else WORKSPACE_BINARIES / filename
    return path if path.is_file() and os.access(path, os.X_OK) else None


@dataclasses.dataclass(frozen=True)
class Case:
    """One GARM binary on one database backend."""

    version: str
    backend: str


CASES = {
    "v0.2.1-sqlite": Case("v0.2.1", "sqlite"),
    "newer-sqlite": Case("newer", "sqlite"),
    # v0.2.1 has no PostgreSQL backend: the charm refuses the relation (a unit test proves it).
    "newer-postgresql": Case("newer", "postgresql"),
}


@pytest.fixture(params=list(CASES))
def case(request: pytest.FixtureRequest) -> Case:
    """Each case, skipped with the reason when its binary or PostgreSQL is missing here."""
    chosen = CASES[request.param]
    if garm_binary(chosen.version) is None:
        variable, filename = BINARIES[chosen.version]
        pytest.skip(
            f"no GARM {chosen.version} binary: set {variable}=/path/to/garm or put {filename} "
            f"in {WORKSPACE_BINARIES}"
        )
    if chosen.backend == "postgresql" and postgres.unavailable_reason():
        pytest.skip(postgres.unavailable_reason())
    return chosen


@pytest.fixture(scope="session")
def garm_tarballs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each available binary packed as the `garm-binary` resource (garm-linux-amd64.tgz)."""
    tarballs: dict[str, Path] = {}
    for version in BINARIES:
        binary = garm_binary(version)
        if binary is not None:
            directory = tmp_path_factory.mktemp(f"garm-{version}")
            tarballs[version] = build_tarball(
                "garm", binary.read_bytes(), directory / "garm-linux-amd64.tgz"
            )
    return tarballs


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    """A machine root with the systemctl stand-in first on PATH; everything stops at the end."""
    box = Machine(tmp_path)
    monkeypatch.setenv("PATH", box.path_with_systemctl())
    try:
        yield box
    finally:
        box.stop_everything()
