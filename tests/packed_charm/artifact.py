"""What a packed charm must hold, checked against the charm directory it was packed from.

`problems(charm_file, charm_dir, platform)` lists every difference from what charmcraft's `uv`
plugin and packing step make of that directory (empty when the artifact is right):

- exactly the top-level entries charmcraft writes: `dispatch`, `src/`, `lib/`, `venv/` and the
  generated `manifest.yaml`, `metadata.yaml`, and `config.yaml`, `actions.yaml` when
  charmcraft.yaml has those sections;
- `dispatch` executable, starting `src/charm.py` with the venv's Python and `lib`, `src` on
  PYTHONPATH (charmcraft's own template);
- `src/` and `lib/` byte for byte the charm directory's (alert rules and dashboards included);
- `venv/` built for the runtime's Python (3.12) from uv.lock alone: every locked runtime
  dependency at its locked version, nothing else, and every native extension built for the
  platform's architecture;
- `manifest.yaml` naming ubuntu 24.04 and the platform; `metadata.yaml`, `config.yaml` and
  `actions.yaml` saying what charmcraft.yaml says.
"""

from __future__ import annotations

import re
import stat
import tomllib
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from packaging.markers import Marker
from packaging.utils import canonicalize_name

RUNTIME = "3.12"
TOP_LEVEL = {"dispatch", "lib", "manifest.yaml", "metadata.yaml", "src", "venv"}
# Written only when charmcraft.yaml has the section, as charmcraft does.
OPTIONAL_TOP_LEVEL = {"config": "config.yaml", "actions": "actions.yaml"}
# ELF e_machine per Debian architecture, and the marker environment of each on ubuntu@24.04.
ELF_MACHINES = {"amd64": 62, "arm64": 183}
MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}
# What the uv plugin leaves in venv/ besides site-packages (charmcraft's venv clean-up keeps
# bin/activate; uv writes these).
VENV_FILES = {"venv/.gitignore", "venv/.lock", "venv/CACHEDIR.TAG", "venv/pyvenv.cfg"}
DIST_INFO = re.compile(r"^venv/lib/python[\d.]+/site-packages/([^/]+)-([^-/]+)\.dist-info/$")
NOT_PACKED = ("__pycache__",)
# metadata.yaml keys that say what charmcraft.yaml says.
METADATA_KEYS = ("name", "summary", "assumes", "requires", "provides", "peers", "resources")


def problems(charm_file: Path, charm_dir: Path, platform: str) -> list[str]:
    """Everything wrong with `charm_file` as the `platform` build of `charm_dir`."""
    with zipfile.ZipFile(charm_file) as archive:
        found: list[str] = []
        found += _top_level(archive, charm_dir)
        found += _dispatch(archive)
        for tree in ("src", "lib"):
            found += _same_tree(archive, charm_dir, tree)
        found += _venv(archive, charm_dir, platform)
        found += _generated(archive, charm_dir, platform)
    return found


def _top_level(archive: zipfile.ZipFile, charm_dir: Path) -> list[str]:
    project = yaml.safe_load((charm_dir / "charmcraft.yaml").read_text())
    expected = TOP_LEVEL | {name for key, name in OPTIONAL_TOP_LEVEL.items() if project.get(key)}
    names = {name.split("/", 1)[0] for name in archive.namelist()}
    extra, missing = sorted(names - expected), sorted(expected - names)
    return [f"unexpected top-level entry {name}" for name in extra] + [
        f"missing {name}" for name in missing
    ]


def _dispatch(archive: zipfile.ZipFile) -> list[str]:
    try:
        info = archive.getinfo("dispatch")
    except KeyError:
        return []  # reported as missing
    script = archive.read(info).decode()
    found: list[str] = []
    if not (info.external_attr >> 16) & stat.S_IXUSR:
        found.append("dispatch is not executable")
    expected = {
        "a POSIX shell script": script.startswith("#!/bin/sh\n"),
        "the venv's python": 'python_path="${venv_bin_path}/python"' in script,
        "lib and src on PYTHONPATH": (
            'PYTHONPATH="${dispatch_path}/lib:${dispatch_path}/src"' in script
        ),
        "src/charm.py started": 'exec "${python_path}" "${dispatch_path}/src/charm.py"' in script,
    }
    found += [f"dispatch is not {what}" for what, holds in expected.items() if not holds]
    return found


def _same_tree(archive: zipfile.ZipFile, charm_dir: Path, tree: str) -> list[str]:
    source = {
        path.relative_to(charm_dir).as_posix(): path.read_bytes()
        for path in _files(charm_dir / tree)
    }
    packed = {
        name: archive.read(name)
        for name in archive.namelist()
        if name.startswith(f"{tree}/") and not name.endswith("/")
    }
    found = [f"{name} is not packed" for name in sorted(source.keys() - packed.keys())]
    found += [f"{name} is packed but not in the charm" for name in sorted(packed.keys() - source)]
    found += [
        f"{name} differs from the charm's"
        for name in sorted(source.keys() & packed.keys())
        if source[name] != packed[name]
    ]
    return found


