"""End to end: GitHub drops the live scale set; the charm recreates it and cleans the old one up.

GitHub deletes a scale set whose listener stayed offline for days (garm-behaviour B33). Real
GARM shows nothing of it on its API, keeps listening in vain, and keeps the set through every
delete until a restart has created it again at GitHub. The charm asks GitHub itself, where GARM
asks (ADR 0029): here the whole charm runs hook after hook against each real GARM binary and the
fake GitHub, which forgets the live scale set.

The charm asks GitHub once a quarter hour, and takes GitHub's word that a set is gone only
when two checks a quarter hour apart say so; the test stands for the quarter hour passing by
clearing the time of the last question the charm kept and moving the first answers it noted a
quarter hour back, and waits for everything else for real.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Mapping
from typing import Any

import pytest
from ops import testing

from e2e import test_garm_machine as machine_walk
from e2e.conftest import SQLITE_CASES, Case, available_case
from e2e.test_garm_machine import (
    Walk,
    install_and_bootstrap,
    point_github_at_the_fake,
    relate_configurator,
)
from garm_api import ScaleSet

# The walk's fixtures, shared with test_garm_machine.py (pytest finds them by these names).
github = machine_walk.github
database = machine_walk.database
unused_port = machine_walk.unused_port
walk = machine_walk.walk

ASKED_AT = "github_scalesets_asked_at"
MISSING_SINCE = "github_missing_since"
QUARTER_HOUR = datetime.timedelta(minutes=15)


@pytest.fixture(params=SQLITE_CASES)
def case(request: pytest.FixtureRequest) -> Case:
    """Each GARM binary on SQLite (the backend does not change what GitHub does)."""
    return available_case(request.param)


def test_a_live_set_github_dropped_is_replaced_and_the_old_one_deleted(walk: Walk):
    """Arrange: the charm runs GARM with configurator `small` served; GitHub drops its set.

    Act: a quarter hour later (the charm's next question to GitHub), a hook; a quarter hour
    after that, hooks until the new set serves and the old one's delete was kept; a quarter
    hour later and another, hooks.

    Assert: GitHub's first answer changes nothing; at the second the charm creates a new set
    under a new name, which GARM creates at GitHub, and says why in its status; the old set is
    retired, and GARM keeps it through a delete; GitHub confirms it gone, so the charm restarts
    GARM once; the old set is then deleted, the new one serves with an idle runner,
    and the status is Active again.
    """
    install_and_bootstrap(walk)
    point_github_at_the_fake(walk)
    first = relate_configurator(walk)
    restarts = walk.machine.restarts()
    walk.github.drop_scale_set(first.github_scale_set_id)

    ask_again(walk)
    walk.hook(walk.ctx.on.update_status())
    after_one_answer = names(walk)
    ask_again(walk)
    walk.hook(walk.ctx.on.update_status())
    said = walk.statuses[-1]
    new = next(s for s in walk.scalesets() if s.name != first.name)
    walk.update_status_until(lambda: old_retired_and_kept(walk, first), "the old set kept")
    kept_restarts = walk.machine.restarts()
    # Every check since the first named the old set missing; a second one confirms it anew
    # if a check in between had not asked about it.
    ask_again(walk)
    walk.hook(walk.ctx.on.update_status())
    ask_again(walk)
    walk.update_status_until(lambda: names(walk) == [new.name], "the old set deleted")
    walk.update_status_until(
        lambda: (
            [i.runner_status for i in walk.client().list_scaleset_instances(new.id)] == ["idle"]
        ),
        "the new set's idle runner",
    )

    assert after_one_answer == [first.name], "one answer from GitHub replaces nothing"
    assert "GitHub dropped its scale set; creating a new one" in said
    assert new.normalised_labels == first.normalised_labels
    assert new.enabled
    assert new.github_scale_set_id in walk.github.scale_sets
    assert kept_restarts == restarts, "no restart before GitHub confirmed the old set gone"
    assert walk.machine.restarts() == restarts + 1, "one restart, for the dropped set"
    assert walk.state.unit_status == testing.ActiveStatus("")


def ask_again(walk: Walk) -> None:
    """Forget when the charm last asked GitHub and age its first answers: a quarter hour on."""
    stored = [s for s in walk.state.stored_states if ASKED_AT in s.content]
    assert stored, "the charm keeps when it last asked GitHub"
    updated = {
        dataclasses.replace(s, content=quarter_hour_later(s.content)) if s in stored else s
        for s in walk.state.stored_states
    }
    walk.state = dataclasses.replace(walk.state, stored_states=frozenset(updated))


def quarter_hour_later(content: Mapping[str, Any]) -> dict[str, Any]:
    """The charm's stored content, no last question kept, its first answers 15 minutes older."""
    noted = json.loads(str(content.get(MISSING_SINCE) or "{}"))
    aged = {
        scaleset: (datetime.datetime.fromisoformat(since) - QUARTER_HOUR).isoformat()
        for scaleset, since in noted.items()
    }
    return {**content, ASKED_AT: "", MISSING_SINCE: json.dumps(aged)}


def old_retired_and_kept(walk: Walk, old: ScaleSet) -> bool:
    """The old set is disabled, has no runner, and GARM kept it through a delete."""
    current = {s.name: s for s in walk.scalesets()}
    if old.name not in current or current[old.name].enabled:
        return False
    if walk.client().list_scaleset_instances(old.id):
        return False
    return '"delete-failures"' in current[old.name].extended_state


def names(walk: Walk) -> list[str]:
    """The scale sets' names, oldest first."""
    return [s.name for s in walk.scalesets()]
