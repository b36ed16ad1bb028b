"""The e2e machine under a real systemd: the charm's hooks run in the container, GARM by systemd.

A test keeps the charm's state (`ops.testing`) and drives it hook after hook, as on the
stand-in machine, but each hook runs inside the container (`hook_server.py`, through
`ContainerHooks`), with the charm's real `Workload` at its production paths: `useradd` adds
`garm` there, the unit files go to `/etc/systemd/system`, and `systemctl` is the container's.
GARM is started by that systemd from the unit the charm rendered, in its sandbox; so are the
reconcile tick's timer, the lease watchdog and the metrics exporter.

What Juju would do around the hooks is done by the test: it hands each hook the model's proxy
variables and the resources (copied into the container), and it dispatches `reconcile-tick`
when the tick's timer called `juju-exec`, which is a recorder here (`JUJU_EXEC_RECORDER`): it
prints how it was called to the tick service's journal, and the test runs the event named by
its `JUJU_DISPATCH_PATH`, as juju-exec's `dispatch` would.

The provider resource is the stand-in (`provider_standin.py`) with the contract suite's fake
provider inside it, run by the machine's `/usr/bin/python3` (GARM runs providers in its own
sandbox: no home directories, only `/var/lib/garm` writable, where the stand-in keeps its
instances).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from ops import testing

import charm
from e2e.container import Container
from e2e.hook_server import read, write
from e2e.machine import build_tarball, provider_environments, provider_instances, provider_script
from workload.exporter import EXPORTER_PORT, ExporterPaths
from workload.host import SERVICE_NAME, Paths
from workload.lease import LeaseFiles
from workload.tick import TICK_EVENT, TickPaths

REPOSITORY = Path(__file__).resolve().parents[2]
# Where the test puts what it hands the charm (resources) and collects coverage, in the container.
SHARE = PurePosixPath("/var/lib/garm-e2e")
COVERAGE_DIR = SHARE / "coverage"
# The stand-in provider's files: in GARM's data directory, the only one its sandbox may write.
PROVIDER_STATE = PurePosixPath("/var/lib/garm/e2e-provider-instances.json")
PROVIDER_ENVIRONMENT = PurePosixPath("/var/lib/garm/e2e-provider-environment.jsonl")
# The interpreter every Ubuntu machine has, outside any home directory GARM's sandbox hides.
MACHINE_PYTHON = "/usr/bin/python3"
JUJU_EXEC = "/usr/bin/juju-exec"
JUJU_EXEC_MARK = "juju-exec called: "
JUJU_EXEC_RECORDER = f"""\
#!/bin/sh
# The e2e container's juju-exec: it records how it was called, in the caller's journal, and the
# test dispatches the event named by JUJU_DISPATCH_PATH (tests/e2e/container_machine.py).
exec {MACHINE_PYTHON} -I -c \\
  'import json, sys; print("{JUJU_EXEC_MARK}" + json.dumps(sys.argv[1:]))' "$@"
"""
# What every container gets before it boots.
CONTAINER_FILES = {JUJU_EXEC: (JUJU_EXEC_RECORDER, 0o755)}
# systemd's messages: a unit started, a unit failed (sd-messages.h SD_MESSAGE_UNIT_STARTED,
# SD_MESSAGE_UNIT_FAILED; the second also when the failed service is restarted), ...
UNIT_STARTED = "39f53479d3a045ac8e11786248231fbf"
UNIT_FAILED = "d9b373ed55a64feb8242e02dbe79a49c"
# ... a unit's main process exited; systemd restarts a failed unit (SD_MESSAGE_UNIT_PROCESS_EXIT,
# SD_MESSAGE_UNIT_RESTART_SCHEDULED); the exit status of a failed cgroup step (EXIT_CGROUP).
UNIT_PROCESS_EXIT = "98e322203f7a4ed290d09fe03c09fe15"
UNIT_RESTART_SCHEDULED = "5eb03494b6584870a536b337290809b3"
CGROUP_STEP_FAILED = "219"
JOURNAL_TAIL_CHARACTERS = 3000
HOOK_TIMEOUT_SECONDS = 600.0


class HookError(Exception):
    """The charm raised in a hook; the message is the traceback from inside the container."""


@dataclasses.dataclass(frozen=True)
class TickFiring:
    """One run of the tick's service: when, and the arguments juju-exec got."""

    at: float
    arguments: list[str]

    @property
    def event(self) -> str:
        """The event the command dispatches (`JUJU_DISPATCH_PATH=hooks/<event> ...`)."""
        command = self.arguments[-1]
        path = command.split()[0].removeprefix("JUJU_DISPATCH_PATH=")
        return path.removeprefix("hooks/")


