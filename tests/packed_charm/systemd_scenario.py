"""The packed garm charm on a fresh machine with a real systemd, as Juju's machine agent runs it.

The machine is the e2e suites' throwaway container (`e2e.container.booted`): systemd booted over
an overlay of this machine's root, with only a loopback. In it, as a Juju 3.6 machine agent lays
a unit out: the .charm unpacked under `/var/lib/juju/agents/unit-garm-0/charm`, the hook tools
(the stand-ins, `hook_tools`) in `/var/lib/juju/tools/unit-garm-0`, first on each hook's PATH,
both resources attached under the unit's directory. Each hook is the charm's own `dispatch`,
run inside the container (`nsenter`) with the hook's environment alone (JUJU_DISPATCH_PATH,
JUJU_UNIT_NAME, JUJU_CHARM_DIR, ...), in the charm directory. The machine's `python3` on that
PATH is Python 3.12 (ubuntu@24.04's), which dispatch links the packed venv to.

GARM is the real server binary (the `garm-binary` resource), started by the container's systemd
from the unit the charm rendered, in its sandbox; the provider resource is the e2e suites'
stand-in (`e2e.container_machine`). GitHub is the fake on the container's loopback, GARM's
`github.com` endpoint pointed at it before the configurator is related.

The hooks: install, leader-elected, config-changed, start, update-status until Active; then
configurator `small` related (created, joined, changed, its secrets granted) and update-status
until its scale set is in GARM and the unit Active. `run` returns what the tests judge.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from contract.garm_http import call
from doubles.configurator_publication import pkcs1_app_key, published_databag
from e2e.container import Container
from e2e.container_machine import ContainerMachine
from e2e.machine import build_tarball
from fake_github import FakeGitHub
from garm_api import GarmClient, GarmUnreachable
from packed_charm.hook_tools import HookTools, add_relation, add_secret, unit_model
from packed_charm.unit import HookRun, PackedUnit, unpack
from reconcile.bootstrap import ADMIN_LABEL

REPOSITORY = Path(__file__).resolve().parents[2]
CHARM_SOURCE = REPOSITORY / "charms" / "garm"
UNIT = "garm/0"
AGENT_DIR = PurePosixPath("/var/lib/juju/agents/unit-garm-0")
CHARM_DIR = AGENT_DIR / "charm"
TOOLS_DIR = PurePosixPath("/var/lib/juju/tools/unit-garm-0")
# ubuntu@24.04's `python3` (3.12) for the hooks' PATH; the container's /usr/bin/python3 stays the
# machine's own, which the exporter and the provider stand-in run on.
BASE_BIN = PurePosixPath("/usr/local/lib/garm-e2e-base/bin")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENDPOINT = "garm-configurator"
CONFIGURATOR = "small"
LABELS = ("packed", "x64")
OPENSTACK_PASSWORD = "packed-openstack-Pa55word"
GARM_PORT = 9997
HOOK_TIMEOUT_SECONDS = 300
STEP_TIMEOUT_SECONDS = 120.0


class HookFailed(Exception):
    """A dispatch exited non-zero; the message ends with what it printed."""


@dataclasses.dataclass(frozen=True)
class ContainerRunner:
    """Runs a hook's command inside the container, with exactly the hook's environment."""

    container: Container

    def __call__(
        self, argv: list[str], environment: Mapping[str, str], cwd: Path
    ) -> subprocess.CompletedProcess[str]:
        """Run it in `cwd` (the container's path); never raises for a non-zero exit."""
        return subprocess.run(
            self.container.command(argv, environment, str(cwd)),
            capture_output=True,
            text=True,
            timeout=HOOK_TIMEOUT_SECONDS,
            check=False,
        )


def run(
    container: Container, charm_file: Path, python: str, garm: Path, work: Path
) -> dict[str, Any]:
    """Lay the unit out in `container`, run its hooks; the result document.

    Args:
        container: a freshly booted container, this thread on its network.
        charm_file: the packed garm charm.
        python: a Python 3.12 this machine and the container both run.
        garm: the GARM server binary.
        work: an empty directory of this side's.
    """
    machine = ContainerMachine(container, work)
    unit = lay_out_unit(container, machine, charm_file, Path(python).resolve(), garm, work)
    hooks = Hooks(unit, machine)
    with FakeGitHub() as github:
        for hook in ("install", "leader-elected", "config-changed", "start"):
            hooks.dispatch(hook)
        hooks.update_status_until(lambda: True, "Active after start")
        garm_active = container.is_active("garm.service")
        starts_before_relation = machine.restarts()
        point_github_at(admin_client(unit.tools), github.url)
        relation_id = relate_configurator(unit.tools)
        hooks.dispatch(f"{ENDPOINT}-relation-created", relation_id=relation_id)
        remote = f"{CONFIGURATOR}/0"
        for hook in (f"{ENDPOINT}-relation-joined", f"{ENDPOINT}-relation-changed"):
            hooks.dispatch(hook, relation_id=relation_id, remote_unit=remote)
        hooks.update_status_until(lambda: bool(scalesets(unit.tools)), "the scale set in GARM")
        client = admin_client(unit.tools)
        return {
            "hooks": [hook_run.as_json() for hook_run in unit.runs],
            "garm_active_after_start": garm_active,
            "garm_starts_before_relation": starts_before_relation,
            "garm_starts": machine.restarts(),
            "garm_active": container.is_active("garm.service"),
            "garm_main_pid_user": main_pid_user(container),
            "callback_url": client.controller_info().callback_url,
            "scalesets": scalesets(unit.tools),
            "providers": sorted(provider.name for provider in client.list_providers()),
            "model": unit.tools.model(),
            "calls": unit.tools.calls(),
            "garm_journal": machine.journal(),
            "unit_file": container.host_path("/etc/systemd/system/garm.service").read_text(),
            "venv_python": os.readlink(container.host_path(CHARM_DIR / "venv" / "bin" / "python")),
            "python": str(Path(python).resolve()),
        }


def lay_out_unit(
    container: Container,
    machine: ContainerMachine,
    charm_file: Path,
    python: Path,
    garm: Path,
    work: Path,
) -> PackedUnit:
    """The charm unpacked, the tools and resources in place, as the machine agent leaves them."""
    unpack(charm_file, container.host_path(CHARM_DIR))
    base_bin = container.host_path(BASE_BIN)
    base_bin.mkdir(parents=True)
    (base_bin / "python3").symlink_to(python)
    resources = {
        "garm-binary": build_tarball("garm", garm.read_bytes(), work / "garm-linux-amd64.tgz"),
        "garm-provider-openstack": machine.provider_tarball(
            work / "garm-provider-openstack-linux-amd64.tgz"
        ),
    }
    attached: dict[str, Path] = {}
    for name, tarball in resources.items():
        inside = AGENT_DIR / "resources" / name / tarball.name
        container.write(str(inside), tarball.read_bytes(), 0o644)
        attached[name] = Path(inside)
    model = unit_model(CHARM_SOURCE, unit=UNIT, resources=attached)
    tools = HookTools.create(container.host_path(TOOLS_DIR), model, python=str(python))
    return PackedUnit(
        Path(CHARM_DIR),
        tools,
        ContainerRunner(container),
        machine_path=f"{BASE_BIN}:{PATH}",
        tools_path=Path(TOOLS_DIR),
    )


@dataclasses.dataclass(frozen=True)
class Hooks:
    """Dispatches the unit's hooks; a failed one, or a unit failed under systemd, ends the run."""

    unit: PackedUnit
    machine: ContainerMachine

    def dispatch(
        self, hook: str, *, relation_id: int | None = None, remote_unit: str | None = None
    ) -> HookRun:
        """Run one hook.

        Raises:
            HookFailed: dispatch exited non-zero, or one of the charm's units failed under
                systemd meanwhile (with its journal): a later step could only time out.
        """
        done = self.unit.hook(hook, relation_id=relation_id, remote_unit=remote_unit)
        if done.returncode != 0:
            raise HookFailed(f"{hook}'s dispatch exited {done.returncode}:\n{done.output[-3000:]}")
        try:
            self.machine.fail_if_a_unit_failed()
        except pytest.fail.Exception as failed:
            raise HookFailed(f"after {hook}: {failed}") from None
        return done

    def update_status_until(self, also: Callable[[], bool], what: str) -> None:
        """update-status until the unit is Active and `also()` holds.

        Raises:
            HookFailed: not within `STEP_TIMEOUT_SECONDS` (with the last status).
        """
        deadline = time.monotonic() + STEP_TIMEOUT_SECONDS
        status: dict[str, str] = {}
        while time.monotonic() < deadline:
            status = self.dispatch("update-status").unit_status
            try:
                if status["status"] == "active" and also():
                    return
            except GarmUnreachable:
                pass  # the hook restarted GARM; the next one waits for it
            time.sleep(1.0)
        raise HookFailed(f"{what}: not within {STEP_TIMEOUT_SECONDS:.0f} s; last status {status}")


def admin_client(tools: HookTools) -> GarmClient:
    """GARM's API, logged in with the admin credentials the charm keeps in its secret."""
    (secret,) = [s for s in tools.model()["secrets"].values() if s["label"] == ADMIN_LABEL]
    content = secret["revisions"][str(secret["latest"])]
    client = GarmClient(f"http://127.0.0.1:{GARM_PORT}")
    client.login(content["username"], content["password"])
    return client


def point_github_at(client: GarmClient, url: str) -> None:
    """GARM's github.com endpoint leads to the fake GitHub (as DNS would point the name)."""
    urls = {
        "base_url": url,
        "api_base_url": f"{url}/api/v3/",
        "upload_base_url": f"{url}/api/uploads/",
    }
    reply = call(client.base_url, "PUT", "/github/endpoints/github.com", urls, token=client.token)
    if reply.status != 200:
        raise RuntimeError(f"GARM refused the fake GitHub endpoint: {reply.raw}")


def relate_configurator(tools: HookTools) -> int:
    """Configurator `small` related: its publication, its secrets app-owned and granted."""
    model = tools.model()
    password = add_secret(model, CONFIGURATOR, {"password": OPENSTACK_PASSWORD, "app": "small"})
    key = add_secret(model, CONFIGURATOR, {"private-key": pkcs1_app_key(), "app": "small"})
    databag = published_databag(LABELS, password_secret_id=password, private_key_secret_id=key)
    relation_id = add_relation(model, ENDPOINT, CONFIGURATOR, remote_app_data=databag)
    tools.write_model(model)
    return relation_id


def scalesets(tools: HookTools) -> list[dict[str, Any]]:
    """GARM's scale sets: name, labels, enabled, provider."""
    return [
        {
            "name": scaleset.name,
            "labels": sorted(scaleset.normalised_labels),
            "enabled": scaleset.enabled,
            "provider": scaleset.provider_name,
        }
        for scaleset in admin_client(tools).list_scalesets()
    ]


def main_pid_user(container: Container) -> str:
    """The user GARM's main process runs as, as systemd started it."""
    pid = container.systemctl("show", "--property=MainPID", "--value", "garm.service")
    if not pid.stdout.strip() or pid.stdout.strip() == "0":
        return ""
    owner = container.run(["ps", "-o", "user=", "-p", pid.stdout.strip()], check=False)
    return owner.stdout.strip()
