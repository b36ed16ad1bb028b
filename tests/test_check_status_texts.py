"""`scripts/check_docs.py` fails on a status text the docs quote and the code does not have."""

from __future__ import annotations

import importlib.util
import pathlib
from types import ModuleType

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def checker() -> ModuleType:
    """The checker, loaded from its file (scripts/ is not a package on the test path)."""
    spec = importlib.util.spec_from_file_location(
        "check_status_texts", ROOT / "scripts" / "check_status_texts.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_quote_only_statuses_the_code_has(checker: ModuleType):
    """Arrange: the repository. Act: check_status_texts. Assert: no problem."""
    assert list(checker.check_status_texts()) == []


@pytest.mark.parametrize(
    ("quoted", "found"),
    [
        ("Blocked `GARM exploded while frobnicating the widgets`", False),
        ("Maintenance `paused since <UTC time>: the charm leaves GARM alone; run resume`", True),
        ("Active `'small' labels changing: deleting the old generation forever`", False),
        ("Waiting `GARM stopped answering; retrying at the next hook`", True),
        # Only docstrings and log lines have these words: no status does.
        ("Blocked `Decide whether Charmhub builds exchange credentials`", False),
        ("Waiting `Everything the Enterprise denied`", False),
    ],
)
def test_an_invented_status_is_found(
    checker: ModuleType,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    quoted: str,
    found: bool,
):
    """Arrange: a page quoting one status. Act: check it. Assert: flagged unless in the code."""
    page = tmp_path / "page.md"
    page.write_text(f"| {quoted} | why | what |\n")
    monkeypatch.setattr(checker, "DOCS", [page])
    monkeypatch.setattr(checker, "ROOT", tmp_path)

    problems = list(checker.check_status_texts())

    assert (problems == []) == found, problems
