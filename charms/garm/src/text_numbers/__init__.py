r"""The one reading of a number from text, for everything the charm is given (ADR 0034).

Config options, relation fields, action parameters, and what the charm reads back from its own
files and from download headers, are read here and nowhere else. Only ASCII digits count:
`str.isdigit()` is true for "²", which `int()` refuses, and `int()` and `\d` both read "٣"
(Arabic-Indic three), which no operator means. No sign, no spaces, no `_` (all of which `int()`
takes). A text longer than any number in range is refused before `int()` sees it (`int()`
raises past 4,300 digits). Errors are `ValueError`s that never echo the value.

The relation library (`charms.garm_configurator.v0`) carries the same rule for the fields it
validates, in both charms (`parse_whole_number` there): a Charmhub library must stand alone.
tests/unit/text_numbers/test_text_numbers.py proves the two read every text alike.
"""

from __future__ import annotations

import datetime
import re
from typing import Final

ASCII_DIGITS: Final = frozenset("0123456789")
# At most 9 digits per unit: no arithmetic on a huge number, no OverflowError in timedelta.
_DURATION: Final = re.compile(
    r"(?:(?P<h>[0-9]{1,9})h)?(?:(?P<m>[0-9]{1,9})m)?(?:(?P<s>[0-9]{1,9})s)?", re.ASCII
)


def is_whole_number(text: object) -> bool:
    """Whether `text` is a non-empty string of ASCII digits only."""
    return isinstance(text, str) and bool(text) and set(text) <= ASCII_DIGITS


def parse_whole_number(text: object, *, minimum: int = 0, maximum: int) -> int:
    """Read a whole number of ASCII digits from `minimum` to `maximum`.

    Raises:
        ValueError: not digits 0-9 only, or outside the range; the message gives the range.
    """
    if not is_whole_number(text) or len(str(text)) > len(str(maximum)) + 2:
        raise ValueError(f"must be a whole number {minimum}-{maximum} (digits 0-9)")
    value = int(str(text))
    if not minimum <= value <= maximum:
        raise ValueError(f"must be {minimum}-{maximum}")
    return value


def parse_duration(
    value: str,
    maximum: datetime.timedelta,
    *,
    zero: bool = False,
    minimum: datetime.timedelta | None = None,
) -> datetime.timedelta:
    """Read a duration such as "7h", "90m", "60s" or "1h30m", at most `maximum`.

    "0" is read too when `zero`; any other duration must be at least `minimum` when given.

    Raises:
        ValueError: not such a duration, zero (unless `zero`), shorter than `minimum` or
            longer than `maximum`.
    """
    text = value.strip()
    if zero and text == "0":
        return datetime.timedelta(0)
    match = _DURATION.fullmatch(text)
    if not text or match is None:
        raise ValueError("must be a duration such as 7h, 90m or 60s")
    parts = {unit: int(amount or 0) for unit, amount in match.groupdict().items()}
    seconds = parts["h"] * 3600 + parts["m"] * 60 + parts["s"]
    if seconds <= 0 and not zero:
        raise ValueError("must be longer than zero")
    if minimum is not None and 0 < seconds < minimum.total_seconds():
        least = _spelled(minimum)
        raise ValueError(f"must be 0 or at least {least}" if zero else f"must be at least {least}")
    if seconds > maximum.total_seconds():
        raise ValueError(f"must be at most {int(maximum.total_seconds()) // 3600}h")
    return datetime.timedelta(seconds=seconds)


def _spelled(duration: datetime.timedelta) -> str:
    """A duration as the options spell it: 10m, 30s, 2h."""
    seconds = int(duration.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"
