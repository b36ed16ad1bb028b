"""Status texts quoted in the docs must exist in the code (run by `scripts/check_docs.py`).

A quoted status is a code span after a status name, as the docs write them: Blocked `text`,
Waiting `text`, Maintenance `text`, Active `text` (also in a table cell). The text is cut at
what the docs write for a variable part (`<name>`, `...`, a quoted name such as `'small'`,
numbers and times); every literal piece of 8 characters or more must occur in a string literal
of the garm charm's code (an f-string's literal parts included), or, where the code builds it
from parts, every word of it must. The code is read afresh each run, so a status another change
adds is known without a list to update.
"""

from __future__ import annotations

import ast
import pathlib
import re
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parent.parent
CODE = ROOT / "charms" / "garm" / "src"
SKIP = {"garm_client"}
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
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
    corpus = code_strings()
    words = set(WORD.findall(corpus))
    for path in DOCS:
        if any(part in HISTORY for part in path.relative_to(ROOT).parts):
            continue
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
                    f"{path.relative_to(ROOT).as_posix()}:{line}: status "
                    f"{match.group(1)} `{match.group(2)}` is not in the code ({missing[0]!r})"
                )


def pieces(status: str) -> list[str]:
    """The literal pieces of a quoted status long enough to be checked."""
    parts = (part.strip(" ;,:") for part in VARIABLE.split(status))
    return [part for part in parts if len(part) >= MIN_PIECE]


def code_strings() -> str:
    """Every string literal of the charm's code, one per line (f-strings' literal parts too)."""
    found: list[str] = []
    for path in sorted(CODE.rglob("*.py")):
        if SKIP.intersection(path.relative_to(CODE).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append(node.value)
    return "\n".join(found)
