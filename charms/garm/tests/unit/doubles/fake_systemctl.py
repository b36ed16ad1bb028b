"""A fake `systemctl` executable, put first on PATH, that records what it was asked.

charmlibs-systemd runs `systemctl` through PATH, so the workload tests see the very commands
that would reach systemd. The fake remembers whether the service is active (started by
start/restart, stopped by stop and `disable --now`, left "failed" by a failed start) and
can be told to fail one verb, printing a line that must never reach a status.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from pathlib import Path

import pytest

from workload.tick import ReconcileTick

# What a failing fake systemctl prints; it stands for output nobody vouched for.
FAILURE_OUTPUT = "Job for garm.service failed: fake-systemctl-output-marker"

_SCRIPT = """\
#!/bin/sh
dir={directory}
printf '%s\\t' "$@" >> "$dir/calls"
printf '\\n' >> "$dir/calls"
verb=""
now=""
for arg in "$@"; do
  case "$arg" in
    --now) now=yes ;;
    -*) ;;
    *) [ -z "$verb" ] && verb="$arg" ;;
  esac
done
if [ -e "$dir/fail-$verb" ]; then
  case "$verb" in start|restart) echo failed > "$dir/state" ;; esac
  echo "{failure}" >&2
  exit 1
fi
case "$verb" in
  start|restart) echo active > "$dir/state" ;;
  stop) echo inactive > "$dir/state" ;;
  disable) [ -n "$now" ] && echo inactive > "$dir/state" ;;
  is-active)
    state=$(cat "$dir/state" 2>/dev/null || echo inactive)
    case " $* " in *" --quiet "*) ;; *) echo "$state" ;; esac
    [ "$state" = active ] || exit 3
    ;;
esac
exit 0
"""


class FakeSystemctl:
    """The fake's directory: its script, its call log, the service state and failures."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        script = directory / "systemctl"
        script.write_text(
            _SCRIPT.format(directory=shlex.quote(str(directory)), failure=FAILURE_OUTPUT)
        )
        script.chmod(0o755)

    def calls(self) -> list[list[str]]:
        """Every argv systemctl received, in order (without the program name)."""
        log = self.directory / "calls"
        if not log.exists():
            return []
        return [line.split("\t")[:-1] for line in log.read_text().splitlines()]

    def restarts(self) -> int:
        """How many times the service was (re)started."""
        return sum(1 for call in self.calls() if call[:1] == ["restart"])

    @property
    def active(self) -> bool:
        """Whether the service is active."""
        state = self.directory / "state"
        return state.exists() and state.read_text().strip() == "active"

    @active.setter
    def active(self, value: bool) -> None:
        (self.directory / "state").write_text("active\n" if value else "inactive\n")

    def fail(self, verb: str) -> None:
        """Make every later `systemctl <verb>` fail."""
        (self.directory / f"fail-{verb}").touch()

    def heal(self, verb: str) -> None:
        """Let `systemctl <verb>` succeed again."""
        (self.directory / f"fail-{verb}").unlink(missing_ok=True)


def install_fake_systemctl(directory: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSystemctl:
    """Create the fake in `directory` and put it first on PATH for this test."""
    fake = FakeSystemctl(directory)
    monkeypatch.setenv("PATH", str(directory), prepend=os.pathsep)
    return fake


@dataclasses.dataclass(frozen=True)
class TickMachine:
    """The reconcile tick's timer under a temporary root, and the fake systemctl it drives."""

    tick: ReconcileTick
    systemctl: FakeSystemctl
