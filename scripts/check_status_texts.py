"""Status texts quoted in the docs must exist in the code (run by `scripts/check_docs.py`).

A quoted status is a code span after a status name, as the docs write them: Blocked `text`,
Waiting `text`, Maintenance `text`, Active `text` (also in a table cell). The text is cut at
what the docs write for a variable part (`<name>`, `...`, a quoted name such as `'small'`,
numbers and times); every literal piece of 8 characters or more must occur in a string literal
of that charm's code (garm's, or the configurator's for its docs; f-strings' literal parts
included, docstrings and log calls left out), or, where the code builds it from parts, every
word of it must. The code is read afresh each run, so a status another change
adds is known without a list to update.
"""

from __future__ import annotations

import ast
import pathlib
import re
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parent.parent
GARM_CODE = ROOT / "charms" / "garm" / "src"
CONFIGURATOR_CODE = ROOT / "charms" / "garm-configurator" / "src"
# The relation library's validation errors reach both charms' statuses.
LIBRARY = ROOT / "charms" / "garm" / "lib" / "charms" / "garm_configurator"
SKIP = {"garm_client"}
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Docs about the configurator quote its statuses; every other doc quotes garm's.
CONFIGURATOR_DOCS = ("garm-configurator",)
LOG_METHODS = frozenset({"debug", "info", "warning", "error", "exception", "critical"})
# Decisions recorded before a status was reworded quote it as it was then.
HISTORY = ("adr", "changelog.md")
QUOTED = re.compile(r"\b(Blocked|Waiting|Maintenance|Active)\s+`([^`\n]+)`")
# What the docs write for a part the code fills in.
VARIABLE = re.compile(
    r"<[^>]*>|\.\.\.|'[^']*'|\"[^\"]*\"|\([^)]*\)|\d[\d:.]*\s*(?:UTC|s|min|ms)?\b|\bN\b|\bM\b"
)
MIN_PIECE = 8
WORD = re.compile(r"[A-Za-z][A-Za-z_-]{2,}")


def check_status_texts() -> Iterator[str]:
    """`path:line: problem` for each quoted status with a piece the code does not have."""
    corpora = {
        charm: (corpus, set(WORD.findall(corpus)))
        for charm, corpus in (
            ("garm", code_strings(GARM_CODE, LIBRARY)),
            ("garm-configurator", code_strings(CONFIGURATOR_CODE, LIBRARY)),
        )
    }
    for path in DOCS:
        relative = path.relative_to(ROOT)
        if any(part in HISTORY for part in relative.parts):
            continue
        about_configurator = any(name in relative.name for name in CONFIGURATOR_DOCS)
        charm = "garm-configurator" if about_configurator else "garm"
        corpus, words = corpora[charm]
        text = path.read_text(encoding="utf-8")
        for match in QUOTED.finditer(text):
            missing = [
                piece
                for piece in pieces(match.group(2))
                if piece not in corpus and not set(WORD.findall(piece)) <= words
            ]
            if missing:
                line = text.count("\n", 0, match.start()) + 1
                yield (
                    f"{relative.as_posix()}:{line}: status {match.group(1)} "
                    f"`{match.group(2)}` is not in {charm}'s code ({missing[0]!r})"
                )


def pieces(status: str) -> list[str]:
    """The literal pieces of a quoted status long enough to be checked."""
    parts = (part.strip(" ;,:") for part in VARIABLE.split(status))
    return [part for part in parts if len(part) >= MIN_PIECE]


def code_strings(*roots: pathlib.Path) -> str:
    """The charm's string literals that can be status text, one per line.

    f-strings' literal parts count; docstrings and the arguments of log calls do not: a log
    line or a docstring must not vouch for a status the code no longer sets.
    """
    found: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if SKIP.intersection(path.relative_to(root).parts):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            left_out = {id(node) for node in _docstrings(tree)} | {
                id(node) for call in _log_calls(tree) for node in ast.walk(call)
            }
            found += [
                node.value
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in left_out
            ]
    return "\n".join(found)


def _docstrings(tree: ast.Module) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                yield first.value


def _log_calls(tree: ast.Module) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr in LOG_METHODS:
            target = func.value
            if isinstance(target, ast.Name) and target.id in ("logger", "logging"):
                yield node  # type: ignore[misc]
