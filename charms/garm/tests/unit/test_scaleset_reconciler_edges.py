"""The scale-set reconciler's less common paths, against the in-memory GARM.

Refusals in the middle of a pass, deletes GARM keeps, unconfigured scale sets, templates,
names GitHub still holds, the log, and the read-only preview: each pinned by what GARM was
asked and what the report and status say.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from typing import Any

import pytest
from scaleset_fixtures import SETTINGS, converge, make_spec, run

from doubles.memory_garm import MemoryGarm
from garm_api import GarmBadRequest, ScaleSet, ScaleSetCreate, Template
from scaleset_reconciler import (
    Phase,
    ReconcileReport,
    ReconcileSettings,
    blocked_message,
    preview,
    retry_message,
    status_message,
)
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.report import Failure
from scaleset_reconciler.spec import ScalesetSpec
from status_text import short_name

NEW_LABELS = ("x64", "gpu")
REFUSED = "HTTP 400 refused: fault injected by the test"


def retired(garm: MemoryGarm) -> tuple[str, str]:
    """Converge `small`, change its labels, hand over; return (old, new) scale-set names."""
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    return live_name(make_spec()), live_name(make_spec(labels=NEW_LABELS))


def orphaned(garm: MemoryGarm) -> str:
    """Converge `gone`, then drop its spec and retire it; return its scale set's name."""
    converge(garm, [make_spec("gone")])
    run(garm, [])
    garm.advance(1)
    return live_name(make_spec("gone"))


def counted_pass(garm: MemoryGarm, specs: list[ScalesetSpec]) -> ReconcileReport:
    """One pass whose report must count exactly the calls and writes GARM saw."""
    calls, writes = len(garm.calls), len(garm.writes())
    report = run(garm, specs)
    assert (report.requests, report.writes) == (
        len(garm.calls) - calls,
        len(garm.writes()) - writes,
    )
    return report


def at(moment: datetime.datetime) -> str:
    """The retry time as the error text writes it."""
    return f"{moment:%H:%M:%S} UTC"


# Refusals within a pass -------------------------------------------------------------------


def test_one_owners_refusal_skips_only_its_own_later_actions():
    """Arrange: `a` past its grace with its live set's image changed too, `b` changed as well.

    Act: a pass in which GARM refuses the first update (the image of `a`'s live set).
    Assert: `a`'s later action (retiring its old set) is not sent; `b`'s update is; the error
    is `a`'s message and phase.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("a"), make_spec("b")])
    run(garm, [make_spec("a", labels=NEW_LABELS), make_spec("b")])
    garm.advance(60)
    garm.refuse("update_scaleset", 400)
    garm.calls.clear()
    live_a = live_name(make_spec("a", labels=NEW_LABELS))

    report = run(
        garm,
        [make_spec("a", labels=NEW_LABELS, image="ubuntu:24.04"), make_spec("b", max_runners=5)],
    )

    ids = [call[1][0] for call in garm.writes()]
    assert ids == [garm.by_name(live_a).id, garm.by_name(live_name(make_spec("b"))).id]
    assert garm.by_name(live_name(make_spec("a"))).enabled
    assert garm.by_name(live_name(make_spec("b"))).max_runners == 5
    spec = report.spec("a")
    assert spec.phase is Phase.ERROR
    assert spec.message == f"updating {live_a!r}: update_scaleset: {REFUSED}"
    assert spec.errors == [spec.message]
    assert report.spec("b").phase is Phase.ACTIVE


def test_a_refused_forced_removal_does_not_stop_the_next():
    """Arrange: two jobs on a retired set at its drain deadline; GARM refuses the first remove.

    Act: a pass. Assert: the second runner is still removed, forced; the refusal is reported
    as a Blocked failure; the report counts both removes as writes.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    old = live_name(make_spec())
    row = garm.rows[garm.by_name(old).id]
    row.desired_runner_count = 1  # GitHub's queue holds a second job
    jobs = [garm.start_job_when_ready(row.id) for _ in range(2)]
    row.desired_runner_count = 0
    assert None not in jobs
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(7 * 3600)
    garm.refuse("delete_instance", 400)

    report = counted_pass(garm, [make_spec(labels=NEW_LABELS)])

    assert [call[1] for call in garm.writes()[-2:]] == [(jobs[0], True), (jobs[1], True)]
    assert garm.runners[str(jobs[1])].status == "pending_force_delete"
    assert report.writes == 2
    assert report.failures == [Failure("small", "remove a runner of", 400)]
    assert report.spec("small").errors == [
        f"removing runner {jobs[0]!r} of {old!r}: delete_instance: {REFUSED}"
    ]
    assert blocked_message(report) == (
        "GARM refused to remove a runner of 'small' (HTTP 400): see juju debug-log"
    )


