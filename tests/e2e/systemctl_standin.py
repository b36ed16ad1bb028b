"""A stand-in for `systemctl` that really runs a unit's ExecStart, for machines without systemd.

Used by the demo on a real GARM (`machine.py`); the e2e suites use a real systemd.

It is not a mock of the charm: it reads the unit file the charm rendered under a test root and
does what systemd would do with the lines that matter to a test (ExecStart, Environment,
EnvironmentFile, WorkingDirectory), starting the program as a detached process whose output
goes to a per-unit "journal" file. User=, Group= and the sandboxing lines are recorded but not
enforced: the tests run as whoever runs them.

Invoked as `systemctl_standin.py --root ROOT --state DIR [systemctl arguments...]`; the test
puts a `systemctl` wrapper first on PATH that adds the first four arguments. Every call is
appended to `DIR/calls` (tab-separated) so tests can count restarts.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# What systemd gives a system service before the unit's own Environment lines.
BASE_ENVIRONMENT = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
STOP_TIMEOUT_SECONDS = 10.0
# systemctl's exit status for "unit not active" (is-active) and "no such unit".
NOT_ACTIVE = 3
NO_SUCH_UNIT = 5
FAILED = 1


def main(argv: list[str]) -> int:
    """Run one systemctl command line."""
    if len(argv) < 4 or argv[0] != "--root" or argv[2] != "--state":
        print("usage: systemctl_standin.py --root ROOT --state DIR ARGS...", file=sys.stderr)
        return 2
    standin = Standin(Path(argv[1]), Path(argv[3]))
    args = argv[4:]
    standin.record(args)
    flags = {arg for arg in args if arg.startswith("-")}
    words = [arg for arg in args if not arg.startswith("-")]
    if not words:
        return 0
    verb, units = words[0], [unit_name(word) for word in words[1:]]
    return standin.run(verb, units, now="--now" in flags, quiet="--quiet" in flags)


def unit_name(word: str) -> str:
    """`garm` -> `garm.service`; names with a type suffix stay as they are."""
    return word if "." in word else f"{word}.service"


class Standin:
    """The stand-in's state: one JSON file per unit, one journal file per unit."""

    def __init__(self, root: Path, state: Path) -> None:
        self.root = root
        self.state = state
        (state / "units").mkdir(parents=True, exist_ok=True)
        (state / "journal").mkdir(parents=True, exist_ok=True)

    def record(self, args: list[str]) -> None:
        """Append one call to the call log."""
        with (self.state / "calls").open("a") as log:
            log.write("\t".join(args) + "\n")

    def run(self, verb: str, units: list[str], *, now: bool, quiet: bool) -> int:
        """Do what systemctl does for `verb` on each unit; return the exit status."""
        status = 0
        for unit in units:
            status = max(status, self.one(verb, unit, now=now, quiet=quiet))
        return status

    def one(self, verb: str, unit: str, *, now: bool, quiet: bool) -> int:
        """One verb on one unit."""
        actions = {"start": self.start, "restart": self.restart, "stop": self.stop}
        if verb in actions:
            return actions[verb](unit)
        if verb in ("enable", "disable"):
            self.update(unit, enabled=verb == "enable")
            if now:
                return self.start(unit) if verb == "enable" else self.stop(unit)
            return 0
        return self.query(verb, unit, quiet=quiet)

    def query(self, verb: str, unit: str, *, quiet: bool) -> int:
        """is-active, is-failed, is-enabled; anything else (daemon-reload, mask) does nothing."""
        if verb == "is-active":
            active = self.alive(unit)
            if not quiet:
                print("active" if active else self.load(unit).get("result", "inactive"))
            return 0 if active else NOT_ACTIVE
        if verb == "is-failed":
            return 0 if self.load(unit).get("result") == "failed" else FAILED
        if verb == "is-enabled":
            enabled = bool(self.load(unit).get("enabled"))
            if not quiet:
                print("enabled" if enabled else "disabled")
            return 0 if enabled else FAILED
        return 0

    # Running a service ------------------------------------------------------------------

    def start(self, unit: str) -> int:
        """Start the unit's ExecStart unless it already runs."""
        if self.alive(unit):
            return 0
        if not unit.endswith(".service"):
            self.update(unit, result="active")  # timers and the like: remembered, not run
            return 0
        try:
            service = read_service(self.unit_file(unit))
            process = self.spawn(unit, service)
        except (OSError, ValueError) as error:
            self.update(unit, pid=None, result="failed")
            print(f"Job for {unit} failed: {error}", file=sys.stderr)
            return FAILED
        self.update(unit, pid=process.pid, started=process_start_time(process.pid), result="")
        return 0

    def spawn(self, unit: str, service: dict[str, Any]) -> subprocess.Popen[bytes]:
        """Run ExecStart detached, its output appended to the unit's journal."""
        environment = dict(BASE_ENVIRONMENT)
        for path, optional in service["environment_files"]:
            file = Path(path)
            if optional and not file.exists():
                continue
            environment.update(read_environment_file(file))
        environment.update(service["environment"])
        with (self.state / "journal" / f"{unit}.log").open("ab") as journal:
            return subprocess.Popen(  # the unit's own command line, never a shell
                service["exec_start"],
                env=environment,
                cwd=service["working_directory"] or "/",
                stdin=subprocess.DEVNULL,
                stdout=journal,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self, unit: str) -> int:
        """SIGTERM the unit's process group, SIGKILL after the stop timeout."""
        pid = self.load(unit).get("pid")
        if pid and self.alive(unit):
            terminate(pid)
        self.update(unit, pid=None, result="inactive")
        return 0

    def restart(self, unit: str) -> int:
        """Stop, then start."""
        self.stop(unit)
        return self.start(unit)

    def alive(self, unit: str) -> bool:
        """Whether the process started for the unit still runs (not a zombie, not reused)."""
        state = self.load(unit)
        if not unit.endswith(".service"):
            return state.get("result") == "active"
        pid = state.get("pid")
        return bool(pid) and process_start_time(pid) == state.get("started")

    # State ------------------------------------------------------------------------------

    def unit_file(self, unit: str) -> Path:
        """Where the charm put the unit under the test root."""
        return self.root / "etc" / "systemd" / "system" / unit

    def load(self, unit: str) -> dict[str, Any]:
        """The unit's recorded state."""
        path = self.state / "units" / f"{unit}.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def update(self, unit: str, **changes: Any) -> None:
        """Merge `changes` into the unit's recorded state."""
        path = self.state / "units" / f"{unit}.json"
        path.write_text(json.dumps(self.load(unit) | changes))