def _files(directory: Path) -> Iterator[Path]:
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not any(part in NOT_PACKED for part in path.parts):
            yield path


def _venv(archive: zipfile.ZipFile, charm_dir: Path, platform: str) -> list[str]:
    names = [name for name in archive.namelist() if name.startswith("venv/")]
    found: list[str] = []
    pythons = {PurePosixPath(name).parts[2] for name in names if name.startswith("venv/lib/")}
    if pythons != {f"python{RUNTIME}"}:
        found.append(f"venv is built for {sorted(pythons)}, not python{RUNTIME}")
    installed = {
        str(canonicalize_name(match.group(1))): match.group(2)
        for name in _directories(names)
        if (match := DIST_INFO.match(name))
    }
    locked = locked_runtime_packages(charm_dir / "uv.lock", platform)
    for name in sorted(locked.keys() - installed.keys()):
        found.append(f"venv lacks {name} {locked[name]} (uv.lock)")
    for name in sorted(installed.keys() - locked.keys()):
        found.append(f"venv has {name} {installed[name]}, which uv.lock does not lock")
    for name in sorted(locked.keys() & installed.keys()):
        if installed[name] != locked[name]:
            found.append(f"venv has {name} {installed[name]}, uv.lock locks {locked[name]}")
    found += _native_extensions(archive, names, platform)
    stray = [
        name
        for name in names
        if not name.startswith("venv/lib/")
        and name not in VENV_FILES
        and name not in {"venv/bin/activate", "venv/bin/"}
        and not name.endswith("/")
    ]
    found += [f"venv holds {name}, which the uv plugin does not leave" for name in stray]
    return found


def _directories(names: Iterable[str]) -> set[str]:
    """Every directory the archive's names imply (zip files may omit directory entries)."""
    directories: set[str] = set()
    for name in names:
        parts = name.split("/")[:-1]
        directories.update("/".join(parts[: index + 1]) + "/" for index in range(len(parts)))
    return directories


def _native_extensions(archive: zipfile.ZipFile, names: list[str], platform: str) -> list[str]:
    expected = ELF_MACHINES[platform]
    found: list[str] = []
    shared = [name for name in names if name.endswith(".so") or ".so." in name]
    if not shared:
        return found
    for name in shared:
        header = archive.read(name)[:20]
        machine = int.from_bytes(header[18:20], "little")
        if header[:4] != b"\x7fELF" or machine != expected:
            found.append(f"{name} is not an ELF object for {platform} (e_machine {machine})")
    return found


def locked_runtime_packages(lock_file: Path, platform: str) -> dict[str, str]:
    """The packages `uv sync --no-dev` installs from `lock_file` on ubuntu@24.04, by version.

    The closure of the project's own dependencies (the `virtual` package), with each
    dependency's marker evaluated for CPython 3.12 on Linux on `platform`.
    """
    lock = tomllib.loads(lock_file.read_text())
    packages: dict[str, Any] = {
        str(canonicalize_name(package["name"])): package for package in lock["package"]
    }
    (project,) = [p for p in packages.values() if p.get("source", {}).get("virtual") == "."]
    environment = _marker_environment(platform)
    wanted: dict[str, str] = {}
    pending = list(_dependencies(project, environment))
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        package = packages[name]
        wanted[name] = package["version"]
        pending.extend(_dependencies(package, environment))
    return wanted


def _dependencies(package: Mapping[str, Any], environment: dict[str, str]) -> Iterator[str]:
    for dependency in package.get("dependencies", []):
        marker = dependency.get("marker")
        if marker is None or Marker(marker).evaluate(environment):
            yield str(canonicalize_name(dependency["name"]))


def _marker_environment(platform: str) -> dict[str, str]:
    return {
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "python_version": RUNTIME,
        "python_full_version": f"{RUNTIME}.3",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": MACHINES[platform],
    }


def _generated(archive: zipfile.ZipFile, charm_dir: Path, platform: str) -> list[str]:
    project = yaml.safe_load((charm_dir / "charmcraft.yaml").read_text())
    found: list[str] = []
    manifest = _yaml(archive, "manifest.yaml")
    bases = [{"name": "ubuntu", "channel": "24.04", "architectures": [platform]}]
    if manifest.get("bases") != bases:
        found.append(f"manifest.yaml bases are {manifest.get('bases')}, not {bases}")
    metadata = _yaml(archive, "metadata.yaml")
    for key in METADATA_KEYS:
        if metadata.get(key) != project.get(key):
            found.append(f"metadata.yaml {key} differs from charmcraft.yaml's")
    if _yaml(archive, "config.yaml") != project.get("config", {}):
        found.append("config.yaml differs from charmcraft.yaml's config")
    if _yaml(archive, "actions.yaml") != project.get("actions", {}):
        found.append("actions.yaml differs from charmcraft.yaml's actions")
    return found


def _yaml(archive: zipfile.ZipFile, name: str) -> dict[str, Any]:
    try:
        return yaml.safe_load(archive.read(name)) or {}
    except KeyError:
        return {}  # reported as missing
