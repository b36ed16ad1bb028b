"""Juju's hook tools for a unit run outside Juju: the unit's model, the tools, what was asked.

`HookTools.create(directory, model)` writes the stand-in program (`hook_tool.py`), a link for
every hook tool name and the model; put `directory` first on the hook's PATH, as the unit
agent puts its tools directory. Afterwards `model()` is the model as the charm left it (status,
relation data, secrets, state, application version) and `calls()` every tool call in order.

The model is plain JSON; `unit_model` builds one for a unit of a charm from its charmcraft.yaml
(config defaults applied, as `config-get` reports them). Relations and secrets are added with
`add_relation` and `add_secret`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from packed_charm import hook_tool

PROGRAM = Path(hook_tool.__file__)
TOOL_NAMES = (*hook_tool.HANDLERS, *hook_tool.UNMODELLED)
MODEL_UUID = "5f2c1c4e-3b7a-4e55-8d0c-7b1d3f9a6e21"


def unit_model(
    charm_dir: Path,
    *,
    unit: str,
    leader: bool = True,
    config: Mapping[str, Any] | None = None,
    resources: Mapping[str, Path] | None = None,
    address: str = "10.20.30.40",
) -> dict[str, Any]:
    """A unit's model: charmcraft.yaml's config defaults overridden by `config`.

    Args:
        charm_dir: holds charmcraft.yaml (the unpacked charm's config.yaml would do as well).
        unit: the unit's name, e.g. `garm/0`.
        leader: whether it leads its application.
        config: options set with `juju config`.
        resources: attached resources by name (paths as the unit sees them).
        address: the unit's address, for `network-get`.
    """
    options = yaml.safe_load((charm_dir / "charmcraft.yaml").read_text())["config"]["options"]
    defaults = {name: option["default"] for name, option in options.items() if "default" in option}
    return {
        "unit": unit,
        "leader": leader,
        "model_uuid": MODEL_UUID,
        "config": defaults | dict(config or {}),
        "resources": {name: str(path) for name, path in (resources or {}).items()},
        "address": address,
        "relations": {},
        "secrets": {},
        "state": {},
        "status": {
            "unit": {"status": "unknown", "message": ""},
            "app": {"status": "unknown", "message": ""},
        },
        "version": "",
    }


def add_relation(
    model: dict[str, Any],
    endpoint: str,
    remote_app: str,
    *,
    remote_units: int = 1,
    remote_app_data: Mapping[str, str] | None = None,
) -> int:
    """A relation with `remote_app` on `endpoint`; its id."""
    relation_id = 1 + max((int(rid) for rid in model["relations"]), default=-1)
    unit = model["unit"]
    units = [f"{remote_app}/{number}" for number in range(remote_units)]
    data: dict[str, dict[str, str]] = {unit: {}, unit.split("/")[0]: {}}
    data[remote_app] = dict(remote_app_data or {})
    data.update({name: {} for name in units})
    model["relations"][str(relation_id)] = {
        "endpoint": endpoint,
        "app": remote_app,
        "units": units,
        "data": data,
    }
    return relation_id


def add_secret(model: dict[str, Any], owner: str, content: Mapping[str, str]) -> str:
    """A secret `owner` (an application or unit name) owns, revision 1; its id."""
    number = len(model["secrets"])
    secret_id = f"secret:d4{number:018d}"
    model["secrets"][secret_id] = {
        "owner": owner,
        "label": "",
        "description": "",
        "revisions": {"1": dict(content)},
        "latest": 1,
        "grants": [],
    }
    return secret_id


@dataclasses.dataclass(frozen=True)
class HookTools:
    """A tools directory: the stand-ins, the unit's model, the calls made."""

    directory: Path

    @classmethod
    def create(
        cls, directory: Path, model: Mapping[str, Any], *, python: str = sys.executable
    ) -> HookTools:
        """Write the program (run by `python`), a link per tool name and the model."""
        directory.mkdir(parents=True, exist_ok=True)
        program = directory / PROGRAM.name
        # Isolated and without site: the tools use the standard library only, and dispatch's
        # PYTHONPATH (the charm's lib and src) must not reach them.
        program.write_text(f"#!{python} -IS\n{PROGRAM.read_text()}")
        program.chmod(0o755)
        for name in TOOL_NAMES:
            link = directory / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(program.name)
        tools = cls(directory)
        tools.write_model(model)
        return tools

    def model(self) -> dict[str, Any]:
        """The model as the last call left it."""
        return json.loads((self.directory / "model.json").read_text())

    def write_model(self, model: Mapping[str, Any]) -> None:
        """Replace the model (what Juju changes between hooks: config, relations, ...)."""
        (self.directory / "model.json").write_text(json.dumps(model, indent=1, sort_keys=True))

    def calls(self) -> list[dict[str, Any]]:
        """Every call, oldest first: `{"tool", "args", "stdin", "at"}`."""
        log = self.directory / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def tools_called(self) -> set[str]:
        """The names of the tools called at least once."""
        return {call["tool"] for call in self.calls()}

    def remove(self) -> None:
        """Remove the directory."""
        shutil.rmtree(self.directory, ignore_errors=True)


def hook_environment(
    model: Mapping[str, Any],
    *,
    charm_dir: Path,
    tools: Path,
    hook: str,
    path_after_tools: str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    relation_id: int | None = None,
    remote_unit: str | None = None,
    juju_version: str = "3.6.12",
) -> dict[str, str]:
    """The environment the Juju 3.6 unit agent gives a machine charm's hook.

    The variables ops reads (`ops.jujucontext`), with the tools directory first on PATH as the
    agent puts it; relation hooks add JUJU_RELATION, JUJU_RELATION_ID (`endpoint:id`),
    JUJU_REMOTE_APP and JUJU_REMOTE_UNIT.
    """
    unit = model["unit"]
    environment = {
        "PATH": f"{tools}{os.pathsep}{path_after_tools}",
        "LANG": "C.UTF-8",
        "HOME": "/root",
        "CHARM_DIR": str(charm_dir),
        "JUJU_CHARM_DIR": str(charm_dir),
        "JUJU_CONTEXT_ID": f"{unit}-{hook}-1",
        "JUJU_DISPATCH_PATH": f"hooks/{hook}",
        "JUJU_HOOK_NAME": hook,
        "JUJU_MODEL_NAME": "packed",
        "JUJU_MODEL_UUID": model["model_uuid"],
        "JUJU_UNIT_NAME": unit,
        "JUJU_MACHINE_ID": "0",
        "JUJU_PRINCIPAL_UNIT": "",
        "JUJU_VERSION": juju_version,
        "JUJU_AVAILABILITY_ZONE": "",
    }
    if relation_id is not None:
        relation = model["relations"][str(relation_id)]
        environment |= {
            "JUJU_RELATION": relation["endpoint"],
            "JUJU_RELATION_ID": f"{relation['endpoint']}:{relation_id}",
            "JUJU_REMOTE_APP": relation["app"],
        }
        if remote_unit is not None:
            environment["JUJU_REMOTE_UNIT"] = remote_unit
    return environment