def read_service(path: Path) -> dict[str, Any]:
    """The [Service] lines a stand-in honours, from a unit file.

    Raises:
        OSError: the unit file cannot be read.
        ValueError: it has no ExecStart.
    """
    service: dict[str, Any] = {
        "exec_start": [],
        "environment": {},
        "environment_files": [],
        "working_directory": "",
    }
    section = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        if section != "Service" or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        apply_service_line(service, key, value)
    if not service["exec_start"]:
        raise ValueError(f"{path.name} has no ExecStart")
    return service


def apply_service_line(service: dict[str, Any], key: str, value: str) -> None:
    """Fold one `key=value` line of [Service] into `service`."""
    if key == "ExecStart":
        service["exec_start"] = shlex.split(value.lstrip("-@+!:"))
    elif key == "Environment":
        for assignment in shlex.split(value):
            name, _, content = assignment.partition("=")
            service["environment"][name] = content
    elif key == "EnvironmentFile":
        service["environment_files"].append((value.lstrip("-"), value.startswith("-")))
    elif key == "WorkingDirectory":
        service["working_directory"] = value.lstrip("-")


def read_environment_file(path: Path) -> dict[str, str]:
    """`KEY=VALUE` lines as systemd reads them: comments skipped, one level of quotes removed."""
    variables: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        name, value = (part.strip() for part in line.split("=", 1))
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            quote = value[0]
            value = value[1:-1]
            if quote == '"':
                value = value.replace('\\"', '"').replace("\\\\", "\\")
        variables[name] = value
    return variables


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks, or None when it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] == "Z":
        return None
    return fields[19]


def terminate(pid: int) -> None:
    """SIGTERM the process group; SIGKILL it if it outlives the stop timeout."""
    started = process_start_time(pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if process_start_time(pid) != started:
                return
            time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
