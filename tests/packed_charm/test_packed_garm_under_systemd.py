"""The packed garm charm takes a fresh machine with a real systemd from install to Active.

Run by `tox -e packed` (Python 3.12) after `tox -e pack`, with the artifact `tox -e pack` left
in `PACKED_CHARMS_DIR`: the charm's own `dispatch` runs each hook inside a throwaway container
booted with systemd (`systemd_scenario`), and GARM is the real binary, started by that systemd
from the unit the charm rendered. Without the packed charm, root and systemd-nspawn, Python
3.12 or the GARM v0.2.1 binary, the cases cannot run (skipped here, failed in CI).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.conftest import V021, garm_binary
from e2e import container as containers
from e2e.container_machine import CONTAINER_FILES
from must_run import cannot_run
from packed_charm import systemd_scenario
from packed_charm.conftest import packed_file
from packed_charm.pack import CHARMS, host_platform, runtime_python

GARM_DIR = CHARMS[0]


@pytest.fixture(scope="module")
def systemd_run(packed_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The packed charm's hooks in a fresh container, from install to Active; the result."""
    for reason in (containers.unavailable_reason(), garm_binary(V021)[1]):
        if reason:
            cannot_run(reason)
    python = runtime_python()
    if python is None:
        cannot_run("no Python 3.12 (ubuntu@24.04's) to run the packed charm on")
    garm, _ = garm_binary(V021)
    assert garm is not None
    charm_file = packed_file(packed_dir, GARM_DIR, host_platform())
    work = tmp_path_factory.mktemp("packed-garm-systemd")
    journal = work / "container-journal.txt"
    # A failure here is pytest's cached error of the module's fixture: every case reports it,
    # and the container boots once.
    with containers.booted(CONTAINER_FILES, journal_file=journal) as box, box.network():
        result = systemd_scenario.run(box, charm_file, python, Path(garm), work)
    (work / "result.json").write_text(json.dumps(result, indent=1))
    return result


def test_dispatch_takes_the_machine_from_install_to_active(systemd_run: dict[str, Any]):
    """Arrange: a fresh container with systemd; the .charm unpacked as the machine agent does.

    Act: dispatch install, leader-elected, config-changed, start, then update-status.
    Assert: every dispatch exits 0; install waits for the next hook, which has systemd start
    GARM (as the `garm` user, from the unit the charm rendered) and bootstraps it: Active, with
    GARM's callback URL set, after exactly one start.
    """
    hooks = {run["hook"]: run for run in systemd_run["hooks"]}

    assert [run for run in systemd_run["hooks"] if run["returncode"] != 0] == []
    assert hooks["install"]["unit_status"] == {
        "status": "waiting",
        "message": "created GARM's secrets; GARM is configured at the next hook",
    }
    assert hooks["leader-elected"]["unit_status"]["status"] == "active"
    assert systemd_run["garm_active_after_start"]
    assert systemd_run["garm_starts_before_relation"] == 1
    assert systemd_run["garm_main_pid_user"] == "garm"
    assert "ProtectSystem=strict" in systemd_run["unit_file"]
    assert systemd_run["callback_url"].endswith("/api/v1/callbacks")
    assert systemd_run["model"]["version"] == "v0.2.1"
    assert systemd_run["model"]["ports"] == [f"{systemd_scenario.GARM_PORT}/tcp"]


def test_a_related_configurator_gets_its_scale_set_in_garm(systemd_run: dict[str, Any]):
    """Arrange: the Active unit above; GARM's github.com endpoint at the fake GitHub.

    Act: relate configurator `small` (created, joined, changed), update-status.
    Assert: its provider and scale set are in GARM, the labels it published, enabled, after
    exactly one more GARM start by systemd (the provider's); GARM still runs; the unit Active.
    """
    (scaleset,) = systemd_run["scalesets"]

    assert scaleset["labels"] == sorted(systemd_scenario.LABELS)
    assert scaleset["enabled"]
    assert systemd_run["providers"] == [scaleset["provider"]]
    assert systemd_run["garm_starts"] == 2
    assert systemd_run["garm_active"]
    assert systemd_run["hooks"][-1]["unit_status"]["status"] == "active"


def test_dispatch_ran_the_packed_venv_on_the_machines_python_3_12(systemd_run: dict[str, Any]):
    """Arrange: the run above.

    Act: read the link dispatch made and what the charm logged.
    Assert: dispatch linked the packed venv's python to the machine's python3 (3.12); no hook
    logged an error; no secret value is in any tool call, log line or status.
    """
    log = systemd_run["model"].get("log", [])
    values = {
        value
        for secret in systemd_run["model"]["secrets"].values()
        for revision in secret["revisions"].values()
        for key, value in revision.items()
        if key != "app" and len(value) >= 8
    }
    said = json.dumps([systemd_run["calls"], log, systemd_run["hooks"]])

    assert systemd_run["venv_python"] == str(systemd_scenario.BASE_BIN / "python3")
    assert Path(systemd_run["python"]).name.startswith("python3.12")
    assert [message for level, message in log if level == "ERROR"] == []
    assert values
    assert [value[:8] for value in values if value in said] == []
