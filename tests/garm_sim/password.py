"""GARM's first-run password rule: zxcvbn score 4 as GARM's Go zxcvbn computes it.

GARM scores with an old Go port of zxcvbn: the password's entropy is the cheapest way to cover
it with matches (dictionary words, keyboard walks, repeats, sequences, dates) and brute-forced
characters, and score 4 means a crack time of at least 10^8 s at 10^4 guesses per second, that
is `0.5 * 2^entropy >= 10^12`. The Python `zxcvbn` package finds the matches; its own score uses
a newer model (it disagrees with GARM on about a third of a table of passwords, short random
strings and multi-word phrases mostly), so only its matchers are used here and the entropies
follow the Go port. The contract suite proves this rule against real GARM on a table.
"""

from __future__ import annotations

import math
import re
from typing import Any, cast

from zxcvbn import matching, scoring  # pyright: ignore[reportMissingTypeStubs]

# 0.5 * 2^entropy * 10^-4 s >= 10^8 s.
STRONG_ENTROPY = math.log2(2e12)
_START_UPPER = re.compile(r"^[A-Z][^A-Z]+$")
_ALL_UPPER = re.compile(r"^[A-Z]+$")
_YEARS = 119
_SHORT_YEARS = 100
_KEYBOARDS = ("qwerty", "dvorak")

Match = dict[str, Any]


def is_strong(password: str) -> bool:
    """Return whether GARM's first-run accepts the password (Go zxcvbn score 4)."""
    return entropy(password) >= STRONG_ENTROPY


def entropy(password: str) -> float:
    """Return the minimum entropy of the password in bits, as GARM's Go zxcvbn computes it."""
    if not password:
        return 0.0
    per_char = math.log2(cardinality(password))
    found = _matches(password)
    best: list[float] = []
    for end in range(len(password)):
        cost = (best[end - 1] if end else 0.0) + per_char
        for match in found:
            if match["j"] != end:
                continue
            bits = match_entropy(match)
            if bits is not None:
                start = int(match["i"])
                cost = min(cost, (best[start - 1] if start else 0.0) + bits)
        best.append(cost)
    return best[-1]


def cardinality(password: str) -> int:
    """Return the brute-force alphabet size: 26 lower, 26 upper, 10 digits, 33 others."""
    classes = {
        26 if c.islower() else 10 if c.isdigit() else 27 if c.isupper() else 33 for c in password
    }
    # 27 only keeps upper apart from lower in the set; both count 26.
    return sum(26 if size == 27 else size for size in classes)


def match_entropy(match: Match) -> float | None:
    """Return a match's entropy in bits, or None for matches the Go port does not make."""
    pattern = match["pattern"]
    token = str(match["token"])
    if pattern == "dictionary":
        return None if match.get("reversed") else _dictionary(match, token)
    if pattern == "repeat":
        return (
            math.log2(cardinality(token) * len(token)) if len(match["base_token"]) == 1 else None
        )
    if pattern == "sequence":
        return _sequence(token, bool(match["ascending"]))
    if pattern == "spatial":
        return _spatial(match, token)
    if pattern == "date":
        return _date(match)
    return None


def _matches(password: str) -> list[Match]:
    return cast("list[Match]", matching.omnimatch(password))  # pyright: ignore[reportUnknownMemberType]


def _dictionary(match: Match, token: str) -> float:
    bits = math.log2(int(match["rank"])) + _upper(token)
    if match.get("l33t"):
        original = str(match["matched_word"])
        subs = sum(a != b for a, b in zip(token.lower(), original, strict=False))
        bits += _choose_up_to(len(token), subs, len(token) - subs, extra=1)
    return bits


def _upper(token: str) -> float:
    if not any(c.isupper() for c in token):
        return 0.0
    if _START_UPPER.match(token) or _ALL_UPPER.match(token):
        return 1.0
    upper = sum(c.isupper() for c in token)
    lower = sum(c.islower() for c in token)
    return _choose_up_to(upper + lower, upper, lower)


def _choose_up_to(total: int, first: int, second: int, extra: int = 0) -> float:
    possibilities = sum(math.comb(total, i) for i in range(min(first, second) + 1 + extra))
    return math.log2(possibilities) if possibilities > 1 else 1.0


def _sequence(token: str, ascending: bool) -> float:
    first = token[0]
    base = 0.0
    if first not in "a1":
        base = math.log2(10 if first.isdigit() else 26) + (1 if first.isupper() else 0)
    return base + (0 if ascending else 1) + math.log2(len(token))


def _spatial(match: Match, token: str) -> float:
    keyboard = match["graph"] in _KEYBOARDS
    starts = float(
        scoring.KEYBOARD_STARTING_POSITIONS if keyboard else scoring.KEYPAD_STARTING_POSITIONS  # pyright: ignore[reportUnknownMemberType]
    )
    degree = float(
        scoring.KEYBOARD_AVERAGE_DEGREE if keyboard else scoring.KEYPAD_AVERAGE_DEGREE  # pyright: ignore[reportUnknownMemberType]
    )
    turns = int(match["turns"])
    length = len(token)
    possibilities = sum(
        math.comb(i - 1, j - 1) * starts * degree**j
        for i in range(2, length + 2)
        for j in range(1, min(turns, i - 1) + 2)
    )
    bits = math.log2(possibilities)
    shifted = int(match.get("shifted_count", 0))
    if shifted:
        bits += math.log2(
            sum(math.comb(length, i) for i in range(min(shifted, length - shifted) + 1))
        )
    return bits


def _date(match: Match) -> float:
    years = _SHORT_YEARS if int(match["year"]) < _SHORT_YEARS else _YEARS
    return math.log2(31 * 12 * years) + (2 if match.get("separator") else 0)
