"""The fresh-machine leg of CI: what a new contributor's `tox` meets on a fresh clone, checked.

`.ci/run` runs the suites with every real part (GARM binaries, the OpenStack provider,
PostgreSQL, promtool) and `CI=true`, where a case that cannot run fails. A fresh clone has none
of them and no `CI`: there those cases must skip, saying what is missing, and nothing may error.
This script makes that machine and checks it:

1. clones this checkout's HEAD into an empty temporary directory (nothing beside it, so no
   `shared/garm/bin/` where the tests look by default);
2. runs `tox -e fresh-clone` there (the suites whose cases need real parts, as `tox -e unit`
   runs them) with an environment that has none: `CI` and every variable pointing at a real
   part removed, PostgreSQL's binary directory (`POSTGRESQL_BIN_DIR`) an empty directory, and
   every directory holding `promtool` left off PATH;
3. reads the suites' JUnit reports and fails unless: no case errored or failed; every skip
   gives a reason, and that reason is one of the real parts below (a new kind of skip must be
   added here and to the README's developer quick start); each real part that masks no other
   was reported missing at least once (else the clone found it and was not fresh); every
   variable a reason names is passed through by tox's `unit` environment.

Usage: `python3 scripts/check_fresh_clone.py [--keep] [-- tox arguments]`, from a checkout.
Only committed work is cloned.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from xml.etree import ElementTree

REPOSITORY = Path(__file__).resolve().parents[1]
TOX_ENV = "fresh-clone"
# The environment the fresh clone's tox checks its skip reasons against: what `tox` runs.
UNIT_ENV = "unit"
# What a developer or CI may have set that points the tests at a real part.
REAL_PART_VARIABLES = (
    "CI",
    "GARM_BIN",
    "GARM_BIN_DIR",
    "GARM_BIN_NEWER",
    "GARM_BIN_V021",
    "GARM_PROVIDER_OPENSTACK_BIN",
    "GITHUB_OPENAPI_DIR",
    "OPENSTACK_SCHEMAS_PYTHON",
    "POSTGRESQL_BIN_DIR",
)
# Programs whose directories are left off PATH: promtool, and PostgreSQL's if on PATH.
HIDDEN_PROGRAMS = ("promtool", "initdb", "pg_ctl")
TIMEOUT_SECONDS = 20 * 60


@dataclasses.dataclass(frozen=True)
class RealPart:
    """A part a fresh machine lacks, and how the skip reason for it reads.

    `masked` parts are only asked for once another is there (the PostgreSQL case needs the
    newer GARM first), so a fresh clone need not report them.
    """

    name: str
    reason: re.Pattern[str]
    masked: bool = False


REAL_PARTS = (
    RealPart("GARM v0.2.1 binary", re.compile(r"needs a GARM v0\.2\.1 server binary")),
    RealPart("newer GARM binary", re.compile(r"needs a GARM newer server binary")),
    RealPart("garm-provider-openstack binary", re.compile(r"the real provider needs")),
    RealPart("promtool", re.compile(r"^promtool not found")),
    RealPart("GitHub's OpenAPI description", re.compile(r"^GitHub's OpenAPI description")),
    # Asked for only by cases that have the real provider already.
    RealPart(
        "the OpenStack schemas venv",
        re.compile(r"^the fake OpenStack checks requests with Nova's"),
        masked=True,
    ),
    RealPart(
        "PostgreSQL server binaries",
        re.compile(r"^no PostgreSQL server binaries"),
        masked=True,
    ),
)
# An environment variable as reasons name them: GARM_BIN_V021=/path/to/garm, (or GARM_BIN).
VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")


@dataclasses.dataclass
class Outcome:
    """What the fresh clone's suites did."""

    cases: int = 0
    problems: list[str] = dataclasses.field(default_factory=list[str])
    skips: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter[str])


def main(argv: Sequence[str]) -> int:
    """Clone, run the fresh-clone suites without real parts, check what they reported."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep the clone afterwards")
    parser.add_argument("tox_args", nargs="*", help="more arguments for tox (after --)")
    args = parser.parse_args(argv)
    workspace = Path(tempfile.mkdtemp(prefix="garm-charms-fresh-"))
    try:
        clone = fresh_clone(REPOSITORY, workspace)
        environment = fresh_environment(os.environ, workspace / "no-postgresql")
        tox = [sys.executable, "-m", "tox"]
        run = subprocess.run(
            [*tox, "-e", TOX_ENV, *args.tox_args],
            cwd=clone,
            env=environment,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
        reports = sorted((clone / ".tox" / TOX_ENV / "tmp" / "junit").glob("*.xml"))
        outcome = read_reports(reports)
        passed = passed_variables(tox, clone, environment)
        problems = check(outcome, passed, tox_returncode=run.returncode)
        print(summary(outcome))
    finally:
        if args.keep:
            print(f"the fresh clone is kept in {workspace}")
        else:
            shutil.rmtree(workspace, ignore_errors=True)
    for problem in problems:
        print(f"fresh clone: {problem}", file=sys.stderr)
    return 1 if problems else 0


def fresh_clone(source: Path, workspace: Path) -> Path:
    """A clone of `source`'s HEAD alone in `workspace` (nothing beside it)."""
    clone = workspace / source.name
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(source), str(clone)],  # noqa: S607
        check=True,
        timeout=120,
    )
    return clone


