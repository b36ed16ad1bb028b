"""The repository-level suites' run summary: how long each e2e container took to boot."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per e2e test module that booted a container (`tests/e2e/conftest.py`)."""
    booted = {
        value
        for reports in terminalreporter.stats.values()
        for report in reports
        for name, value in getattr(report, "user_properties", ())
        if name == "container"
    }
    if booted:
        terminalreporter.write_sep("-", "systemd containers (tests/e2e)")
        for line in sorted(booted):
            terminalreporter.write_line(str(line))
