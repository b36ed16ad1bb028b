"""The charms as `tox -e pack` packed them: their contents.

Run by `tox -e packed` (Python 3.12, ubuntu@24.04's) after `tox -e pack`, from
`PACKED_CHARMS_DIR`. Without the packed charms the cases cannot run (skipped here, failed in
CI).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from must_run import cannot_run
from packed_charm import artifact
from packed_charm.pack import CHARMS, charm_name, declared_platforms

PACKED = [
    pytest.param(charm_dir, platform, id=f"{charm_dir.name}-{platform}")
    for charm_dir in CHARMS
    for platform in declared_platforms(charm_dir)
]
GARM_DIR = CHARMS[0]


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


@pytest.mark.parametrize(("charm_dir", "platform"), PACKED)
def test_each_artifact_holds_what_charmcraft_packs_and_nothing_else(
    packed_dir: Path, charm_dir: Path, platform: str
):
    """Arrange: the .charm packed for one platform the charm declares.

    Act: compare it with the charm directory and its uv.lock.
    Assert: dispatch, src/, lib/, the venv from uv.lock alone (3.12, the platform's native
    code), alert rules and dashboards, manifest, metadata, config and actions: no difference.
    """
    charm_file = packed_file(packed_dir, charm_dir, platform)

    found = artifact.problems(charm_file, charm_dir, platform)

    assert found == []


def test_a_wrong_artifact_is_told_apart(packed_dir: Path, tmp_path: Path):
    """Arrange: the garm amd64 artifact, copied with four faults.

    A module left out, a package the lock does not hold added, an alert rule changed, an
    arm64 manifest.

    Act: check the copy as the amd64 build.
    Assert: each difference is reported, by name.
    """
    original = packed_file(packed_dir, GARM_DIR, "amd64")
    broken = tmp_path / "broken.charm"
    site = "venv/lib/python3.12/site-packages"
    with zipfile.ZipFile(original) as source, zipfile.ZipFile(broken, "w") as copy:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == "src/charm_status.py":
                continue
            if info.filename == "src/prometheus_alert_rules/garm.rules":
                content += b"\n# changed\n"
            if info.filename == "manifest.yaml":
                content = content.replace(b"- amd64", b"- arm64")
            copy.writestr(info, content)
        copy.writestr(f"{site}/stowaway-1.0.dist-info/METADATA", "Name: stowaway\n")

    found = artifact.problems(broken, GARM_DIR, "amd64")

    assert "src/charm_status.py is not packed" in found
    assert "src/prometheus_alert_rules/garm.rules differs from the charm's" in found
    assert "venv has stowaway 1.0, which uv.lock does not lock" in found
    assert any(problem.startswith("manifest.yaml bases are") for problem in found)
    assert len(found) == 4
