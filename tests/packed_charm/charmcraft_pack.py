"""`charmcraft pack --destructive-mode`, charmcraft 4.5's own code, on a host it refuses.

Run with an interpreter that has charmcraft and Debian's `python3-apt` (`tox -e pack`: the
system Python with its site packages), one process per pack (charmcraft keeps global state):
`python -m packed_charm.charmcraft_pack --platform amd64 --python /path/to/python3.12
--output DIR CHARM_DIR`; `packed_charm.pack.pack_charm` runs it so.

Everything is charmcraft's: its project model, its build plan, craft-parts' lifecycle with
charmcraft's `uv` plugin (uv venv, uv sync from uv.lock alone, src/ and lib/ copied, the venv
cleaned), its dispatch script, its metadata, config, actions and manifest files and its zip.
What differs from a managed build on Ubuntu 24.04 is patched here, each for a stated reason:

1. charmcraft refuses a destructive build whose base is not the host's ("Ubuntu 24.04 builds
   cannot be performed on this Debian 12 system"): that check is skipped, and what it protects
   is supplied instead: `python3` on the build's PATH is the runtime's Python (3.12, as on
   ubuntu@24.04), so the venv is built for it.
2. `build-snaps: [astral-uv]` needs snapd, which a container or CI machine lacks: instead the
   command the snap provides (`uv`) must be on PATH (tox installs uv from PyPI, pinned).
3. Only for a platform that is not the host's (arm64 on an amd64 machine): the build plan
   takes the target's architecture as the host's, and `uv sync` gets `--python-platform`
   (`aarch64-manylinux_2_39`, the glibc of ubuntu@24.04) so it installs the target's wheels;
   a native build (`ubuntu-24.04-arm` in the hosted workflow) runs without this patch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from packed_charm.pack import host_platform

# The command each build snap the charms name provides, which must be on PATH instead.
SNAP_COMMANDS = {"astral-uv": "uv"}
# uv's target for ubuntu@24.04 (glibc 2.39) per Debian architecture, for foreign builds.
PYTHON_PLATFORMS = {"amd64": "x86_64-manylinux_2_39", "arm64": "aarch64-manylinux_2_39"}
# What a copy of the charm directory leaves behind: earlier builds and local environments.
NOT_COPIED = ("parts", "stage", "prime", "overlay", "*.charm", ".venv", ".tox", "__pycache__")
NOT_COPIED_TOP = ("mutants",)


def main(argv: Sequence[str]) -> int:
    """Pack one charm for one platform into the output directory."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("charm_dir", type=Path)
    parser.add_argument("--platform", required=True, help="a platform charmcraft.yaml declares")
    parser.add_argument("--python", default="python3.12", help="the runtime's Python")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    packed = pack(args.charm_dir, args.output, platform=args.platform, python=args.python)
    print(packed)
    return 0


def pack(charm_dir: Path, output: Path, *, platform: str, python: str) -> Path:
    """Pack a copy of `charm_dir` for `platform`; return the .charm, moved into `output`."""
    interpreter = real_interpreter(python)
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="charmcraft-pack-") as work:
        project = copy_project(charm_dir.resolve(), Path(work) / charm_dir.resolve().name)
        shims = Path(work) / "runtime-python"
        shims.mkdir()
        (shims / "python3").symlink_to(interpreter)
        os.environ["PATH"] = f"{shims}{os.pathsep}{os.environ['PATH']}"
        os.chdir(project)
        patch_for_this_host(platform)
        status = run_charmcraft(["pack", "--destructive-mode", "--platform", platform])
        if status != 0:
            raise SystemExit(f"charmcraft pack exited {status}")
        (built,) = project.glob(f"*_{platform}.charm")
        destination = output / built.name
        shutil.move(built, destination)
    return destination


def real_interpreter(python: str) -> str:
    """The executable behind `python` (a pyenv shim answers only where a version is set)."""
    try:
        answer = subprocess.run(
            [python, "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        message = f"{python} does not run: the charm's venv is built for the runtime's Python"
        raise SystemExit(message) from error
    return answer.stdout.strip()


def copy_project(source: Path, destination: Path) -> Path:
    """The charm directory without build residue (destructive mode builds inside it)."""

    def ignored(directory: str, names: list[str]) -> set[str]:
        skipped = set(shutil.ignore_patterns(*NOT_COPIED)(directory, names))
        if Path(directory) == source:
            skipped |= set(NOT_COPIED_TOP) & set(names)
        return skipped

    shutil.copytree(source, destination, ignore=ignored, symlinks=True)
    return destination


def patch_for_this_host(target: str) -> None:
    """Apply the patches the module docstring lists, and only those."""
    from craft_application.services import lifecycle  # noqa: PLC0415 (the pack env only)
    from craft_parts.executor import executor  # noqa: PLC0415

    lifecycle.LifecycleService._validate_build_plan = _host_base_not_checked  # type: ignore[method-assign]
    executor.Executor._install_build_snaps = _snap_commands_on_path  # type: ignore[method-assign]
    if target != host_platform():
        _build_foreign(target)


def _host_base_not_checked(self: Any) -> None:
    """The check skipped (1): the runtime's Python stands in for the base's (see `pack`)."""
    del self


def _snap_commands_on_path(self: Any) -> None:
    """Build snaps (2): each snap's command must be on PATH; nothing is installed."""
    snaps: set[str] = set(self._extra_build_snaps or ())
    for handler in self._handler.values():
        snaps.update(handler.build_snaps)
    for snap in sorted(snaps):
        command = SNAP_COMMANDS.get(snap)
        if command is None or shutil.which(command) is None:
            raise SystemExit(f"build snap {snap}: put its command ({command}) on PATH")


def _build_foreign(target: str) -> None:
    """A foreign platform (3): its architecture as the build plan's host; uv's wheels for it."""
    import craft_platforms  # noqa: PLC0415 (the pack env only)
    from charmcraft.parts import plugins  # noqa: PLC0415

    architecture = craft_platforms.DebianArchitecture(target)
    craft_platforms.DebianArchitecture.from_host = classmethod(lambda cls: architecture)  # type: ignore[method-assign,assignment]
    original: Callable[[Any], list[str]] = plugins.UvPlugin._get_package_install_commands

    def with_target_wheels(self: Any) -> list[str]:
        commands = original(self)
        flag = f" --python-platform {PYTHON_PLATFORMS[target]}"
        return [f"{c}{flag}" if c.startswith("uv sync") else c for c in commands]

    plugins.UvPlugin._get_package_install_commands = with_target_wheels  # type: ignore[method-assign]


def run_charmcraft(arguments: Sequence[str]) -> int:
    """Charmcraft's own entry point, as the `charmcraft` command runs it."""
    from charmcraft.application.main import main as charmcraft_main  # noqa: PLC0415

    sys.argv = ["charmcraft", *arguments]
    return charmcraft_main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
