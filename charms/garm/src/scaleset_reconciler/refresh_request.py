"""The refresh-runners action: start a rolling refresh without a change GARM can see.

A re-pushed image under the same name leaves every runner outdated while nothing about the
scale set differs. The request is written where the refresh itself reads it, the live scale
set's marker in GARM (`refresh-from` = now, ADR 0022), so it survives charm, hook and GARM
restarts, and the next pass replaces the runners as after an image change.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Protocol

from garm_api.models import ScaleSet, ScaleSetUpdate
from scaleset_reconciler.marker import Marker, parse_marker, serves


class RefreshRequestApi(Protocol):
    """The `GarmClient` calls a refresh request makes."""

    def list_scalesets(self) -> list[ScaleSet]:
        """Return every scale set."""
        ...

    def update_scaleset(self, scaleset_id: int, params: ScaleSetUpdate) -> ScaleSet:
        """Update a scale set's mutable fields."""
        ...


class UnknownScaleset(LookupError):
    """No serving scale set of the charm has the logical name asked for."""


def request_refresh(
    api: RefreshRequestApi, logical: str | None, *, now: datetime.datetime
) -> list[str]:
    """Mark the serving scale sets of `logical` (None: all the charm's) for a full refresh.

    Only live, enabled, not retired scale sets of this charm are marked: a retired one is
    draining and will be deleted, a hand-made one is never touched.

    Returns:
        The logical names of the scale sets marked, sorted.

    Raises:
        UnknownScaleset: `logical` names no serving scale set of the charm.
        GarmUnreachable, GarmApiError: GARM did not answer or refused; nothing more was sent.
    """
    marked: list[str] = []
    for scaleset, marker in _serving(api.list_scalesets()):
        if logical is not None and marker.logical != logical:
            continue
        forced = dataclasses.replace(marker, refresh_from=now)
        api.update_scaleset(scaleset.id, ScaleSetUpdate(extended_state=forced.render()))
        marked.append(marker.logical)
    if logical is not None and not marked:
        raise UnknownScaleset(f"no serving scale set is named {logical!r}: see list-scalesets")
    return sorted(marked)


def _serving(scalesets: list[ScaleSet]) -> list[tuple[ScaleSet, Marker]]:
    found: list[tuple[ScaleSet, Marker]] = []
    for scaleset in scalesets:
        marker = parse_marker(scaleset.extended_state)
        if marker is not None and serves(scaleset, marker):
            found.append((scaleset, marker))
    return found
