"""The offline check's removals count against `max-writes-per-pass` (ADR 0038, ADR 0040).

The whole object pass runs (`reconcile_objects`) against the in-memory GARM: the scale-set pass,
then the check of runners GitHub shows offline, whose GitHub answer is a stand-in that names
every idle runner offline (the check itself is proven against the fake GitHub in
`test_offline_runners.py`). The GitHub objects and templates are stand-ins that write nothing.
Every check counts the writes GARM received.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doubles.memory_garm import WRITE_OPERATIONS, MemoryGarm
from garm_api.models import EntityKind
from reconcile import garm_objects
from reconcile.desired_state import DesiredState
from reconcile.github.offline_runners import (
    MAX_REMOVALS,
    OFFLINE_AFTER,
    IdleRunner,
    Sighting,
    bound_share,
    removals_left,
)
from reconcile.github_objects import GithubReport
from reconcile.templates import TemplateReport
from scaleset_reconciler.needs import entity_key
from unit.walks.scalesets import SETTINGS, converge, make_spec
from workload.config import ProxyConfig

OLD = ("x64", "linux")
NEW = ("x64", "linux", "gpu")
NAMES = ("a", "b", "c", "d", "e")


class _AllOffline:
    """Stands for `OfflineCheck`: GitHub lists every idle runner asked about offline."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        del args, kwargs

    def __call__(self, runners: Sequence[IdleRunner]) -> Sighting:
        return Sighting(
            frozenset(r.name for r in runners),
            frozenset(entity_key(EntityKind.REPOSITORY, r.entity_name) for r in runners),
        )


@pytest.fixture
def quiet_github(monkeypatch: pytest.MonkeyPatch) -> None:
    """GitHub objects and templates already as wanted; the offline check's answer stood in."""
    monkeypatch.setattr(garm_objects, "reconcile_github", lambda *a, **k: GithubReport())
    monkeypatch.setattr(garm_objects, "sync_templates", lambda *a, **k: TemplateReport())
    monkeypatch.setattr(garm_objects, "OfflineCheck", _AllOffline)


def _fleet(labels: tuple[str, ...]) -> list[Any]:
    return [
        make_spec(name, labels, min_idle_runners=2, max_runners=4, application="cfg")
        for name in NAMES
    ]


def _pass(
    garm: MemoryGarm, specs: list[Any], since: dict[str, str], bound: int
) -> tuple[list[str], int]:
    """One object pass with the check due; GARM's writes, and how many runners it removed."""
    start = len(garm.log)
    desired = DesiredState(specs=tuple(specs), waiting=("another-configurator",))
    outcome = garm_objects.reconcile_objects(
        garm,  # pyright: ignore[reportArgumentType]  # the stand-ins make the GitHub calls
        desired,
        now=garm.now,
        settings=dataclasses.replace(SETTINGS, max_writes=bound),
        proxy=ProxyConfig(),
        offline_since=since,
    )
    writes = [c.operation for c in garm.log[start:] if c.operation in WRITE_OPERATIONS]
    assert outcome.offline is not None
    return writes, len(outcome.offline.removed)


@pytest.mark.parametrize("bound", [10, 4])
def test_a_pass_that_reaps_offline_runners_stays_within_its_bound(quiet_github: None, bound: int):
    """Arrange: 5 sets (min idle 2) converged; every idle runner offline past the bound.

    At most `bound` writes a pass. Act: relabel all (5 creates want 10 writes), one pass with
    the check.

    Assert: GARM received at most `bound` writes, the offline removals among them at least the
    share the pass kept for them (so they do not wait out the change), and creates the rest.
    """
    garm = MemoryGarm()
    converge(garm, _fleet(OLD))
    garm.advance(61)
    garm.advance(61)
    first = garm.now - OFFLINE_AFTER - datetime.timedelta(minutes=1)
    since = {name: first.isoformat() for name in garm.runners}

    writes, removed = _pass(garm, _fleet(NEW), since, bound)

    assert len(writes) <= bound, writes
    assert MAX_REMOVALS >= removed >= bound_share(bound) > 0
    assert writes.count("delete_instance") == removed
    assert writes.count("create_scaleset") >= 1


@given(st.integers(0, 2_000), st.integers(0, 2_000))
def test_the_share_and_what_is_left_never_pass_the_bound(max_writes: int, written: int):
    """Arrange: any bound and any writes of a pass kept within its share. Act: the split.

    Assert: the pass and the removals together stay within the bound; the removals get at
    least the share kept for them; a bounded pass never becomes unbounded (0).
    """
    share = bound_share(max_writes)
    if max_writes:
        written = min(written, max_writes - share)

    left = removals_left(max_writes, written)

    assert 0 <= left <= MAX_REMOVALS
    if max_writes:
        assert written + left <= max_writes
        assert left >= share
        assert max_writes - share >= min(max_writes, 2)
    else:
        assert (share, left) == (0, MAX_REMOVALS)
