"""What only a real systemd shows: the charm's units as systemd runs them, in the e2e container.

One leader is deployed for the module (GARM v0.2.1, the release the charm installs; the peer
relation, so GARM runs under a lease and its watchdog; `cos-agent`, so the exporter runs; a
30-second reconcile tick), and each test looks at one property of the units it rendered:

- GARM writes its data directory and nothing else of the machine (`ProtectSystem=strict` and
  `ReadWritePaths=`, private `/tmp`), seen from inside GARM's own namespaces, as its user;
- each unit is within the `systemd-analyze security` exposure `docs/reference/garm-charm.md`
  states (its "systemd units" table, the one place the figures live);
- the exporter answers on 127.0.0.1 only, and its unit's address filter holds;
- the tick's timer fires at `reconcile-interval` and its command dispatches `reconcile-tick`;
- the lease watchdog stops GARM once the lease has lapsed, with no hook running (it stops
  GARM, and the next hook must start it again), from inside its sandbox;
- the tick's sandbox still lets its command reach the unit agent's root-only socket, as
  juju-exec does to have the agent run the hook;
- and of the walks' own check: a unit that fails fails the walk, one that systemd could not
  put in its cgroup (which systemd then restarts) does not.
"""

from __future__ import annotations

import re
import socket
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ops import testing

from contract.conftest import V021
from e2e.conftest import GarmTarballs
from e2e.container import Container
from e2e.container_machine import UNIT_STARTED, ContainerMachine, TickFiring, tick_event
from e2e.test_garm_day2 import with_peers
from e2e.test_garm_machine import Walk, install_and_bootstrap, leader_state, proxied_model
from fake_github import FakeGitHub
from workload.exporter import EXPORTER_PORT
from workload.lease import WATCH_PERIOD
from workload.tick import TICK_EVENT

REPOSITORY = Path(__file__).resolve().parents[2]
EXPOSURE_TABLE = REPOSITORY / "docs" / "reference" / "garm-charm.md"
TICK_SECONDS = 30
# The tick's jitter is a tenth of the interval; a firing may also wait for the timer's accuracy
# (1 s) and for a busy machine.
TICK_SLACK_SECONDS = TICK_SECONDS / 10 + 5
# An address of the container's that is not loopback (TEST-NET-1, on its `lo`).
OTHER_ADDRESS = "192.0.2.1"
GARM_PORT = 9997
TMP = "/tmp"  # noqa: S108 - the container's /tmp, which GARM's sandbox replaces with its own
PROBE = ".e2e-write-probe"
MAX_EXPOSURE = 2.0
# Where juju-exec finds the unit agent of garm/0 (root's, 0700 directories, a 0600 socket).
AGENT_SOCKET = "/var/lib/juju/agents/unit-garm-0/run.socket"
TICK_DROP_IN = "/etc/systemd/system/garm-reconcile-tick.service.d/e2e-probe.conf"


@pytest.fixture(scope="module")
def deployed(
    container: Container,
    garm_tarballs: GarmTarballs,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Walk]:
    """A bootstrapped leader with peers (lease, watchdog), COS (exporter) and a 30 s tick."""
    directory = tmp_path_factory.mktemp("systemd-units")
    machine = ContainerMachine(container, directory)
    try:
        with FakeGitHub() as github, pytest.MonkeyPatch.context() as patch:
            for name, value in proxied_model(github).items():
                patch.setenv(name, value)
            state = leader_state(
                machine,
                garm_tarballs.of(V021),
                directory,
                GARM_PORT,
                config={"reconcile-interval": f"{TICK_SECONDS}s"},
                relations={testing.Relation("cos-agent", remote_app_name="grafana-agent")},
            )
            walk = Walk(machine.hooks(), state, machine, github, GARM_PORT)
            install_and_bootstrap(walk)
            with_peers(walk)
            assert machine.is_running(), "GARM runs under its lease"
            yield walk
    finally:
        machine.close()


def test_garm_writes_its_data_directory_and_nothing_else(deployed: Walk):
    """Arrange: GARM running from the charm's unit; a world-writable directory beside its own.

    Act: from inside GARM's namespaces, as its user, write a file in each directory.
    Assert: only its data directory (and its private /tmp, which the machine never sees)
    takes it; the world-writable directory refuses it: the sandbox, not file modes, holds.
    """
    machine = deployed.machine
    open_directory = "/var/lib/garm-e2e/world-writable"
    machine.container.run(["install", "-d", "-m", "1777", open_directory])
    attempts = [
        "/var/lib/garm",
        TMP,
        open_directory,
        "/etc/garm",
        "/etc",
        "/var/lib/garm-charm",
        "/usr/local/bin",
        "/opt/garm/providers.d",
        "/root",
    ]

    writable = as_garm_in_its_sandbox(machine, attempts)

    assert writable == {"/var/lib/garm": True, TMP: True} | {path: False for path in attempts[2:]}
    assert machine.container.host_path(f"/var/lib/garm/{PROBE}").is_file()
    assert not machine.container.host_path(f"{TMP}/{PROBE}").exists(), "GARM's /tmp is private"


