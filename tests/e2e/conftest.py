"""Fixtures for the end-to-end machine tests: real GARM binaries, a container with systemd.

The binaries are found as the contract suite finds them (`GARM_BIN_V021`, `GARM_BIN_NEWER`, or
the binaries directory `GARM_BIN_DIR`, by default `shared/garm/bin/` beside the checkout).
Without them the tests skip and say where they looked.

The machine the charm runs on is a container booted with a real systemd (`container.py`): one
per test module at most, booted when its first test needs it, its journal saved beside the
module's temporary files and its boot time in the run's summary (`tests/conftest.py`). Each
test gets it as a fresh machine (`ContainerMachine`): whatever the charm made is taken away at
the test's end. Without root or systemd-nspawn the tests cannot run (skipped, failed in CI).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.conftest import NEWER, V021, garm_binary
from e2e import postgres
from e2e.container import Container, booted, unavailable_reason
from e2e.container_machine import CONTAINER_FILES, ContainerMachine
from e2e.machine import build_tarball
from must_run import cannot_run

REPOSITORY = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Case:
    """One GARM binary on one database backend."""

    version: str
    backend: str


CASES = {
    "v0.2.1-sqlite": Case(V021, "sqlite"),
    "newer-sqlite": Case(NEWER, "sqlite"),
    # v0.2.1 has no PostgreSQL backend: the charm refuses the relation (a unit test proves it).
    "newer-postgresql": Case(NEWER, "postgresql"),
}
# For walks the backend plays no part in: each GARM binary once.
SQLITE_CASES = [name for name, case in CASES.items() if case.backend == "sqlite"]


@pytest.fixture(params=list(CASES))
def case(request: pytest.FixtureRequest) -> Case:
    """Each case; it cannot run (skipped here, failed in CI) without its binary or PostgreSQL."""
    return available_case(request.param)


def available_case(name: str) -> Case:
    """The case of that name, after `cannot_run` when its binary or PostgreSQL is missing.

    Every fixture choosing cases calls this, so none skips where CI must fail (`must_run`).
    """
    chosen = CASES[name]
    binary, reason = garm_binary(chosen.version)
    if binary is None:
        cannot_run(reason)
    if chosen.backend == "postgresql" and postgres.unavailable_reason():
        cannot_run(postgres.unavailable_reason())
    return chosen


class GarmTarballs:
    """Each GARM binary packed as the `garm-binary` resource (garm-linux-amd64.tgz), on first use.

    Asking for a version whose binary is missing is `cannot_run` (skipped here, failed in CI),
    never a `KeyError` in a fixture: a fresh clone's `tox` skips these cases with the reason.

    Args:
        directories: where the tarballs are built (pytest's session temporary directories).
    """

    def __init__(self, directories: pytest.TempPathFactory) -> None:
        self._directories = directories
        self._built: dict[str, Path] = {}

    def of(self, version: str) -> Path:
        """The tarball holding GARM `version`; the case cannot run without that binary."""
        if version not in self._built:
            binary, reason = garm_binary(version)
            if binary is None:
                cannot_run(reason)
            directory = self._directories.mktemp(f"garm-{version}")
            self._built[version] = build_tarball(
                "garm", Path(binary).read_bytes(), directory / "garm-linux-amd64.tgz"
            )
        return self._built[version]


@pytest.fixture(scope="session")
def garm_tarballs(tmp_path_factory: pytest.TempPathFactory) -> GarmTarballs:
    """The `garm-binary` resources, one per GARM version (`GarmTarballs.of`)."""
    return GarmTarballs(tmp_path_factory)


@pytest.fixture(scope="module")
def container(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Container]:
    """The module's container, this thread on its network; stopped and checked at the end."""
    reason = unavailable_reason()
    if reason:
        cannot_run(reason)
    name = request.module.__name__.rsplit(".", 1)[-1]
    journal = tmp_path_factory.mktemp(f"container-{name}") / "journal.txt"
    with booted(CONTAINER_FILES, journal_file=journal) as box, box.network():
        yield box


@pytest.fixture(autouse=True)
def _container_boot_time(request: pytest.FixtureRequest) -> None:
    """Put the module's container's boot time in the test's report, for the run's summary."""
    if "container" in request.fixturenames:
        container: Container = request.getfixturevalue("container")
        module = request.node.module.__name__
        line = f"{module}: booted in {container.boot_seconds:.1f} s"
        request.node.user_properties.append(("container", line))


@pytest.fixture
def machine(container: Container, tmp_path: Path) -> Iterator[ContainerMachine]:
    """A fresh machine in the module's container; what the charm made goes at the end."""
    box = ContainerMachine(container, tmp_path)
    try:
        yield box
    finally:
        box.close()
