"""Packing the charms: which platforms each declares, the runtime's Python, one pack each.

Callable from any interpreter: each pack runs `packed_charm.charmcraft_pack` in a fresh
process of `charmcraft_python` (an interpreter with charmcraft 4.5 and Debian's python3-apt,
as `tox -e pack` builds one), because charmcraft keeps global state per process.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

TESTS = Path(__file__).resolve().parents[1]
REPOSITORY = TESTS.parent
CHARMS = (REPOSITORY / "charms" / "garm", REPOSITORY / "charms" / "garm-configurator")
# ubuntu@24.04's Python, which the packed venv is built for and dispatch runs.
RUNTIME_PYTHON = "python3.12"
PACK_TIMEOUT_SECONDS = 15 * 60
HOST_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64"}


def host_platform() -> str:
    """This machine's architecture as a charm platform (amd64, arm64)."""
    machine = os.uname().machine
    return HOST_ARCHITECTURES.get(machine, machine)


def declared_platforms(charm_dir: Path) -> list[str]:
    """The platforms charmcraft.yaml declares, in its order (e.g. amd64, arm64)."""
    project = yaml.safe_load((charm_dir / "charmcraft.yaml").read_text())
    return list(project["platforms"])


def charm_name(charm_dir: Path) -> str:
    """The charm's name, as charmcraft names its artifact (<name>_<platform>.charm)."""
    return yaml.safe_load((charm_dir / "charmcraft.yaml").read_text())["name"]


def runtime_python() -> str | None:
    """A Python 3.12 that runs, or None: on PATH, else under pyenv.

    pyenv's shims answer only where a version is selected, so its versions are asked directly.
    """
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates = [RUNTIME_PYTHON, *sorted(glob.glob(f"{root}/versions/3.12*/bin/python3.12"))]
    for candidate in candidates:
        try:
            answer = subprocess.run(
                [candidate, "-c", "import sys; print(sys.executable)"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except OSError:
            continue
        if answer.returncode == 0:
            return answer.stdout.strip()
    return None


def pack_charm(
    charm_dir: Path,
    output: Path,
    *,
    platform: str,
    python: str,
    charmcraft_python: str = sys.executable,
) -> Path:
    """Pack `charm_dir` for `platform` with its venv built for `python`; the .charm's path.

    Args:
        charm_dir: a charm directory (holding charmcraft.yaml and uv.lock).
        output: where the .charm goes (created when missing).
        platform: one of `declared_platforms(charm_dir)`.
        python: the runtime's interpreter (a path; see `runtime_python`).
        charmcraft_python: an interpreter that imports charmcraft and apt.
    """
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(TESTS), *filter(None, [environment.get("PYTHONPATH")])]
    )
    command = [
        charmcraft_python,
        "-m",
        "packed_charm.charmcraft_pack",
        str(charm_dir),
        f"--platform={platform}",
        f"--python={python}",
        f"--output={output}",
    ]
    done = subprocess.run(
        command,
        env=environment,
        capture_output=True,
        text=True,
        timeout=PACK_TIMEOUT_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
        raise RuntimeError(f"packing {charm_dir.name} for {platform} failed:\n{tail}")
    return Path(done.stdout.strip().splitlines()[-1])


def pack_all(
    output: Path,
    *,
    python: str,
    charm_dirs: Sequence[Path] = CHARMS,
    platforms: Sequence[str] | None = None,
    charmcraft_python: str = sys.executable,
) -> list[Path]:
    """Pack each charm for each platform it declares (or only `platforms`); the .charm files."""
    packed: list[Path] = []
    for charm_dir in charm_dirs:
        for platform in declared_platforms(charm_dir):
            if platforms is None or platform in platforms:
                packed.append(
                    pack_charm(
                        charm_dir,
                        output,
                        platform=platform,
                        python=python,
                        charmcraft_python=charmcraft_python,
                    )
                )
    return packed
