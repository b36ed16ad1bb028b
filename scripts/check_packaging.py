"""Check the charms' packaging conventions (run by `tox -e lint`).

Each charm directory must have a README.md (its Charmhub page), an icon.svg, the repository's
LICENSE, a Terraform module (main.tf, variables.tf, outputs.tf, versions.tf), `assumes` naming
the Juju version user secrets need, and `[project] dependencies` in pyproject.toml equal to its
requirements.txt (charmcraft's uv plugin packs from uv.lock, tox installs requirements.txt).
"""

import pathlib
import sys
import tomllib

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHARMS = ("garm", "garm-configurator")
FILES = ("README.md", "icon.svg", "LICENSE", "uv.lock", "pyproject.toml", "requirements.txt")
TERRAFORM = ("main.tf", "variables.tf", "outputs.tf", "versions.tf")
ASSUMES = "juju >= 3.3"


def main() -> int:
    """Print every problem; fail when there is one."""
    problems = [problem for charm in CHARMS for problem in charm_problems(ROOT / "charms" / charm)]
    for problem in problems:
        print(problem)
    print(f"check_packaging: {len(problems)} problem(s)")
    return 1 if problems else 0


def charm_problems(charm: pathlib.Path) -> list[str]:
    """What the charm directory lacks or gets wrong."""
    name = charm.relative_to(ROOT).as_posix()
    problems = [f"{name}: {file} is missing" for file in FILES if not (charm / file).is_file()]
    problems += [
        f"{name}: terraform/{file} is missing"
        for file in TERRAFORM
        if not (charm / "terraform" / file).is_file()
    ]
    if problems:
        return problems
    if (charm / "LICENSE").read_bytes() != (ROOT / "LICENSE").read_bytes():
        problems.append(f"{name}: LICENSE differs from the repository's")
    project = yaml.safe_load((charm / "charmcraft.yaml").read_text())
    if ASSUMES not in (project.get("assumes") or []):
        problems.append(f"{name}: charmcraft.yaml must assume '{ASSUMES}' (user secrets)")
    if project.get("parts", {}).get("charm", {}).get("plugin") != "uv":
        problems.append(f"{name}: the charm part must use the uv plugin")
    declared = tomllib.loads((charm / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = [
        line.strip()
        for line in (charm / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if sorted(declared) != sorted(pinned):
        problems.append(
            f"{name}: pyproject.toml [project] dependencies differ from requirements.txt: "
            f"only in pyproject {sorted(set(declared) - set(pinned))}, "
            f"only in requirements {sorted(set(pinned) - set(declared))}"
        )
    return problems


if __name__ == "__main__":
    sys.exit(main())
