"""The words every `juju status` text is built with: its limit, fitting, cutting, names, times.

A ground-floor package: it imports nothing of the charm (an import-linter contract), so every
layer words its status the same way without reaching into another layer for it. Every text
meant for `juju status` is at most `STATUS_LIMIT` characters: names are shortened, entries that
do not fit are counted (`+N more`), a text too long on its own is cut, and the details go to
the log and to the actions. `status_text.docs_links` has the published pages a text may link.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Final

STATUS_LIMIT: Final = 120
# A name longer than this is cut in status texts (the log and the action have it whole).
NAME_LIMIT: Final = 24


def fit(
    entries: Sequence[str], separator: str, *, most: int | None = None, limit: int = STATUS_LIMIT
) -> str:
    """Join `entries` while they fit in `limit` characters, then say how many more there are.

    An entry too long on its own is cut (ending in "..."); `most` caps how many are named.
    """
    entries = [entry for entry in entries if entry]
    kept: list[str] = []
    for index, entry in enumerate(entries):
        rest = len(entries) - index - 1
        tail = f"{separator}+{rest} more" if rest else ""
        if most is not None and index >= most:
            break
        if len(separator.join([*kept, entry])) + len(tail) > limit:
            if not kept:
                kept.append(cut(entry, limit - len(tail)))
            break
        kept.append(entry)
    more = len(entries) - len(kept)
    text = separator.join(kept)
    return f"{text}{separator}+{more} more" if more else text


def short_name(name: str) -> str:
    """Return `name` quoted, at most `NAME_LIMIT` characters of it kept for a status text.

    A long name loses its middle, not its end: generated names often differ only at the end.
    """
    if len(name) <= NAME_LIMIT:
        return repr(name)
    head = (NAME_LIMIT - 3) // 2
    return repr(f"{name[:head]}...{name[-(NAME_LIMIT - 3 - head) :]}")


def clock_time(moment: datetime.datetime) -> str:
    """Return `14:05 UTC`: the absolute time operators compare with their clock."""
    return moment.astimezone(datetime.UTC).strftime("%H:%M UTC")


def cut(text: str, length: int) -> str:
    """Return `text`, or its first `length` characters ending in '...' when it is longer."""
    return text if len(text) <= length else text[: max(0, length - 3)].rstrip() + "..."