class GentleByDefault(MemoryGarm):
    """A GARM client whose removal is not forced unless asked (GARM's own default)."""

    def delete_instance(self, name: str, *, force: bool = False) -> None:
        """DELETE /instances/{name}, forceRemove only when asked."""
        super().delete_instance(name, force=force)


def test_a_removal_at_the_drain_deadline_asks_for_force_itself():
    """Arrange: a job on a retired set at its deadline, a client that forces only when asked.

    Act: a pass. Assert: the remove was sent with force (a job runs on it: only a forced
    removal takes it, garm-behaviour B18).
    """
    garm = GentleByDefault()
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    job = garm.start_job_when_ready(garm.by_name(live_name(make_spec())).id)
    garm.advance(60)
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(7 * 3600)

    run(garm, [make_spec(labels=NEW_LABELS)])

    assert ("delete_instance", (job, True)) in garm.calls
    assert garm.runners[str(job)].status == "pending_force_delete"


def test_every_write_of_a_busy_pass_is_counted():
    """Arrange: an empty GARM. Act: a pass creating three scale sets, one with a template.

    Assert: the report counts each create and marker update, and the template listing.
    """
    garm = MemoryGarm()
    garm.templates.append({"id": 7, "name": "mine", "os_type": "linux", "owner_id": "admin"})

    report = counted_pass(
        garm, [make_spec("a"), make_spec("b", template_name="mine"), make_spec("c")]
    )

    assert report.writes == 6
    assert [call[0] for call in garm.calls].count("list_templates") == 1