class ContainerMachine:
    """One test's machine in the module's container; everything the charm made goes at the end.

    Args:
        container: the module's booted container.
        directory: an empty directory of the test's, for what stays on this side.
    """

    def __init__(self, container: Container, directory: Path) -> None:
        self.container = container
        self.directory = directory
        self.root = container.root
        self.paths = Paths(container.root)
        self.tick_paths = TickPaths(container.root)
        self.lease_files = LeaseFiles(self.paths)
        self.exporter_paths = ExporterPaths(container.root)
        self.exporter_port = EXPORTER_PORT
        self.provider_state = container.host_path(PROVIDER_STATE)
        self.provider_environment = container.host_path(PROVIDER_ENVIRONMENT)
        # The test's own part of the journal starts here.
        self.since = time.time()
        self._hooks: list[ContainerHooks] = []

    def hooks(self) -> ContainerHooks:
        """A fresh `ops.testing` context for garm, running each hook in the container.

        After each hook, a unit of the charm's that failed under systemd fails the test at
        once, with what it logged: a walk would otherwise wait for a step that cannot come.
        """
        hooks = ContainerHooks(self.container, after_hook=self.fail_if_a_unit_failed)
        self._hooks.append(hooks)
        return hooks

    def is_running(self, unit: str = SERVICE_NAME) -> bool:
        """Whether the container's systemd reports the unit active."""
        return self.container.is_active(unit)

    def journal(self, unit: str = f"{SERVICE_NAME}.service") -> str:
        """What the unit logged during this test."""
        return self.container.journal(unit, since=self.since)

    def restarts(self, unit: str = f"{SERVICE_NAME}.service") -> int:
        """How many times the unit was (re)started during this test, systemd's own restarts aside.

        systemd's restarts after a failure (`Restart=on-failure`) are not the charm's: each one
        is announced ("Scheduled restart job") before its start.
        """
        started, scheduled = (
            len(
                self.container.journal_entries(
                    f"MESSAGE_ID={message}", f"UNIT={unit}", "_PID=1", since=self.since
                )
            )
            for message in (UNIT_STARTED, UNIT_RESTART_SCHEDULED)
        )
        return started - scheduled

    def fail_if_a_unit_failed(self, watched: tuple[str, ...] = ()) -> None:
        """Fail the test when one of the charm's units (or `watched`) failed during it.

        The failure shows the unit's journal.

        A start that failed at systemd's own cgroup step (exit status 219, CGROUP) is no fault
        of the unit's: systemd 252 in this container sometimes loses a restarted unit's new
        cgroup to the clean-up of its old one, and restarts the unit by itself (`Restart=`).
        """
        units = [f"UNIT={unit}" for unit in watched or CHARM_UNITS]
        messages = [f"MESSAGE_ID={UNIT_FAILED}", f"MESSAGE_ID={UNIT_PROCESS_EXIT}"]
        entries = self.container.journal_entries(*messages, "_PID=1", *units, since=self.since)
        last_exit: dict[str, str] = {}
        for entry in entries:
            unit = str(entry["UNIT"])
            if entry["MESSAGE_ID"] == UNIT_PROCESS_EXIT:
                last_exit[unit] = str(entry.get("EXIT_STATUS", ""))
            elif last_exit.get(unit) != CGROUP_STEP_FAILED:
                tail = self.unit_log(unit)[-JOURNAL_TAIL_CHARACTERS:]
                pytest.fail(f"{unit} failed under systemd; its journal ends:\n{tail}")

    def unit_log(self, unit: str) -> str:
        """What the unit printed and what systemd said about it during this test."""
        matches = (f"_SYSTEMD_UNIT={unit}", "+", f"UNIT={unit}", "_PID=1")
        entries = self.container.journal_entries(*matches, since=self.since)
        return "".join(f"{entry.get('MESSAGE', '')}\n" for entry in entries)

    def tick_firings(self, since: float = 0.0) -> list[TickFiring]:
        """Every run of the tick's service that called juju-exec (since then), oldest first."""
        entries = self.container.journal_entries(
            "_SYSTEMD_UNIT=garm-reconcile-tick.service", since=since or self.since
        )
        firings: list[TickFiring] = []
        for entry in entries:
            message = str(entry.get("MESSAGE", ""))  # a tick's own lines are ASCII
            if message.startswith(JUJU_EXEC_MARK):
                arguments = json.loads(message.removeprefix(JUJU_EXEC_MARK))
                at = int(entry["__REALTIME_TIMESTAMP"]) / 1e6
                firings.append(TickFiring(at, arguments))
        return firings

    def garm_ids(self) -> tuple[int, int]:
        """The `garm` user's uid and gid in the container."""
        for line in self.container.host_path("/etc/passwd").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == "garm":
                return int(fields[2]), int(fields[3])
        raise LookupError("no garm user in the container")

    def provider_tarball(self, destination: Path) -> Path:
        """The `garm-provider-openstack` resource: the stand-in, as a release tarball.

        GARM runs providers in its sandbox, with a clean environment: the shebang is the
        machine's Python and the fake provider travels inside the script.
        """
        script = provider_script(
            PROVIDER_STATE,
            PROVIDER_ENVIRONMENT,
            python=MACHINE_PYTHON,
            embed_fake_provider=True,
        )
        return build_tarball("garm-provider-openstack", script, destination)

    def provider_instances(self) -> int:
        """How many instances the stand-in provider holds."""
        return provider_instances(self.provider_state)

    def provider_environments(self) -> list[dict[str, str]]:
        """The proxy variables the stand-in provider saw, one mapping per call."""
        return provider_environments(self.provider_environment)

    def close(self) -> None:
        """Stop the hook servers and take away everything the charm made (pass or fail)."""
        for hooks in self._hooks:
            hooks.close()
        self._hooks.clear()
        reset(self.container)


