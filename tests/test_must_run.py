"""A case that cannot run skips on a developer's machine and fails in CI (`tests/must_run.py`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from e2e.real_provider import PROVIDER_BIN_ENV, require_provider_binary
from must_run import cannot_run

TESTS = Path(__file__).resolve().parent


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


def test_a_missing_provider_binary_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Arrange: CI=true, the provider binary pointed at a file that is not there.

    Act: require_provider_binary. Assert: the case fails (not skips), naming the variable.
    """
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(PROVIDER_BIN_ENV, str(tmp_path / "missing"))

    ended = _outcome(require_provider_binary)

    assert ended.startswith(f"failed: CI=true and this case cannot run: {PROVIDER_BIN_ENV}=")


def _outcome(call: Callable[[], object]) -> str:
    """How a call ended: `ran`, or `skipped: <reason>` / `failed: <reason>`."""
    try:
        call()
    except pytest.skip.Exception as skipped:
        return f"skipped: {skipped.msg}"
    except pytest.fail.Exception as failed:
        return f"failed: {failed.msg}"
    return "ran"


def test_no_test_skips_past_cannot_run():
    """Arrange: every Python file under tests/. Act: look for a direct skip call.

    Assert: none outside `must_run.py` and the Juju suite (which skips without a controller,
    also in CI): every other case that cannot run goes through `cannot_run`.
    """
    skip_call = "pytest." + "skip("
    allowed = {TESTS / "must_run.py"}

    skipping = [
        str(path.relative_to(TESTS))
        for path in sorted(TESTS.rglob("*.py"))
        if path not in allowed
        and TESTS / "integration" not in path.parents
        and skip_call in path.read_text(encoding="utf-8")
    ]

    assert skipping == []