def fresh_environment(environ: Mapping[str, str], empty: Path) -> dict[str, str]:
    """`environ` without CI or any real part; `empty` becomes PostgreSQL's (empty) directory."""
    fresh = {key: value for key, value in environ.items() if key not in REAL_PART_VARIABLES}
    empty.mkdir(parents=True, exist_ok=True)
    fresh["POSTGRESQL_BIN_DIR"] = str(empty)
    fresh["PATH"] = os.pathsep.join(path_without(environ.get("PATH", ""), HIDDEN_PROGRAMS))
    return fresh


def path_without(path: str, programs: Iterable[str]) -> list[str]:
    """The directories of `path` that hold none of `programs`."""
    names = tuple(programs)
    return [
        directory
        for directory in path.split(os.pathsep)
        if directory and not any((Path(directory) / name).exists() for name in names)
    ]


def read_reports(reports: Iterable[Path]) -> Outcome:
    """Every case of the JUnit reports: errors, failures and skips with their reasons."""
    outcome = Outcome()
    for report in reports:
        # The reports are our own pytest's, written a moment ago.
        for case in ElementTree.parse(report).iter("testcase"):  # noqa: S314
            outcome.cases += 1
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            for element in case:
                if element.tag in {"error", "failure"}:
                    message = (element.get("message") or "").splitlines()[:1]
                    outcome.problems.append(f"{element.tag}: {name}: {''.join(message)}")
                elif element.tag == "skipped":
                    outcome.skips[skip_reason(element.get("message") or "")] += 1
    return outcome


def skip_reason(message: str) -> str:
    """The reason as the case gave it (pytest's JUnit report prefixes `Skipped: `)."""
    return message.removeprefix("Skipped: ").strip()


def passed_variables(tox: Sequence[str], clone: Path, environment: Mapping[str, str]) -> set[str]:
    """The variables tox's unit environment passes through or sets, as `tox config` shows."""
    shown = subprocess.run(
        [*tox, "config", "-e", UNIT_ENV, "-k", "pass_env", "set_env"],
        cwd=clone,
        env=dict(environment),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return config_variables(shown)


def config_variables(shown: str) -> set[str]:
    """Variable names in `tox config` output: pass_env's lines and set_env's `NAME=` lines."""
    names: set[str] = set()
    for line in shown.splitlines():
        if not line.startswith("  "):
            continue
        entry = line.strip()
        names.add(entry.split("=", 1)[0].strip())
    return names


def check(outcome: Outcome, passed: set[str], *, tox_returncode: int) -> list[str]:
    """Everything wrong with what the fresh clone's suites reported."""
    problems = list(outcome.problems)
    if outcome.cases == 0:
        problems.append("no JUnit report, or no case in it")
    if tox_returncode != 0:
        # tox stops at the first failing suite, so the later ones reported nothing.
        problems.append(f"tox exited {tox_returncode}: a suite failed or could not start")
    seen: set[str] = set()
    for reason in outcome.skips:
        part = real_part(reason)
        if not reason:
            problems.append("a case skipped without a reason")
        elif part is None:
            problems.append(f"a skip that names no real part (add it to REAL_PARTS): {reason}")
        else:
            seen.add(part.name)
        missing = sorted(set(VARIABLE.findall(reason)) - passed)
        if missing:
            problems.append(f"tox does not pass {', '.join(missing)}, which a reason names")
    for part in REAL_PARTS:
        if tox_returncode == 0 and not part.masked and part.name not in seen:
            problems.append(f"no case reported the {part.name} missing: the clone found it")
    return problems


def real_part(reason: str) -> RealPart | None:
    """The real part a skip reason says is missing, if any."""
    return next((part for part in REAL_PARTS if part.reason.search(reason)), None)


def summary(outcome: Outcome) -> str:
    """How many cases ran, and each skip reason with its count."""
    skipped = sum(outcome.skips.values())
    lines = [f"fresh clone: {outcome.cases} cases, {skipped} skipped, by reason:"]
    lines += [f"  {count:4d}  {reason}" for reason, count in sorted(outcome.skips.items())]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
