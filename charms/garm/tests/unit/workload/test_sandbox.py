"""The lease watchdog's and the reconcile tick's units are sandboxed (`workload.sandbox`).

`systemd-analyze security --offline=yes` rates each rendered unit file without loading it;
the figure under a real systemd is the e2e container's (tests/e2e/test_systemd_units.py).
"""

from __future__ import annotations

import datetime
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from workload.host import Paths
from workload.lease import LeaseFiles
from workload.lease import render_service as render_watchdog
from workload.tick import TickSchedule
from workload.tick import render_service as render_tick

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
EXPOSURE = re.compile(r"Overall exposure level for [\w.-]+: (?P<score>\d+\.\d+)")


def offline_exposure(unit: Path) -> float:
    """The overall exposure systemd-analyze gives the unit file, offline."""
    assert SYSTEMD_ANALYZE is not None
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=yes", str(unit)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if "--offline" in result.stderr and result.returncode != 0:
        pytest.skip(f"this systemd-analyze has no --offline: {result.stderr.strip()[:80]}")
    found = EXPOSURE.search(result.stdout)
    assert found is not None, result.stdout + result.stderr
    return float(found.group("score"))


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed here")
@pytest.mark.parametrize("unit", ["garm-lease-watch.service", "garm-reconcile-tick.service"])
def test_each_root_oneshot_scores_at_most_2(tmp_path: Path, unit: str):
    """Arrange: the unit as the charm renders it. Act: systemd-analyze security, offline.

    Assert: an overall exposure of at most 2.0 (both were 9.6 unsandboxed).
    """
    if unit == "garm-lease-watch.service":
        text = render_watchdog(LeaseFiles(Paths(Path("/"))))
    else:
        text = render_tick(
            TickSchedule("garm/0", Path("/var/lib/juju/agents/unit-garm-0/charm"), MINUTE)
        )
    path = tmp_path / unit
    path.write_text(text)

    assert offline_exposure(path) <= 2.0


MINUTE = datetime.timedelta(minutes=1)


def test_neither_oneshot_can_read_garms_secrets_or_write_the_machine():
    """Arrange: both rendered units. Act: read their [Service] settings.

    Assert: GARM's configuration and data are inaccessible, the file system is read-only and
    no capability is kept; the watchdog has no network, the tick loopback only.
    """
    watchdog = render_watchdog(LeaseFiles(Paths(Path("/")))).splitlines()
    tick = render_tick(TickSchedule("garm/0", Path("/charm"), MINUTE)).splitlines()

    for lines in (watchdog, tick):
        assert "InaccessiblePaths=-/etc/garm -/var/lib/garm" in lines
        assert "ProtectSystem=strict" in lines
        assert "CapabilityBoundingSet=" in lines
        assert "ReadWritePaths" not in "\n".join(lines)
    assert "PrivateNetwork=yes" in watchdog
    assert "IPAddressAllow=localhost" in tick
    assert "PrivateNetwork=yes" not in tick
