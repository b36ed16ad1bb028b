"""A case that cannot run skips on a developer's machine and fails in CI (`tests/must_run.py`)."""

from __future__ import annotations

import pytest

from must_run import cannot_run


def test_a_missing_binary_skips_outside_ci(monkeypatch: pytest.MonkeyPatch):
    """Arrange: CI unset. Act: cannot_run. Assert: the case is skipped with the reason."""
    monkeypatch.delenv("CI", raising=False)

    with pytest.raises(pytest.skip.Exception, match="no GARM binary"):
        cannot_run("no GARM binary here")


@pytest.mark.parametrize("value", ["true", "1", "TRUE"])
def test_a_missing_binary_fails_in_ci(monkeypatch: pytest.MonkeyPatch, value: str):
    """Arrange: CI=true. Act: cannot_run. Assert: the case fails, naming what is missing."""
    monkeypatch.setenv("CI", value)

    with pytest.raises(pytest.fail.Exception, match="CI=true and this case cannot run: no pg"):
        cannot_run("no pg")