def as_garm_in_its_sandbox(machine: ContainerMachine, directories: list[str]) -> dict[str, bool]:
    """Whether GARM's user, in GARM's namespaces, can create a file in each directory."""
    main_pid = machine.container.systemctl("show", "--property=MainPID", "--value", "garm")
    uid, gid = machine.garm_ids()
    script = (
        f'for d in "$@"; do if (: > "$d/{PROBE}") 2>/dev/null; '
        'then echo "$d yes"; else echo "$d no"; fi; done'
    )
    result = machine.container.run(
        [
            "nsenter",
            f"--target={main_pid.stdout.strip()}",
            "--all",
            f"--setuid={uid}",
            f"--setgid={gid}",
            "--",
            "/bin/sh",
            "-c",
            script,
            "probe",
            *directories,
        ]
    )
    answers = dict(line.rsplit(" ", 1) for line in result.stdout.splitlines())
    return {directory: answers.get(directory) == "yes" for directory in directories}


def test_each_unit_is_within_the_exposure_the_docs_state(deployed: Walk):
    """Arrange: the leader's four units loaded by systemd (GARM, exporter, watchdog, tick).

    Act: `systemd-analyze security` on each, inside the container.
    Assert: each scores at most the figure in the reference's "systemd units" table.
    """
    stated = documented_exposures()

    measured = {unit: exposure(deployed.machine.container, unit) for unit in stated}

    # The figures the docs may state: every unit of the charm's within 2.0.
    assert {unit: limit for unit, limit in stated.items() if limit > MAX_EXPOSURE} == {}

    assert set(stated) == {
        "garm.service",
        "garm-charm-exporter.service",
        "garm-lease-watch.service",
        "garm-reconcile-tick.service",
    }
    above = {
        unit: (measured[unit], limit) for unit, limit in stated.items() if measured[unit] > limit
    }
    assert above == {}, f"(measured, stated) above the documented exposure: {above}"


