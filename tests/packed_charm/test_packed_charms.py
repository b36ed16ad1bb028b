"""The charms as `tox -e pack` packed them: their contents, and the garm charm run as Juju would.

Run by `tox -e packed` (Python 3.12, ubuntu@24.04's) after `tox -e pack`, from
`PACKED_CHARMS_DIR`. Without the packed charms, or without root for the throwaway machine,
the cases cannot run (skipped here, failed in CI).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from must_run import cannot_run
from packed_charm import artifact, garm_scenario, machine
from packed_charm.conftest import packed_file
from packed_charm.pack import CHARMS, declared_platforms, host_platform, runtime_python

PACKED = [
    pytest.param(charm_dir, platform, id=f"{charm_dir.name}-{platform}")
    for charm_dir in CHARMS
    for platform in declared_platforms(charm_dir)
]
GARM_DIR = CHARMS[0]
SCENARIO_TIMEOUT_SECONDS = 600


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


@pytest.fixture(scope="module")
def garm_run(packed_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The garm charm built for this machine, its hooks from install to Active, as a result."""
    reason = machine.unavailable_reason()
    if reason:
        cannot_run(reason)
    python = runtime_python()
    if python is None:
        cannot_run("no Python 3.12 (ubuntu@24.04's) to run the packed charm on")
    charm_file = packed_file(packed_dir, GARM_DIR, host_platform())
    work = tmp_path_factory.mktemp("packed-garm")
    command = [sys.executable, "-m", "packed_charm.garm_scenario"]
    command += [f"--charm={charm_file}", f"--work={work}", f"--python={python}"]
    # What pytest puts on sys.path (pyproject.toml's pythonpath), for the scenario's process.
    repository = GARM_DIR.parents[1]
    paths = [GARM_DIR / "src", GARM_DIR / "lib", repository / "tests"]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(str(path) for path in paths))
    done = subprocess.run(
        machine.namespaced(command),
        env=environment,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((work / "shared" / "result.json").read_text())
    shutil.rmtree(work / "machine" / "upper", ignore_errors=True)
    return result


def test_the_packed_garm_charm_goes_from_install_to_active(garm_run: dict[str, Any]):
    """Arrange: the packed charm unpacked on a throwaway machine, its resources attached.

    Act: install, leader-elected, config-changed, start; configurator `small` related
    (created, joined, changed); update-status until Active.
    Assert: every dispatch exits 0; install waits for the next hook, which starts GARM and
    bootstraps it (Active); the configurator's scale set is in GARM with its labels, enabled,
    after exactly one more GARM restart (its provider); the unit ends Active, GARM's version
    set and its port opened.
    """
    hooks = {run["hook"]: run for run in garm_run["hooks"]}

    assert [run for run in garm_run["hooks"] if run["returncode"] != 0] == []
    assert hooks["install"]["unit_status"] == {
        "status": "waiting",
        "message": "created GARM's secrets; GARM is configured at the next hook",
    }
    assert hooks["leader-elected"]["unit_status"]["status"] == "active"
    (scaleset,) = garm_run["scalesets"]
    assert scaleset["labels"] == sorted(garm_scenario.LABELS)
    assert scaleset["enabled"]
    assert garm_run["providers"] == [scaleset["provider"]]
    assert garm_run["garm_starts"] == 2
    assert garm_run["hooks"][-1]["unit_status"]["status"] == "active"
    assert garm_run["model"]["version"] == "v0.2.1"
    assert garm_run["model"]["ports"] == [f"{garm_scenario.GARM_PORT}/tcp"]


def test_the_packed_charm_runs_on_python_3_12_from_its_own_venv(garm_run: dict[str, Any]):
    """Arrange: the run above.

    Act: read what the charm logged about itself.
    Assert: no hook logged an error; ops and the charm ran from the packed venv's
    python3.12 site-packages and the unpacked src/, nothing from the test environment.
    """
    log = garm_run["model"].get("log", [])

    assert [message for level, message in log if level == "ERROR"] == []
    assert garm_run["interpreter"]["version"].startswith("3.12.")
    assert garm_run["interpreter"]["ops"].startswith(
        f"{garm_scenario.CHARM_DIR}/venv/lib/python3.12/site-packages/"
    )


def test_what_the_charm_asked_juju_holds_no_secret(garm_run: dict[str, Any]):
    """Arrange: the run above; the secrets' contents (the configurator's and the charm's own).

    Act: collect every hook tool argument, stdin, log line and status message.
    Assert: no secret value is among them; secret content went only through key#file.
    """
    values = {
        value
        for secret in garm_run["model"]["secrets"].values()
        for revision in secret["revisions"].values()
        for key, value in revision.items()
        if key != "app" and len(value) >= 8
    }
    said = json.dumps([garm_run["calls"], garm_run["model"].get("log", []), garm_run["hooks"]])

    assert values, "the charm created its secrets and read the configurator's"
    assert [value[:8] for value in values if value in said] == []
