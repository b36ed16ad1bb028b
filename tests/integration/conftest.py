"""Integration tests need a Juju controller; without one they are skipped with the reason.

Only the items collected from this directory are skipped: pytest hands every conftest's
`pytest_collection_modifyitems` the whole session's items, so `pytest tests` on a machine
without Juju must still run the other suites.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


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
    """Skip the integration tests, with the reason, where no controller exists."""
    ours = [item for item in items if item.path.resolve().is_relative_to(HERE)]
    if not ours:
        return
    available, reason = _controller_available()
    if available:
        return
    for item in ours:
        item.add_marker(pytest.mark.skip(reason=reason))