def test_two_deletes_in_one_pass_are_counted():
    """Arrange: two unconfigured scale sets, retired. Act: the pass deleting both.

    Assert: both are gone and the report counts both deletes.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("x"), make_spec("y")])
    run(garm, [])
    garm.advance(1)

    report = counted_pass(garm, [])

    assert garm.names() == set()
    assert report.writes == 2
    assert report.orphans == []


# Deletes GARM keeps (garm-behaviour B15) ---------------------------------------------------


def test_each_kept_delete_is_an_error_saying_when_the_next_is_sent():
    """Arrange: a retired, empty old set; GARM answers deletes but keeps the scale set.

    Act: the pass that deletes it, then the passes at each retry (1, then 2 minutes later).
    Assert: each error says when the next delete is sent; the third says how many in a row and
    what to check; the marker counts them.
    """
    garm = MemoryGarm()
    old, _ = retired(garm)
    garm.keep_deletes = True
    texts: list[list[str]] = []
    retries: list[datetime.datetime] = []
    for wait, backoff in ((1, 1), (60, 2), (120, 4)):
        garm.advance(wait)
        report = run(garm, [make_spec(labels=NEW_LABELS)])
        texts.append(report.spec("small").errors)
        retries.append(garm.now + datetime.timedelta(minutes=backoff))
        assert report.spec("small").message == report.spec("small").errors[-1]

    kept = f"GARM answered the delete of {old!r} but kept it"
    assert texts == [
        [f"{kept}; the next delete at {at(retries[0])}"],
        [f"{kept}; the next delete at {at(retries[1])}"],
        [
            f"{kept} 3 times in a row: check GARM's log (GitHub refused the delete, "
            "or dropped the set: restart garm); "
            f"the next delete at {at(retries[2])}"
        ],
    ]
    marker = parse_marker(garm.by_name(old).extended_state)
    assert marker is not None
    assert marker.delete_failures == 3


def test_a_kept_delete_that_cannot_be_recorded_is_a_refused_update():
    """Arrange: a retired, empty old set; GARM keeps the delete and refuses the next update.

    Act: the deleting pass. Assert: both the kept delete and the refused recording are the
    spec's errors; the refusal is a Blocked failure of an update of `small`.
    """
    garm = MemoryGarm()
    old, _ = retired(garm)
    garm.keep_deletes = True
    garm.advance(1)
    garm.refuse("update_scaleset", 400)

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    retry_at = garm.now + datetime.timedelta(minutes=1)
    assert report.spec("small").errors == [
        f"GARM answered the delete of {old!r} but kept it; the next delete at {at(retry_at)}",
        f"recording the failed delete of {old!r}: update_scaleset: {REFUSED}",
    ]
    assert report.failures == [Failure("small", "update", 400)]
    assert blocked_message(report) == (
        "GARM refused to update 'small' (HTTP 400): see juju debug-log"
    )
    assert report.spec("small").predecessors[0].delete_failures == 1


def test_a_deleted_predecessor_leaves_the_report_while_the_live_set_is_recreated():
    """Arrange: the old set retired and empty; the new live set deleted by hand in GARM.

    Act: a pass. Assert: the live set is created again and the old one deleted in the same
    pass; the spec is still creating, with no predecessor left.
    """
    garm = MemoryGarm()
    old, new = retired(garm)
    del garm.rows[garm.by_name(new).id]
    garm.advance(1)

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert garm.names() == {new}
    spec = report.spec("small")
    assert spec.phase is Phase.CREATING
    assert spec.predecessors == []
    assert status_message(report) == "'small': creating"
    assert old not in garm.names()


# Unconfigured scale sets (orphans) -----------------------------------------------------------


def test_a_deleted_orphan_leaves_the_report_with_a_warning():
    """Arrange: an unconfigured scale set, retired and empty. Act: the deleting pass.

    Assert: gone from GARM and from the report's orphans; one warning naming it; converged.
    """
    garm = MemoryGarm()
    name = orphaned(garm)

    report = run(garm, [])

    assert garm.names() == set()
    assert report.orphans == []
    assert report.warnings == [f"deleted unconfigured scale set {name!r}"]
    assert report.converged


def test_a_kept_orphan_delete_is_counted_on_the_orphan_and_waits():
    """Arrange: an unconfigured scale set, retired and empty; GARM keeps deletes.

    Act: the deleting pass. Assert: the orphan is in error with one kept delete and the retry
    time; the error is the pass's; the Waiting text names it with the retry time.
    """
    garm = MemoryGarm()
    name = orphaned(garm)
    garm.keep_deletes = True

    report = run(garm, [])

    retry_at = garm.now + datetime.timedelta(minutes=1)
    (orphan,) = report.orphans
    assert (orphan.phase, orphan.delete_failures, orphan.delete_retry_at) == (
        Phase.ERROR,
        1,
        retry_at,
    )
    assert report.errors == [
        f"GARM answered the delete of {name!r} but kept it; the next delete at {at(retry_at)}"
    ]
    assert retry_message(report) == (
        f"GARM kept the old scale set of {short_name(name)} after a delete; "
        f"retrying at {retry_at:%H:%M} UTC"
    )


def test_a_refused_orphan_retirement_names_the_scale_set():
    """Arrange: an unconfigured scale set; GARM refuses the update retiring it.

    Act: the sweeping pass. Assert: the orphan is in error; the pass's error and the Blocked
    failure name the scale set itself (it has no spec).
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])
    name = live_name(make_spec("gone"))
    garm.refuse("update_scaleset", 400)

    report = run(garm, [])

    assert report.orphans[0].phase is Phase.ERROR
    assert report.errors == [f"updating {name!r}: update_scaleset: {REFUSED}"]
    assert report.failures == [Failure(name, "update", 400)]
    assert blocked_message(report) == (
        f"GARM refused to update {short_name(name)} (HTTP 400): see juju debug-log"
    )
    assert garm.by_name(name).enabled


