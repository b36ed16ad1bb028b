"""Test-host services the garm machine reaches: a fake GitHub, a tunnel to it, a fake provider.

The fake GitHub (`tests/fake_github`, which also answers a GitHub App's installation-token
exchange) serves on the test host's loopback and answers with URLs on `127.0.0.1:<port>`, so
the garm machine reaches it through an SSH remote forward of that port (`RemoteForward`, `juju
ssh -R`): GARM then sees GitHub at the same address the fake names.

The fake provider (`tests/fake_github/fake_provider.py`) is shipped as the
`garm-provider-openstack` resource: a wrapper that points it at a JSON config and state in one
directory (`/var/lib/garm` on a unit: the only directory the garm service may write) and runs
it. Each instance it creates boots a stand-in runner, a detached process that reports
`installing`, then `idle`, to GARM's callback URL with the instance's token, as GARM's runner
install script does on a real VM (the e2e provider stand-in's `RUNNER`). Without it runners stay
`pending` and a hand-over with `min-idle-runners` above 0 never finishes.
"""

from __future__ import annotations

import io
import os
import pathlib
import signal
import subprocess
import tarfile
import time

from e2e.provider_standin import RUNNER

FAKE_PROVIDER = pathlib.Path(__file__).parent.parent / "fake_github" / "fake_provider.py"
# Where a unit's garm service may write, and the interpreter every Ubuntu machine has.
UNIT_STATE_DIR = "/var/lib/garm"
UNIT_PYTHON = "/usr/bin/python3"
PROVIDER_WRAPPER = '''#!PYTHON
"""Stands in for garm-provider-openstack in integration tests; its state in STATE_DIR."""
import io, json, os, pathlib, subprocess, sys, types

state = pathlib.Path(STATE_DIR)
config = state / "fake-provider.json"
if not config.exists():
    config.write_text(json.dumps({"state_file": str(state / "fake-provider-state.json")}))
os.environ["GARM_PROVIDER_CONFIG_FILE"] = str(config)
if os.environ.get("GARM_COMMAND") == "CreateInstance":
    bootstrap = sys.stdin.read()
    sys.stdin = io.StringIO(bootstrap)
    with (state / "fake-runners.log").open("ab") as log:
        runner = subprocess.Popen(
            [sys.executable, "-c", RUNNER], stdin=subprocess.PIPE, stdout=log, stderr=log,
            start_new_session=True,
        )
    runner.stdin.write(bootstrap.encode())
    runner.stdin.close()
module = types.ModuleType("fake_provider")
exec(compile(SOURCE, "fake_provider.py", "exec"), module.__dict__)
sys.exit(module.main())
'''


def tarball(directory: pathlib.Path, name: str, executable: bytes) -> pathlib.Path:
    """A release-style tarball holding one executable `name` at its top level."""
    path = directory / f"{name}.tgz"
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(name)
        info.size = len(executable)
        info.mode = 0o755
        info.mtime = int(time.time())
        archive.addfile(info, io.BytesIO(executable))
    return path


def fake_provider_executable(state_dir: str = UNIT_STATE_DIR, python: str = UNIT_PYTHON) -> bytes:
    """The wrapper script, with the fake provider's source and the runner's embedded.

    Args:
        state_dir: where the provider keeps its config, instances and the runners' log.
        python: the interpreter of the shebang (GARM runs providers with a clean environment).
    """
    script = PROVIDER_WRAPPER.replace("PYTHON", python, 1)
    script = script.replace("STATE_DIR)", f"{state_dir!r})", 1)
    script = script.replace("RUNNER]", f"{RUNNER!r}]", 1)
    return script.replace("SOURCE,", f"{FAKE_PROVIDER.read_text()!r},", 1).encode()


class RemoteForward:
    """`juju ssh <unit> -N -R port:127.0.0.1:port`: the unit's loopback port reaches ours.

    Entering returns once the unit itself gets an HTTP answer through the tunnel (any status:
    the fake GitHub answers 401 without a token), asked with `juju ssh <unit> curl` up to
    `attempts` times. Leaving stops the whole process group: `juju ssh` runs `ssh` as a child,
    which would otherwise outlive it and keep the port.

    Args:
        model: the model holding the unit.
        unit: the unit whose loopback gets the port.
        port: the test host's loopback port, forwarded to the same port on the unit.
        juju: the juju executable.
        attempts: readiness probes before giving up.
        interval: seconds between probes.
    """

    def __init__(
        self,
        model: str,
        unit: str,
        port: int,
        *,
        juju: str = "juju",
        attempts: int = 20,
        interval: float = 3.0,
    ):
        ssh = [juju, "ssh", "--model", model, unit]
        self.command = [
            *ssh, "-N",
            "-o", "ExitOnForwardFailure=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "ServerAliveInterval=15",
            "-R", f"{port}:127.0.0.1:{port}",
        ]  # fmt: skip
        self.probe = [
            *ssh, "curl", "--silent", "--output", "/dev/null", "--max-time", "5",
            "--write-out", "%{http_code}", f"http://127.0.0.1:{port}/api/v3/rate_limit",
        ]  # fmt: skip
        self.attempts = attempts
        self.interval = interval
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RemoteForward:
        """Open the tunnel; return once the unit gets an answer through it."""
        self.process = subprocess.Popen(self.command, start_new_session=True)
        try:
            self._wait_until_ready(self.process)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the tunnel: its whole process group."""
        self.stop()

    def _wait_until_ready(self, process: subprocess.Popen[bytes]) -> None:
        for _ in range(self.attempts):
            if process.poll() is not None:
                raise RuntimeError(
                    f"remote forward exited ({process.returncode}): {' '.join(self.command)}"
                )
            if self._answered():
                return
            time.sleep(self.interval)
        raise RuntimeError(
            f"no answer through the remote forward after {self.attempts} probes: "
            f"{' '.join(self.probe)}"
        )

    def _answered(self) -> bool:
        """Whether the unit got an HTTP status through the tunnel (curl prints 000 for none)."""
        try:
            probe = subprocess.run(
                self.probe, capture_output=True, text=True, timeout=60, check=False
            )
        except subprocess.TimeoutExpired:
            return False
        code = probe.stdout.strip()[-3:]
        return probe.returncode == 0 and code.isdigit() and code != "000"

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the tunnel's process group, SIGKILL it after `grace` seconds."""
        if self.process is None:
            return
        _stop_group(self.process, grace)
        self.process = None


def _stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """Stop a session leader's whole group; the leader is reaped."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        if _group_gone(process, wait):
            break
    process.wait(timeout=30)


def _group_gone(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether every process of the group ended within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        process.poll()  # reaps the leader: a zombie still counts as a member of its group
        if not _group_alive(process):
            return True
        time.sleep(0.05)
    return False


def _group_alive(process: subprocess.Popen[bytes]) -> bool:
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True
