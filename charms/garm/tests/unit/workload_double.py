"""A recording double of workload.Workload's interface for charm tests."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from workload import GarmConfig, ProxyConfig, ResourceError


@dataclasses.dataclass
class RecordingWorkload:
    """Records what the charm asked of the workload and answers like a healthy machine."""

    install_error: ResourceError | None = None
    sqlite_state: bool = False
    backend: str = ""
    installed: bool = False
    running: bool = False
    calls: list[str] = dataclasses.field(default_factory=list[str])
    installs: list[tuple[Path | None, Path | None, ProxyConfig]] = dataclasses.field(
        default_factory=list[tuple[Path | None, Path | None, ProxyConfig]]
    )
    applied: list[GarmConfig] = dataclasses.field(default_factory=list[GarmConfig])

    def install(
        self, garm_tarball: Path | None, provider_tarball: Path | None, proxy: ProxyConfig
    ) -> None:
        """Record an install; fail like workload does when told to."""
        self.calls.append("install")
        self.installs.append((garm_tarball, provider_tarball, proxy))
        if self.install_error is not None:
            raise self.install_error
        self.installed = True

    def is_installed(self) -> bool:
        """Whether install succeeded before."""
        return self.installed

    def version(self) -> str:
        """GARM's version."""
        return "v0.2.1" if self.installed else ""

    def apply(self, config: GarmConfig) -> bool:
        """Record the config; report a restart only when it changed."""
        self.calls.append("apply")
        changed = not self.applied or self.applied[-1] != config or not self.running
        self.applied.append(config)
        self.running = True
        return changed

    def stop(self) -> None:
        """Record a stop."""
        self.calls.append("stop")
        self.running = False

    def remove(self) -> None:
        """Record a removal."""
        self.calls.append("remove")
        self.running = False

    def recorded_backend(self) -> str:
        """The backend GARM last ran with."""
        return self.backend

    def record_backend(self, backend: str) -> None:
        """Remember the backend."""
        self.backend = backend

    def has_sqlite_state(self) -> bool:
        """Whether a SQLite database with content exists."""
        return self.sqlite_state