def test_a_retired_orphans_runners_are_listed_so_it_drains():
    """Arrange: an unconfigured scale set with a job, retired; only the sweep needs runners.

    Act: a pass. Assert: the orphan drains (its runner counted); no delete was sent.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])
    name = live_name(make_spec("gone"))
    assert garm.start_job_when_ready(garm.by_name(name).id) is not None
    run(garm, [])
    garm.advance(1)

    report = run(garm, [])

    (orphan,) = report.orphans
    assert (orphan.phase, orphan.runners) == (Phase.DRAINING, 1)
    assert "delete_scaleset" not in [call[0] for call in garm.calls]
    assert status_message(report) == "removing 1 unconfigured scale set (1 runner draining)"


# Templates -----------------------------------------------------------------------------------


class ForgeTemplates(MemoryGarm):
    """Lists each template with its own forge type (absent when empty: GARM's `omitempty`)."""

    def list_templates(self, os_type: str | None = None) -> list[Template]:
        """GET /templates, each with the forge type its entry in `templates` has."""
        forge = {t["id"]: t.get("forge_type", "github") for t in self.templates}
        return [
            dataclasses.replace(t, forge_type=forge[t.id]) for t in super().list_templates(os_type)
        ]


@pytest.mark.parametrize(("forge", "template_id"), [("github", 7), ("", 7), ("gitea", None)])
def test_a_new_scale_set_gets_its_named_template_of_githubs_forge(
    forge: str, template_id: int | None
):
    """Arrange: a template `mine` of forge `forge`. Act: a pass creating a spec naming it.

    Assert: created with its id when the template is GitHub's (or has no forge type);
    otherwise nothing is created and the error names the template and the OS.
    """
    garm = ForgeTemplates()
    garm.templates.append(
        {"id": 7, "name": "mine", "os_type": "linux", "owner_id": "admin", "forge_type": forge}
    )
    spec = make_spec(template_name="mine")

    report = run(garm, [spec])

    if template_id is None:
        assert garm.names() == set()
        assert report.spec("small").errors == [
            f"creating {live_name(spec)!r}: template 'mine' (linux) does not exist in GARM"
        ]
    else:
        assert garm.rows[garm.by_name(live_name(spec)).id].template_id == template_id
        assert report.spec("small").errors == []


def test_naming_a_missing_template_later_is_an_error_and_changes_nothing():
    """Arrange: a converged spec. Act: a pass naming a template GARM lacks.

    Assert: no update sent; the error names the template and the OS.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    garm.calls.clear()

    report = run(garm, [make_spec(template_name="nope")])

    assert garm.writes() == []
    assert report.spec("small").errors == [
        f"updating {live_name(make_spec())!r}: template 'nope' (linux) does not exist in GARM"
    ]


# Names GitHub still holds ----------------------------------------------------------------------


class GithubAnswers400(MemoryGarm):
    """GitHub answers 400 for a name it holds; GARM passes it on (garm-behaviour B25)."""

    def create_scaleset(self, kind: Any, entity_id: str, params: ScaleSetCreate) -> ScaleSet:
        """POST /{entity}/{id}/scalesets, a 400 with GitHub's body for a leftover name."""
        if params.name in self.github_leftovers:
            self._enter("create_scaleset", kind, entity_id, params)
            raise GarmBadRequest(
                "create scale set",
                400,
                "Bad Request",
                f'bad request while calling github: "scale set {params.name} already exists"',
            )
        return super().create_scaleset(kind, entity_id, params)


@pytest.mark.parametrize("garm_type", [MemoryGarm, GithubAnswers400])
def test_the_last_spare_name_is_used_when_github_holds_the_others(garm_type: type[MemoryGarm]):
    """Arrange: GitHub holds the first three names (answered 409, or 400 with its message).

    Act: a pass. Assert: created under the fourth name; each leftover is reported, with a
    warning saying where to delete it.
    """
    garm = garm_type()
    spec = make_spec()
    names = [live_name(spec, attempt=n) for n in range(4)]
    garm.github_leftovers = set(names[:3])

    report = run(garm, [spec])

    assert garm.names() == {names[3]}
    small = report.spec("small")
    assert small.leftovers == names[:3]
    assert small.live_name == names[3]
    assert small.warnings[0] == (
        f"GitHub still holds a runner scale set named {names[0]!r} that GARM does not know; "
        f"creating {names[1]!r} instead: delete the leftover at GitHub (repository or "
        "organization settings, Actions, Runner groups) when no job uses it"
    )
    assert small.errors == []


def test_a_conflict_without_already_exists_is_refused_not_retried():
    """Arrange: GARM answers 409 with another message to the create. Act: a pass.

    Assert: no other name is tried; the refusal is reported.
    """
    garm = MemoryGarm()
    garm.refuse("create_scaleset", 409)

    report = run(garm, [make_spec()])

    assert [call[0] for call in garm.calls].count("create_scaleset") == 1
    assert report.failures == [Failure("small", "create", 409)]


# The log ---------------------------------------------------------------------------------------


def test_errors_and_warnings_of_a_pass_are_logged_with_the_spec(caplog: pytest.LogCaptureFixture):
    """Arrange: GARM refuses `a`'s create; `b` names a provider GARM lacks. Act: a pass.

    Assert: one warning line each, naming the spec and saying what happened.
    """
    garm = MemoryGarm()
    garm.refuse("create_scaleset", 400)
    caplog.set_level(logging.WARNING, logger="scaleset_reconciler")

    run(garm, [make_spec("a"), make_spec("b", provider_name="nope")])

    logged = [r.getMessage() for r in caplog.records if r.name == "scaleset_reconciler.executor"]
    assert logged == [
        f"scale sets: 'a': creating {live_name(make_spec('a'))!r}: create_scaleset: {REFUSED}",
        "scale sets: 'b': provider 'nope' is not configured in GARM yet",
    ]


# The preview (list-scalesets) ---------------------------------------------------------------


def test_the_preview_plans_with_the_given_settings_and_writes_nothing():
    """Arrange: labels changed 2 minutes ago; a retired unconfigured set with a job.

    Act: preview with a 10-minute grace, sweeping. Assert: the new set serves in 8 minutes
    (not the default minute); the orphan drains its runner; the scale sets are counted per
    provider; nothing was written.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec(), make_spec("gone")])
    gone = live_name(make_spec("gone"))
    assert garm.start_job_when_ready(garm.by_name(gone).id) is not None
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(120)
    garm.calls.clear()
    settings = dataclasses.replace(SETTINGS, handover_grace=datetime.timedelta(minutes=10))

    report = preview(
        garm, [make_spec(labels=NEW_LABELS)], now=garm.now, settings=settings, sweep_orphans=True
    )

    assert garm.writes() == []
    assert report.spec("small").serves_in == pytest.approx(480)
    (orphan,) = report.orphans
    assert (orphan.name, orphan.phase, orphan.runners) == (gone, Phase.DRAINING, 1)
    assert report.provider_scalesets == {"lxd": 3}


def test_the_preview_keeps_orphans_when_the_desired_state_is_incomplete():
    """Arrange: an unconfigured scale set. Act: preview without sweeping.

    Assert: the orphan is listed as kept, not planned.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])

    report = preview(garm, [], now=garm.now, settings=ReconcileSettings(), sweep_orphans=False)

    assert report.orphans == []
    assert report.orphans_kept == [live_name(make_spec("gone"))]
