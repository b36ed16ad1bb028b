"""GitHub's "deleted" verdict takes two answers, at least one check apart (ADR 0029).

A scale set GitHub named missing is created again under a new name and the old one retired,
and GARM is restarted for a dropped set whose delete it keeps: both act on one lookup's
`count: 0`, which an eventually consistent answer or a passing fault at GitHub can give for a
scale set that is still there. So the first answer is only noted (when), and a set is named
missing once GitHub has answered so again at a later check, at least `CHECK_EVERY` after the
first; a check that does not name it (GitHub has it, or could not be asked) forgets the note.

Pure, but for the sightings the charm keeps between hooks (as JSON).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from scaleset_reconciler import GithubScaleSetRef

Sightings = dict[int, datetime.datetime]


def confirm(
    sightings: Mapping[int, datetime.datetime],
    named: frozenset[int],
    now: datetime.datetime,
    every: datetime.timedelta,
) -> tuple[frozenset[int], Sightings]:
    """The scale sets GitHub has named missing for `every` at least, and the sightings kept.

    Args:
        sightings: GARM's scale set id -> when GitHub first named it missing, in the checks
            since (every one of them naming it).
        named: the ids this check's answers name missing.
        now: the time of this check.
        every: the shortest time between the first answer and the one that confirms it.

    Returns:
        The confirmed ids, and the sightings to keep: only those named in this check.
    """
    kept = {scaleset: _first(sightings.get(scaleset), now) for scaleset in named}
    confirmed = frozenset(scaleset for scaleset, first in kept.items() if now - first >= every)
    return confirmed, kept


def _first(seen: datetime.datetime | None, now: datetime.datetime) -> datetime.datetime:
    # A sighting in the future (the clock was set back) starts again from now.
    return seen if seen is not None and seen <= now else now


@dataclasses.dataclass
class ConfirmedCheck:
    """A `missing_at_github` check that names only confirmed scale sets.

    Attributes:
        check: the check asking GitHub (`scalesets.ScaleSetCheck`).
        sightings: as `confirm` takes them; replaced by the kept ones once asked.
        now: the time of this check.
        every: as `confirm` takes it.
    """

    check: Callable[[Sequence[GithubScaleSetRef]], frozenset[int]]
    sightings: Sightings
    now: datetime.datetime
    every: datetime.timedelta

    def __call__(self, refs: Sequence[GithubScaleSetRef]) -> frozenset[int]:
        """Ask GitHub, note what it names missing; return the confirmed ids."""
        confirmed, self.sightings = confirm(self.sightings, self.check(refs), self.now, self.every)
        return confirmed


def sightings_from_json(text: str) -> Sightings:
    """The sightings as the charm kept them; unreadable ones are dropped (none noted)."""
    try:
        loaded: object = json.loads(text or "{}")
    except ValueError:
        return {}
    if not isinstance(loaded, dict):
        return {}
    found: Sightings = {}
    for key, value in cast(dict[object, object], loaded).items():
        moment = _moment(value)
        if isinstance(key, str) and key.isascii() and key.isdigit() and moment is not None:
            found[int(key)] = moment
    return found


def sightings_to_json(sightings: Mapping[int, datetime.datetime]) -> str:
    """The sightings as the charm keeps them."""
    return json.dumps({str(key): value.isoformat() for key, value in sorted(sightings.items())})


def _moment(value: object) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
