"""The packed garm charm from install to Active, hook by hook, on a throwaway machine.

Run as root inside `machine.namespaced`: `python -m packed_charm.garm_scenario --charm FILE
--work DIR --python /path/to/python3.12`. It writes `DIR/shared/result.json` (each hook's exit,
output and status; the unit's model as the charm left it; every hook tool call; GARM's scale
sets and providers as the simulator holds them; the systemctl calls and GARM's journal).

What Juju would provide is provided: the charm unpacked under /var/lib/juju/agents/unit-garm-0,
the hook tools first on PATH, both resources attached, the hooks in Juju's order for a new
leader (install, leader-elected, config-changed, start), then configurator `small` related
(relation-created, -joined, -changed, publishing one scale set with its secrets granted), then
update-status until Active. The machine provides `python3` as Python 3.12 (ubuntu@24.04's)
and, as systemd does not run, the e2e suite's systemctl stand-in. GARM is the simulator: the
`garm` the charm installs is `garm_standin.py`, which starts it with the config the charm wrote.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from doubles.configurator_publication import pkcs1_app_key, published_databag
from e2e.machine import STANDIN as SYSTEMCTL_STANDIN
from e2e.machine import build_tarball
from garm_sim import GarmSim
from packed_charm import garm_standin
from packed_charm.hook_tools import HookTools, add_relation, add_secret, unit_model
from packed_charm.machine import OverlayRoot
from packed_charm.unit import PackedUnit, unpack

REPOSITORY = Path(__file__).resolve().parents[2]
CHARM_SOURCE = REPOSITORY / "charms" / "garm"
UNIT = "garm/0"
CHARM_DIR = Path("/var/lib/juju/agents/unit-garm-0/charm")
CONFIGURATOR = "small"
LABELS = ("packed", "x64")
OPENSTACK_PASSWORD = "packed-openstack-Pa55word"
UPDATE_STATUS_LIMIT = 10
# GARM's API port: the charm's default (nothing else listens in this network namespace).
GARM_PORT = 9997


def main(argv: list[str]) -> int:
    """Build the machine, run the hooks, write the result."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--charm", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--python", required=True, help="the machine's python3 (3.12)")
    args = parser.parse_args(argv)
    shared = args.work / "shared"
    machine = OverlayRoot(args.work / "machine", shared)
    machine.mount()
    sim = GarmSim([], port=GARM_PORT)
    control = SimControl(sim)
    try:
        result = run(machine, shared, args.charm, args.python, control)
    finally:
        control.close()
        sim.stop()
    (shared / "result.json").write_text(json.dumps(result, indent=1))
    return 0


def run(
    machine: OverlayRoot, shared: Path, charm_file: Path, python: str, control: SimControl
) -> dict[str, Any]:
    """The hooks, in Juju's order; the result document."""
    unpack(charm_file, machine.inside(CHARM_DIR))
    machine_bin = machine_stand_ins(shared / "machine-bin", shared / "systemd", python)
    resources = attach_resources(shared / "resources", control.url)
    model = unit_model(CHARM_SOURCE, unit=UNIT, resources=resources)
    tools = HookTools.create(shared / "tools", model)
    unit = PackedUnit(CHARM_DIR, tools, machine.run, f"{machine_bin}:{PATH}")
    for hook in ("install", "leader-elected", "config-changed", "start"):
        unit.hook(hook)
    relation_id = relate_configurator(tools)
    unit.hook(f"{ENDPOINT}-relation-created", relation_id=relation_id)
    remote = f"{CONFIGURATOR}/0"
    unit.hook(f"{ENDPOINT}-relation-joined", relation_id=relation_id, remote_unit=remote)
    unit.hook(f"{ENDPOINT}-relation-changed", relation_id=relation_id, remote_unit=remote)
    for _ in range(UPDATE_STATUS_LIMIT):
        if unit.hook("update-status").unit_status["status"] == "active":
            break
    return {
        "hooks": [run.as_json() for run in unit.runs],
        "model": tools.model(),
        "calls": tools.calls(),
        "scalesets": control.scalesets(),
        "providers": sorted(control.sim.state.provider_names()),
        "garm_starts": control.starts,
        "systemctl": _lines(shared / "systemd" / "calls"),
        "journal": _text(shared / "systemd" / "journal" / "garm.service.log"),
        "unit_file": _text(machine.inside(Path("/etc/systemd/system/garm.service"))),
        "interpreter": interpreter(machine),
    }


