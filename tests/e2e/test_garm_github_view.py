"""End to end: GitHub's view beside GARM's, and an idle runner GitHub shows offline reaped.

The whole charm runs hook after hook against each real GARM binary and the fake GitHub
(ADR 0040, 0041). The charm asks GitHub about scale sets once a quarter hour and about offline
runners every 5 minutes; the test stands for that time passing by clearing the times the charm
kept, and for the 15 minutes a runner must stay offline by moving its kept sighting back.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

import pytest

from e2e import test_garm_machine as machine_walk
from e2e.conftest import SQLITE_CASES, Case, available_case
from e2e.test_garm_machine import (
    Walk,
    install_and_bootstrap,
    point_github_at_the_fake,
    relate_configurator,
)

# The walk's fixtures, shared with test_garm_machine.py (pytest finds them by these names).
github = machine_walk.github
database = machine_walk.database
unused_port = machine_walk.unused_port
walk = machine_walk.walk


@pytest.fixture(params=SQLITE_CASES)
def case(request: pytest.FixtureRequest) -> Case:
    """Each GARM binary on SQLite."""
    return available_case(request.param)


def test_githubs_view_and_an_offline_runner_reaped_on_real_garm(walk: Walk):
    """Arrange: the charm runs GARM with configurator `small` served by one idle runner.

    Act: a quarter hour later, a hook; GitHub then has 2 jobs waiting, another quarter hour, a
    hook; GitHub shows the idle runner offline, a check 5 minutes later, then its sighting
    made 20 minutes old and a further check.

    Assert: the first view agrees (one runner idle at GitHub and in GARM, nothing waiting);
    the second shows the 2 jobs waiting and a disagreement (jobs wait while GARM has an idle
    runner); the offline runner is sighted, then removed through GARM, which replaces it.
    """
    install_and_bootstrap(walk)
    point_github_at_the_fake(walk)
    live = relate_configurator(walk)
    walk.update_status_until(lambda: idle(walk, live.id) != [], "an idle runner")
    (runner,) = idle(walk, live.id)

    due(walk, github_scalesets_asked_at="")
    walk.hook(walk.ctx.on.update_status())
    (agreed,) = kept(walk, "github_view").values()
    walk.github.set_waiting_jobs(live.github_scale_set_id, 2)
    due(walk, github_scalesets_asked_at="")
    walk.hook(walk.ctx.on.update_status())
    (waiting,) = kept(walk, "github_view").values()

    walk.github.set_offline(runner)
    due(walk, offline_checked_at="")
    walk.hook(walk.ctx.on.update_status())
    sighted = kept(walk, "offline_since")
    long_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=20)
    due(walk, offline_checked_at="", offline_since=json.dumps({runner: long_ago.isoformat()}))
    walk.hook(walk.ctx.on.update_status())
    walk.update_status_until(lambda: runner not in names(walk, live.id), "the runner removed")
    walk.update_status_until(lambda: idle(walk, live.id) != [], "a new idle runner")

    assert (agreed["runners_idle"], agreed["garm_idle"], agreed["jobs_waiting"]) == (1, 1, 0)
    assert agreed["disagree"] is False
    assert (waiting["jobs_waiting"], waiting["disagree"]) == (2, True)
    assert waiting["waiting_since"] != ""
    assert list(sighted) == [runner]
    assert kept(walk, "offline_since") == {}


def idle(walk: Walk, scaleset_id: int) -> list[str]:
    """The scale set's idle runners in GARM."""
    return [
        i.name
        for i in walk.client().list_scaleset_instances(scaleset_id)
        if (i.status, i.runner_status) == ("running", "idle")
    ]


def names(walk: Walk, scaleset_id: int) -> list[str]:
    """The scale set's runners in GARM."""
    return [i.name for i in walk.client().list_scaleset_instances(scaleset_id)]


def kept(walk: Walk, key: str) -> Any:
    """A JSON value the charm keeps in its stored state."""
    (stored,) = [s for s in walk.state.stored_states if key in s.content]
    return json.loads(str(stored.content[key]))


def due(walk: Walk, **content: str) -> None:
    """Overwrite what the charm keeps, as time passing would make its checks due."""
    updated = {
        dataclasses.replace(s, content={**s.content, **content})
        if any(key in s.content for key in content)
        else s
        for s in walk.state.stored_states
    }
    walk.state = dataclasses.replace(walk.state, stored_states=frozenset(updated))
