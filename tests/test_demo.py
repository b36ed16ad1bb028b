"""`tox -e demo` (scripts/demo.py) runs the label change end to end and says so."""

import os
import pathlib
import subprocess
import sys

from contract.conftest import V021, garm_binary
from must_run import cannot_run

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = ROOT / "scripts" / "demo.py"
# What `tox -e demo` puts on the import path: the charm's code and libraries, and tests/.
DEMO_ENV = os.environ | {
    "PYTHONPATH": os.pathsep.join(
        str(ROOT / part) for part in ("charms/garm/src", "charms/garm/lib", "tests")
    )
}


def test_demo_runs_the_label_change_to_the_end():
    """Arrange: the demo script. Act: run it with this interpreter, as `tox -e demo` does.

    Assert: it exits 0; it names the phases and shows the changeover's statuses in order
    (replacement first, hand-over, draining, deletion), then the image change's rolling refresh
    counting its outdated runners down, ends with one line saying OK about min idle, and stays
    short enough to read.
    """
    done = subprocess.run(
        [sys.executable, str(DEMO)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=DEMO_ENV,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    steps = [
        "1. configurator 'small' publishes labels linux,x64",
        "2. a runner picks up a job",
        "3. operator: juju config small labels=linux,x64,large",
        "'small' labels changing: starting new scale set",
        "'small' labels changing: handing over",
        "'small' labels changing: draining 1 runner",
        "4. the job finishes",
        "deleted",
        "OK: label change done",
        "5. operator: juju config small min-idle-runners=2",
        "6. operator: juju config small image=ubuntu-24.04-patched",
        "'small': refreshing 2 outdated runners",
        "'small': refreshing 1 outdated runner",
        "OK: image change rolled every idle runner",
    ]
    positions = [out.find(step) for step in steps]
    assert -1 not in positions, dict(zip(steps, positions, strict=True))
    assert positions == sorted(positions)
    assert out.rstrip().splitlines()[-1].endswith("idle runners never below 2 (min idle 2)")
    assert len(out.splitlines()) < 80


def test_demo_runs_the_label_change_on_a_real_garm():
    """Arrange: GARM v0.2.1's binary. Act: run the demo with `--garm-bin`.

    Assert: it exits 0 after the same phases and statuses, in order, on real time, and ends
    with one line saying OK.
    """
    binary, reason = garm_binary(V021)
    if binary is None:
        cannot_run(reason)

    done = subprocess.run(
        [sys.executable, str(DEMO), "--garm-bin", binary],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
        env=DEMO_ENV,
    )

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout
    steps = [
        "0. install",
        "1. configurator 'small' publishes labels linux,x64",
        "runners: 1 idle",
        "2. a runner picks up a job",
        "runners: 1 busy",
        "3. operator: juju config small labels=linux,x64,large",
        "'small' labels changing: starting new scale set",
        "'small' labels changing: handing over",
        "'small' labels changing: draining",
        "4. the job finishes",
        "OK: label change done",
    ]
    positions = [out.find(step) for step in steps]
    assert -1 not in positions, dict(zip(steps, positions, strict=True))
    assert positions == sorted(positions)
    assert out.rstrip().splitlines()[-1].startswith("OK: ")


def test_the_demo_resolves_no_name_and_connects_only_to_loopback():
    """Arrange: the demo under `tests/hermetic.py` (no name, no address beyond loopback).

    Act: run it as `tox -e demo` does. Assert: it ends OK and nothing tried to leave loopback.
    """
    # runpy does not put the script's directory first on the path as `python script` does.
    path = os.pathsep.join([str(DEMO.parent), DEMO_ENV["PYTHONPATH"]])
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "hermetic.py"), str(DEMO)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=DEMO_ENV | {"PYTHONPATH": path},
    )

    assert "HERMETIC VIOLATION" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.rstrip().splitlines()[-1].startswith("OK: ")
