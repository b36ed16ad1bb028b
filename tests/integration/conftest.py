"""Integration tests need a Juju controller; without one they are skipped with the reason."""

import shutil
import subprocess

import pytest


def _controller_available() -> tuple[bool, str]:
    juju = shutil.which("juju")
    if juju is None:
        return False, "no juju CLI on this machine: integration tests need a Juju controller"
    probe = subprocess.run(
        [juju, "show-controller", "--format", "json"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return False, "juju has no reachable controller: bootstrap one (e.g. on LXD) first"
    return True, ""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip every integration test, with the reason, where no controller exists."""
    available, reason = _controller_available()
    if available:
        return
    for item in items:
        item.add_marker(pytest.mark.skip(reason=reason))