# What the charm makes on a machine, and takes away here between two tests of a module.
CHARM_UNITS = (
    "garm.service",
    "garm-reconcile-tick.timer",
    "garm-reconcile-tick.service",
    "garm-lease-watch.timer",
    "garm-lease-watch.service",
    "garm-charm-exporter.service",
)


def charm_paths() -> list[str]:
    """Every file and directory the charm writes, at its production path."""
    paths = Paths(Path("/"))
    exporter = ExporterPaths()
    return [
        str(path)
        for path in (
            paths.etc,
            paths.data,
            paths.charm_state,
            paths.garm_binary,
            paths.providers_dir.parent,
            paths.unit_file,
            exporter.directory,
            exporter.program.parent,
            *(paths.unit_file.with_name(unit) for unit in CHARM_UNITS),
        )
    ]


def reset(container: Container) -> None:
    """Stop the charm's units and remove all it made, `garm` user included: a fresh machine."""
    container.systemctl("disable", "--now", *CHARM_UNITS)
    container.run(["rm", "-rf", "--one-file-system", *charm_paths()])
    container.systemctl("daemon-reload")
    container.systemctl("reset-failed")
    if container.run(["id", "garm"], check=False).returncode == 0:
        container.run(["userdel", "garm"])


class ContainerHooks:
    """What the walks use of `ops.testing.Context`, each hook run inside the container.

    Events are built here (`on`); `run` sends the event and the state to the hook server and
    returns the state the hook left, as `Context.run` does; an action's failure is raised as
    `testing.ActionFailed`, a charm's exception as `HookError` with its traceback.
    """

    def __init__(
        self, container: Container, after_hook: Callable[[], None] = lambda: None
    ) -> None:
        self.container = container
        self.after_hook = after_hook
        self.on = testing.Context(charm.GarmCharm).on
        self.unit_status_history: list[Any] = []
        self.action_results: dict[str, Any] | None = None
        self.emitted: list[str] = []
        self._coverage = _coverage_data_directory()
        self._server = subprocess.Popen(
            # In the checkout, as tox runs: coverage records files relative to it.
            container.command(self._server_command(), _server_environment(), str(REPOSITORY)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def run(self, event: Any, state: testing.State) -> testing.State:
        """Run one hook in the container; the state it leaves.

        Raises:
            testing.ActionFailed: the action failed.
            HookError: the charm raised.
        """
        assert self._server.stdin is not None
        write(self._server.stdin, (event, self._share_resources(state), juju_environment()))
        reply = self._reply()
        self.unit_status_history = reply["unit_status_history"]
        self.action_results = reply["action_results"]
        self.emitted += reply["emitted"]
        self.after_hook()
        if "error" in reply:
            raise HookError(reply["error"])
        if "action_failed" in reply:
            message, failed_state = reply["action_failed"]
            raise testing.ActionFailed(message, state=failed_state)
        return reply["state"]

    def close(self) -> None:
        """End the server (its coverage, when measured, is kept beside this run's)."""
        if self._server.poll() is None:
            assert self._server.stdin is not None
            self._server.stdin.close()
            try:
                self._server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
        if self._coverage is not None:
            for data in self.container.host_path(COVERAGE_DIR).glob(".coverage*"):
                shutil.move(data, self._coverage / data.name)

    def _server_command(self) -> list[str]:
        module = ["-m", "e2e.hook_server"]
        if self._coverage is None:
            return [sys.executable, *module]
        self.container.host_path(COVERAGE_DIR).mkdir(parents=True, exist_ok=True)
        return [
            sys.executable,
            "-m",
            "coverage",
            "run",
            f"--rcfile={REPOSITORY / 'pyproject.toml'}",
            f"--data-file={COVERAGE_DIR / '.coverage'}",
            *module,
        ]

    def _reply(self) -> dict[str, Any]:
        assert self._server.stdout is not None
        ready, _, _ = select.select([self._server.stdout], [], [], HOOK_TIMEOUT_SECONDS)
        reply = read(self._server.stdout) if ready else None
        if reply is None:
            self._server.kill()
            raise HookError(
                f"the hook server in the container ended or hung ({self._server.poll()})"
            )
        return reply

    def _share_resources(self, state: testing.State) -> testing.State:
        """The state with each resource copied into the container, where the hook reads it."""
        shared = {
            dataclasses.replace(resource, path=self._share(Path(resource.path)))
            for resource in state.resources
        }
        return dataclasses.replace(state, resources=frozenset(shared))

    def _share(self, path: Path) -> str:
        if PurePosixPath(path).is_relative_to(SHARE):
            return str(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        inside = SHARE / "resources" / digest / path.name
        target = self.container.host_path(inside)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        return str(inside)


def juju_environment() -> dict[str, str]:
    """The variables Juju gives a hook that the test set (the model's proxy)."""
    return {name: value for name, value in os.environ.items() if name.startswith("JUJU_")}


def _server_environment() -> dict[str, str]:
    """The hook server's: the checkout's code on the path, root's home, as a hook has."""
    code = [REPOSITORY / "charms" / "garm" / "src", REPOSITORY / "charms" / "garm" / "lib"]
    return {
        "PYTHONPATH": os.pathsep.join(str(path) for path in (*code, REPOSITORY / "tests")),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": "/root",
        "LANG": "C.UTF-8",
    }


def _coverage_data_directory() -> Path | None:
    """Where this run's coverage data goes, when this run is measured (`tox -e unit`)."""
    measured = "coverage" in sys.modules and sys.modules["coverage"].Coverage.current()
    data_file = os.environ.get("COVERAGE_FILE")
    if not measured:
        return None
    return Path(data_file).resolve().parent if data_file else Path.cwd()


def tick_event() -> Any:
    """The event `JUJU_DISPATCH_PATH=hooks/reconcile-tick` makes ops emit on the charm."""
    from scenario.state import _Event  # noqa: PLC0415 - ops.testing's only way to a custom event

    return _Event(TICK_EVENT.replace("-", "_"))
