"""Cases that need a real GARM binary or a PostgreSQL server: skipped locally, failed in CI.

On a developer's machine a missing binary or server skips the case with the reason. In CI
(`CI=true`, as `.ci/run` and hosted CI set it) a skip would report green without the case having
run, so it fails instead, naming what is missing (`.ci/run` installs PostgreSQL; the GARM
binaries come from `GARM_BIN_DIR`).
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (`CI=true`)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def cannot_run(reason: str) -> NoReturn:
    """Skip the case with `reason`; in CI, fail it."""
    if in_ci():
        pytest.fail(f"CI=true and this case cannot run: {reason}", pytrace=False)
    pytest.skip(reason)
