"""Run charmlint (it needs Python 3.12 or newer) on each charm directory given.

The lint environment runs on Python 3.11, so charmlint runs through `uv tool run` with the
first working Python 3.12+ found: on PATH, else under pyenv (whose shims only answer for the
selected version).
"""

import glob
import os
import pathlib
import shutil
import subprocess
import sys

CHARMLINT = "charmlint==0.3.0"
CANDIDATES = ("python3.14", "python3.13", "python3.12")


def main(charm_dirs: list[str]) -> int:
    """Lint every charm with warnings as failures; return non-zero when any fails."""
    python = find_python()
    if python is None:
        print("run_charmlint: no Python 3.12 or newer found; charmlint needs one")
        return 1
    uv = shutil.which("uv") or "uv"
    failures = 0
    for charm_dir in charm_dirs:
        command = [uv, "tool", "run", "--python", python, "--from", CHARMLINT]
        command += ["charmlint", "--strict", "--no-colour", charm_dir]
        result = subprocess.run(command, check=False, env={**os.environ, "NO_COLOR": "1"})
        failures += result.returncode != 0
    return 1 if failures else 0


def find_python() -> str | None:
    """The path of a Python 3.12+ that runs, or None."""
    pyenv_root = os.environ.get("PYENV_ROOT", str(pathlib.Path.home() / ".pyenv"))
    found = [shutil.which(name) for name in CANDIDATES]
    for name in CANDIDATES:
        found += sorted(glob.glob(f"{pyenv_root}/versions/{name[6:]}*/bin/{name}"), reverse=True)
    for candidate in filter(None, found):
        probe = subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False)
        if probe.returncode == 0:
            return candidate
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