def interpreter(machine: OverlayRoot) -> dict[str, str]:
    """The Python dispatch linked into the venv, and where it imports ops from there."""
    python = CHARM_DIR / "venv" / "bin" / "python"
    probe = "import json, sys, ops; print(json.dumps([sys.version.split()[0], ops.__file__]))"
    environment = {"PATH": PATH, "PYTHONPATH": f"{CHARM_DIR}/lib:{CHARM_DIR}/src"}
    done = machine.run([str(python), "-c", probe], environment, CHARM_DIR)
    version, ops_file = json.loads(done.stdout) if done.returncode == 0 else ("", done.stderr)
    link = machine.inside(python)
    return {"version": version, "ops": ops_file, "link": str(link.readlink())}


ENDPOINT = "garm-configurator"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def machine_stand_ins(directory: Path, state: Path, python: str) -> Path:
    """`systemctl` (the e2e stand-in, rooted at the machine's /) and `python3` (3.12)."""
    directory.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    wrapper = directory / "systemctl"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(SYSTEMCTL_STANDIN))} "
        f'--root / --state {shlex.quote(str(state))} "$@"\n'
    )
    wrapper.chmod(0o755)
    (directory / "python3").symlink_to(python)
    return directory


def attach_resources(directory: Path, control_url: str) -> dict[str, Path]:
    """Both resources as release tarballs: `garm` is the stand-in, the provider a script.

    GARM's providers run only when GARM creates runners, which the simulator does itself.
    """
    directory.mkdir(parents=True, exist_ok=True)
    source = Path(garm_standin.__file__).read_text()
    source = source.replace('CONTROL = "http://127.0.0.1:0"', f"CONTROL = {control_url!r}", 1)
    garm = f"#!{sys.executable}\n{source}".encode()
    provider = b"#!/bin/sh\necho 'garm-provider-openstack stands in: the simulator runs none'\n"
    return {
        "garm-binary": build_tarball("garm", garm, directory / "garm-linux-amd64.tgz"),
        "garm-provider-openstack": build_tarball(
            "garm-provider-openstack", provider, directory / "garm-provider-openstack.tgz"
        ),
    }


def relate_configurator(tools: HookTools) -> int:
    """Configurator `small` related: its publication, its secrets app-owned and granted."""
    model = tools.model()
    password = add_secret(model, CONFIGURATOR, {"password": OPENSTACK_PASSWORD, "app": "small"})
    key = add_secret(model, CONFIGURATOR, {"private-key": pkcs1_app_key(), "app": "small"})
    databag = published_databag(LABELS, password_secret_id=password, private_key_secret_id=key)
    relation_id = add_relation(model, ENDPOINT, CONFIGURATOR, remote_app_data=databag)
    tools.write_model(model)
    return relation_id


class SimControl:
    """Where `garm_standin` tells the harness its service started or stopped."""

    def __init__(self, sim: GarmSim) -> None:
        self.sim = sim
        self.starts = 0
        control = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                control.handle(body["action"], body["config"])
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def handle(self, action: str, config: str) -> None:
        """GARM started with `config` (the charm's config.toml), or stopped."""
        if action == "stop":
            self.sim.stop()
            return
        document = tomllib.loads(config)
        port = document["apiserver"]["port"]
        if port != self.sim.port:
            raise SystemExit(f"GARM configured on port {port}, the simulator is on {GARM_PORT}")
        names = [provider["name"] for provider in document.get("provider", [])]
        with self.sim.state.lock:
            self.sim.state.providers = [
                {"name": name, "type": "external", "description": name} for name in names
            ]
        self.sim.restart(jwt_secret=document["jwt_auth"]["secret"])
        self.starts += 1

    def scalesets(self) -> list[dict[str, Any]]:
        """GARM's scale sets: name, labels, enabled, provider, min idle and max runners."""
        with self.sim.state.lock:
            return [
                {
                    "name": scaleset.name,
                    "labels": sorted(
                        self.sim.state.tags[tag_id].name for tag_id in scaleset.tag_ids
                    ),
                    "enabled": scaleset.enabled,
                    "provider": scaleset.provider_name,
                    "min_idle_runners": scaleset.min_idle_runners,
                    "max_runners": scaleset.max_runners,
                }
                for scaleset in self.sim.state.scalesets.values()
            ]

    def close(self) -> None:
        """Stop listening."""
        self._server.shutdown()
        self._server.server_close()


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