def documented_exposures() -> dict[str, float]:
    """Unit -> the exposure the reference states, from its "systemd units" table."""
    text = EXPOSURE_TABLE.read_text()
    section = text.split("## systemd units", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w-]+\.service)` \|.*\| (\d+\.\d) \|$", section, re.MULTILINE)
    return {unit: float(figure) for unit, figure in rows}


def exposure(container: Container, unit: str) -> float:
    """The overall exposure `systemd-analyze security` gives the loaded unit."""
    result = container.run(["systemd-analyze", "security", "--no-pager", unit])
    found = re.search(rf"Overall exposure level for {re.escape(unit)}: (\d+\.\d)", result.stdout)
    assert found is not None, result.stdout[-500:]
    return float(found[1])


def test_the_exporter_answers_on_loopback_only(deployed: Walk):
    """Arrange: the exporter running from its unit; another address on the container.

    Act: GET /metrics on 127.0.0.1 and on the other address; from inside the exporter's own
    cgroup, connect to a listener on each address.
    Assert: 127.0.0.1 answers and the other address refuses the connection; the unit's
    address filter (IPAddressDeny=any, IPAddressAllow=localhost) lets its processes reach
    loopback only.
    """
    container = deployed.machine.container
    container.run(["ip", "address", "add", f"{OTHER_ADDRESS}/32", "dev", "lo"], check=False)

    with urllib.request.urlopen(f"http://127.0.0.1:{EXPORTER_PORT}/metrics", timeout=10) as answer:
        assert answer.status == 200
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((OTHER_ADDRESS, EXPORTER_PORT), timeout=5).close()
    reached = from_the_exporters_cgroup(container, ["127.0.0.1", OTHER_ADDRESS])
    assert reached == {"127.0.0.1": True, OTHER_ADDRESS: False}


def from_the_exporters_cgroup(container: Container, addresses: list[str]) -> dict[str, bool]:
    """Whether a process in the exporter's cgroup connects to a listener on each address."""
    listeners = [socket.create_server((address, 0)) for address in addresses]
    ports = [listener.getsockname()[1] for listener in listeners]
    probe = (
        "import socket, sys\n"
        "for address, port in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    s = socket.socket(); s.settimeout(3)\n"
        "    print(address, s.connect_ex((address, int(port))) == 0)\n"
    )
    cgroup = "/sys/fs/cgroup/system.slice/garm-charm-exporter.service/cgroup.procs"
    pairs = [
        part
        for address, port in zip(addresses, ports, strict=True)
        for part in (address, str(port))
    ]
    try:
        result = container.run(
            ["sh", "-c", f'echo $$ > {cgroup} && exec python3 -I -c "$0" "$@"', probe, *pairs]
        )
    finally:
        for listener in listeners:
            listener.close()
    answers = dict(line.split() for line in result.stdout.splitlines())
    return {address: answers.get(address) == "True" for address in addresses}


def test_the_tick_timer_fires_at_the_interval_and_dispatches_reconcile_tick(deployed: Walk):
    """Arrange: the leader's tick timer, every 30 s (a tenth of that as jitter).

    Act: wait for two firings; dispatch the event each one's command names, as juju-exec's
    dispatch would.
    Assert: the first comes an interval after the timer started, the second an interval after
    the first ended; each runs juju-exec for this unit with
    `JUJU_DISPATCH_PATH=hooks/reconcile-tick`; the charm handles it as its reconcile-tick event
    and stays Active.
    """
    machine = deployed.machine
    started = timer_started_at(machine)

    firings = wait_for(lambda: machine.tick_firings(since=started), count=2)

    spacing = [firings[0].at - started, firings[1].at - firings[0].at]
    assert all(TICK_SECONDS <= gap <= TICK_SECONDS + TICK_SLACK_SECONDS for gap in spacing), (
        spacing
    )
    for firing in firings:
        assert firing.arguments[0] == "garm/0"
        assert firing.arguments[1].startswith(f"JUJU_DISPATCH_PATH=hooks/{TICK_EVENT} ")
        assert firing.arguments[1].endswith("/dispatch")
        assert firing.event == TICK_EVENT
        deployed.ctx.emitted.clear()
        deployed.hook(tick_event())
        assert "ReconcileTickEvent" in deployed.ctx.emitted
        assert deployed.state.unit_status == testing.ActiveStatus("")


def timer_started_at(machine: ContainerMachine) -> float:
    """When systemd last started the tick's timer (seconds since the epoch)."""
    entries = machine.container.journal_entries(
        "_PID=1", "UNIT=garm-reconcile-tick.timer", f"MESSAGE_ID={UNIT_STARTED}"
    )
    assert entries, "the tick's timer never started"
    return int(entries[-1]["__REALTIME_TIMESTAMP"]) / 1e6


def wait_for(observe: Callable[[], list[TickFiring]], count: int) -> list[TickFiring]:
    """The first `count` firings `observe()` returns, once it has them (three intervals)."""
    deadline = time.monotonic() + 3 * (TICK_SECONDS + TICK_SLACK_SECONDS)
    while len(found := observe()) < count:
        if time.monotonic() > deadline:
            pytest.fail(f"{len(found)} of {count} tick firings in time")
        time.sleep(1.0)
    return found[:count]


def test_the_watchdog_stops_garm_once_the_lease_lapses(deployed: Walk):
    """Arrange: GARM running under this unit's lease; no hook runs from now on.

    Act: the lease's end passes (the file holds an end just gone, as time passing leaves it);
    wait up to two watch periods.
    Assert: the watchdog's timer ran its service, and systemd then stopped GARM; the next hooks
    renew the lease and start GARM again.
    """
    machine = deployed.machine
    since = time.time()

    machine.lease_files.lease.write_text(f"{int(since) - 1}\n")
    deadline = time.monotonic() + 2 * WATCH_PERIOD.total_seconds() + 10
    while machine.is_running() and time.monotonic() < deadline:
        time.sleep(0.5)

    assert not machine.is_running(), "the watchdog stops GARM once the lease lapsed"
    watched = job_times(machine, "garm-lease-watch.service", "start", since)
    stopped = job_times(machine, "garm.service", "stop", since)
    assert watched, "the watchdog's timer started its service"
    assert stopped, "systemd stopped GARM"
    assert watched[0] <= stopped[0], "stopped by the watchdog, which ran first"
    deployed.update_status_until(machine.is_running, "GARM running again after hooks")
    assert int(machine.lease_files.lease.read_text()) > time.time(), "a renewed lease"


def test_the_tick_reaches_the_unit_agents_socket_from_its_sandbox(deployed: Walk):
    """Arrange: a stand-in unit agent on its root-only socket; the tick's unit with a probe.

    The agent is socket-activated; the tick's unit is as the charm rendered it, its command
    replaced by the probe through a drop-in (the sandbox stays as rendered).

    Act: start the tick's service.
    Assert: it succeeds and the agent got the probe's request, as juju-exec hands the agent
    the hook to run; the probe cannot read GARM's configuration nor write the machine.
    """
    container = deployed.machine.container
    container.write(
        "/etc/systemd/system/e2e-unit-agent.socket",
        f"[Socket]\nListenStream={AGENT_SOCKET}\nSocketMode=0600\nDirectoryMode=0700\n"
        "Accept=yes\n".encode(),
    )
    container.write(
        "/etc/systemd/system/e2e-unit-agent@.service",
        b"[Service]\nExecStart=/bin/sh -c 'read line; echo \"agent got: $line\"'\n"
        b"StandardInput=socket\nStandardOutput=journal\n",
    )
    container.write("/var/lib/e2e-probe/probe.py", TICK_PROBE.encode())
    container.write(
        TICK_DROP_IN,
        b"[Service]\nExecStart=\nExecStart=/usr/bin/python3 -I /var/lib/e2e-probe/probe.py\n",
    )
    container.systemctl("daemon-reload")
    try:
        container.run(["systemctl", "start", "e2e-unit-agent.socket"])
        since = time.time()

        started = container.systemctl("start", "garm-reconcile-tick.service")

        probe = container.run(
            [
                "journalctl",
                "--no-pager",
                "-o",
                "cat",
                "-u",
                "garm-reconcile-tick.service",
                f"--since=@{int(since) - 1}",
            ],
            check=False,
        ).stdout
        agent = container.run(
            ["journalctl", "--no-pager", "-o", "cat", "-u", "e2e-unit-agent@*"], check=False
        ).stdout
    finally:
        container.run(["rm", "-f", TICK_DROP_IN])
        container.systemctl("daemon-reload")
    assert started.returncode == 0, started.stderr + probe
    assert "agent got: dispatch reconcile-tick" in agent, agent + probe
    assert "garm config readable: False" in probe, probe
    assert "root writable: False" in probe, probe


# Run by the tick's unit in place of juju-exec: reach the agent, try GARM's files and `/`.
TICK_PROBE = f"""\
import os, socket
agent = socket.socket(socket.AF_UNIX)
agent.connect({AGENT_SOCKET!r})
agent.sendall(b"dispatch reconcile-tick\\n")
agent.close()
print("garm config readable:", os.access("/etc/garm/config.toml", os.R_OK))
try:
    open("/e2e-tick-probe", "w").close()
    print("root writable: True")
except OSError:
    print("root writable: False")
"""


def job_times(machine: ContainerMachine, unit: str, job: str, since: float) -> list[float]:
    """When systemd finished a job of that type on the unit, since `since`, oldest first."""
    entries = machine.container.journal_entries(
        "_PID=1", f"UNIT={unit}", f"JOB_TYPE={job}", since=since
    )
    return [int(entry["__REALTIME_TIMESTAMP"]) / 1e6 for entry in entries]


def test_a_failed_unit_fails_the_walk_and_a_failed_cgroup_step_does_not(
    container: Container, tmp_path: Path
):
    """Arrange: two units, one exiting 1, one 219 (systemd's status for its own cgroup step).

    Act: start each; the walks' check after a hook.
    Assert: the first fails the test, naming the unit and what it printed; the second does not.
    """
    machine = ContainerMachine(container, tmp_path)
    for name, status in (("e2e-fails", 1), ("e2e-cgroup-step", 219)):
        unit = f"[Service]\nExecStart=/bin/sh -c 'echo exiting {status}; exit {status}'\n"
        container.write(f"/etc/systemd/system/{name}.service", unit.encode())
    container.systemctl("daemon-reload")
    try:
        for name in ("e2e-fails", "e2e-cgroup-step"):
            container.systemctl("start", f"{name}.service")

        machine.fail_if_a_unit_failed(("e2e-cgroup-step.service",))
        with pytest.raises(
            pytest.fail.Exception, match=r"e2e-fails\.service failed(.|\n)*exiting 1"
        ):
            machine.fail_if_a_unit_failed(("e2e-fails.service",))
    finally:
        container.run(["rm", "-f", "/etc/systemd/system/e2e-fails.service"])
        container.run(["rm", "-f", "/etc/systemd/system/e2e-cgroup-step.service"])
        container.systemctl("daemon-reload")
        container.systemctl("reset-failed")
