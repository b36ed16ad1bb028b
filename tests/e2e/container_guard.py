"""Boot a throwaway systemd container over an overlay of this machine's root; tear it down.

Run by `container.py` (never by hand) as

    unshare --mount --propagation private python3 -I container_guard.py SETTINGS_JSON

so every mount made here lives in a mount namespace of its own, which the kernel frees with the
last process in it: nothing this guard mounts is ever seen by, or left behind on, the machine.
Standard library only.

1. A tmpfs over `/run` (in this namespace only) holds the overlay's upper and work directories
   and its mount point: nothing is created on the machine's own file systems, `/tmp` included.
2. The overlay: `lowerdir=/` (the machine's root file system as it is, Python, the checkout and
   the GARM binaries included), every write in the upper directory on that tmpfs.
3. Before boot, in the overlay only: a fresh machine id, an empty `/etc/systemd/system` (the
   machine's own enabled services, a PostgreSQL server say, must not boot in the container),
   and the files the settings ask for.
4. `systemd-nspawn --register=no --keep-unit --uuid=<random> --boot --private-network`: no
   system bus is needed (these machines have none) and the container has only its loopback.
   systemd boots there, never on the machine's root: its boot-time clean-up of `/tmp` would
   empty the machine's.
5. Ready once `systemctl is-system-running --wait` answers; the container's init (its
   "leader") is reported as a JSON line on stdout with the boot time.
6. It ends when stdin closes or says `stop` (the test is done, or its process died), when the
   container ends by itself, or at `lifetime_seconds`: the container is powered off (killed
   after a grace), the overlay and the tmpfs are unmounted, and a last JSON line says so. A
   timer inside the container powers it off at the same lifetime even if this guard is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

RUN = Path("/run")
BASE = RUN / "garm-e2e"
BOOT_TIMEOUT_SECONDS = 90.0
SHUTDOWN_GRACE_SECONDS = 5.0
# The lines nspawn printed, kept for a failure report.
LOG_TAIL_BYTES = 4000


def main(argv: list[str]) -> int:
    """Boot, report, wait, tear down; the exit status is 0 when the container ran."""
    settings: dict[str, Any] = json.loads(argv[0])
    machine_id = uuid.uuid4().hex
    tag = f"garm-e2e-{machine_id[:12]}"
    merged = BASE / "merged"
    nspawn: subprocess.Popen[bytes] | None = None
    try:
        mount_overlay(tag)
        prepare_root(merged, machine_id, settings.get("files", []))
        started = time.monotonic()
        nspawn = start_nspawn(merged, machine_id, settings)
        leader = find_leader(nspawn)
        state = wait_until_booted(leader, nspawn)
        booted = time.monotonic() - started
        arm_lifetime(leader, int(settings.get("lifetime_seconds", 3600)))
        report(event="ready", leader=leader, boot_seconds=round(booted, 2), state=state, tag=tag)
        wait_for_stop(nspawn, float(settings.get("lifetime_seconds", 3600)))
    except GuardError as error:
        report(event="failed", reason=str(error), log=log_tail())
        return 1
    finally:
        stopped = time.monotonic()
        if nspawn is not None:
            stop_container(nspawn)
        unmounted = unmount_all(merged)
        report(
            event="stopped",
            shutdown_seconds=round(time.monotonic() - stopped, 2),
            unmounted=unmounted,
        )
    return 0


class GuardError(Exception):
    """The container could not be set up or booted; the message says what failed."""


def report(**fields: Any) -> None:
    """One JSON line on stdout, which `container.py` reads."""
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def mount_overlay(tag: str) -> None:
    """A tmpfs over /run (this namespace only), the overlay of / on a directory in it."""
    _mount("-t", "tmpfs", "-o", "mode=0755,size=4g", tag, str(RUN))
    for name in ("upper", "work", "merged"):
        (BASE / name).mkdir(parents=True)
    options = f"lowerdir=/,upperdir={BASE / 'upper'},workdir={BASE / 'work'}"
    _mount("-t", "overlay", "-o", options, tag, str(BASE / "merged"))


def tool(name: str) -> str:
    """The absolute path of a program this guard runs."""
    found = shutil.which(name)
    if found is None:
        raise GuardError(f"no {name} on this machine")
    return found


def _mount(*args: str) -> None:
    result = subprocess.run([tool("mount"), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise GuardError(f"mount {' '.join(args)} failed: {result.stderr.strip()}")


def prepare_root(merged: Path, machine_id: str, files: list[dict[str, Any]]) -> None:
    """In the overlay only: a machine id of its own, no enabled services, the given files."""
    (merged / "etc" / "machine-id").write_text(f"{machine_id}\n")
    units = merged / "etc" / "systemd" / "system"
    for entry in units.iterdir() if units.is_dir() else ():
        subprocess.run([tool("rm"), "-rf", "--one-file-system", str(entry)], check=True)
    for file in files:
        path = merged / str(file["path"]).lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(file["content"]))
        path.chmod(int(file.get("mode", 0o644)))


def start_nspawn(
    merged: Path, machine_id: str, settings: dict[str, Any]
) -> subprocess.Popen[bytes]:
    """systemd-nspawn booting the overlay, its output in a log on the tmpfs."""
    command = [
        tool("systemd-nspawn"),
        "--quiet",
        "--register=no",
        "--keep-unit",
        f"--uuid={machine_id}",
        f"--machine={machine_id[:12]}",
        "-D",
        str(merged),
        "--boot",
        "--private-network",
        "--console=passive",
    ]
    command += [f"--bind-ro={path}" for path in settings.get("bind_ro", [])]
    command += settings.get("nspawn_args", [])
    environment = dict(os.environ)
    if settings.get("unified_cgroups", True):
        # cgroup v2 inside, as on ubuntu@24.04: the BPF address filters (IPAddressDeny=) need it.
        environment["SYSTEMD_NSPAWN_UNIFIED_HIERARCHY"] = "1"
    with (BASE / "nspawn.log").open("wb") as log:
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=environment
        )


def find_leader(nspawn: subprocess.Popen[bytes]) -> int:
    """The container's init as this machine sees it: nspawn's child that is PID 1 inside."""
    deadline = time.monotonic() + BOOT_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if nspawn.poll() is not None:
            raise GuardError(f"systemd-nspawn exited with {nspawn.returncode}")
        for child in _children(nspawn.pid):
            if _namespace_pids(child)[-1:] == ["1"]:
                return child
        time.sleep(0.02)
    raise GuardError("systemd-nspawn started no container init")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _namespace_pids(pid: int) -> list[str]:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return []
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            return line.split()[1:]
    return []


def inside(leader: int, *argv: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run a command in the container's namespaces."""
    return subprocess.run(
        [tool("nsenter"), f"--target={leader}", "--all", "--", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
    )


def wait_until_booted(leader: int, nspawn: subprocess.Popen[bytes]) -> str:
    """Wait until systemd says the boot is over: `running`, or `degraded` (a unit failed)."""
    deadline = time.monotonic() + BOOT_TIMEOUT_SECONDS
    answer = ""
    while time.monotonic() < deadline:
        if nspawn.poll() is not None:
            raise GuardError(f"the container ended during boot ({nspawn.returncode})")
        try:
            result = inside(leader, "systemctl", "is-system-running", "--wait", timeout=30)
        except subprocess.TimeoutExpired:
            continue
        answer = result.stdout.strip()
        if answer in ("running", "degraded"):
            return answer
        time.sleep(0.05)
    raise GuardError(f"the container did not finish booting: {answer or 'no answer'}")


def arm_lifetime(leader: int, seconds: int) -> None:
    """A timer in the container powering it off at the lifetime, should this guard be killed."""
    result = inside(
        leader,
        "systemd-run",
        "--quiet",
        "--unit=garm-e2e-lifetime",
        f"--on-active={seconds}s",
        "--timer-property=AccuracySec=1s",
        "systemctl",
        "poweroff",
        "--force",
    )
    if result.returncode != 0:
        raise GuardError(f"cannot arm the container's lifetime: {result.stderr.strip()}")


def wait_for_stop(nspawn: subprocess.Popen[bytes], lifetime: float) -> None:
    """Until stdin closes or says `stop`, the container ends, or the lifetime is over."""
    deadline = time.monotonic() + lifetime
    while time.monotonic() < deadline and nspawn.poll() is None:
        readable, _, _ = select.select([sys.stdin], [], [], 0.5)
        if readable:
            line = sys.stdin.readline()
            if not line or line.strip() == "stop":
                return


def stop_container(nspawn: subprocess.Popen[bytes]) -> None:
    """Power the container off (nspawn turns SIGTERM into that); kill it after a grace."""
    if nspawn.poll() is None:
        leader = next((c for c in _children(nspawn.pid) if _namespace_pids(c)[-1:] == ["1"]), 0)
        nspawn.send_signal(signal.SIGTERM)
        try:
            nspawn.wait(timeout=SHUTDOWN_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            if leader:
                # Killing a PID namespace's init kills everything in it.
                _kill(leader)
            _kill(nspawn.pid)
            nspawn.wait(timeout=30)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def unmount_all(merged: Path) -> bool:
    """Unmount the overlay and the tmpfs; whether both went (the namespace frees them anyway)."""
    done = True
    for target in (merged, RUN):
        if not os.path.ismount(target):
            continue
        umount = tool("umount")
        result = subprocess.run([umount, str(target)], capture_output=True, check=False)
        if result.returncode != 0:
            lazy = subprocess.run(
                [umount, "--lazy", str(target)], capture_output=True, check=False
            )
            done = done and lazy.returncode == 0
    return done


def log_tail() -> str:
    """The end of what nspawn printed."""
    try:
        data = (BASE / "nspawn.log").read_bytes()
    except OSError:
        return ""
    return data[-LOG_TAIL_BYTES:].decode(errors="replace")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
