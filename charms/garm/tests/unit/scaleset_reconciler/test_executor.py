"""The executor's rarer answers from GARM, pinned by what GARM holds and what the report says.

A refused delete of a scale set, a refused removal of an outdated runner during a rolling
refresh, and a template dropped from a spec when GARM has no default template of its OS.
"""

from __future__ import annotations

import dataclasses

from doubles.memory_garm import MemoryGarm
from scaleset_reconciler import Phase
from scaleset_reconciler.naming import live_name
from unit.walks.scalesets import converge, make_spec, run

# --- Found by the coverage floors (hand-made mutants): GARM's rarer answers ---
# (was test_scaleset_executor_edges.py)


def test_a_refused_delete_names_the_scale_set_and_is_sent_again_next_pass():
    """Arrange: an unconfigured scale set, retired and empty, ready to be deleted.

    Act: a pass in which GARM refuses the delete (400); then a pass GARM answers.
    Assert: after the refusal GARM still holds the set, the orphan is in error and the report's
    error says `deleting '<name>'`; the next pass deletes it.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec("gone")])
    run(garm, [])
    garm.advance(1)
    name = live_name(make_spec("gone"))
    garm.refuse("delete_scaleset", 400)

    refused = run(garm, [])
    kept = set(garm.names())
    retried = run(garm, [])

    assert name in kept
    assert [orphan.phase for orphan in refused.orphans] == [Phase.ERROR]
    assert [error.split(":")[0] for error in refused.errors] == [f"deleting {name!r}"]
    assert name not in garm.names()
    assert retried.errors == []


def test_a_refused_outdated_runner_removal_is_a_warning_and_the_refresh_goes_on():
    """Arrange: a settled scale set with two idle runners (min idle 2); its image changed.

    Act: passes a minute apart, GARM refusing the first unforced runner removal (400).
    Assert: the refusal is a warning of the spec naming the kept runner (no error, no forced
    remove); later passes remove every old runner.
    """
    spec = make_spec(min_idle_runners=2, max_runners=3)
    garm = MemoryGarm()
    converge(garm, [spec])
    for _ in range(3):
        garm.advance(61)
        run(garm, [spec])
    old = {runner.name for runner in garm.runners_of(live_name(spec))}
    changed = dataclasses.replace(spec, image="ubuntu:24.04")
    garm.refuse("delete_instance", 400)

    reports = []
    for _ in range(20):
        reports.append(run(garm, [changed]))
        garm.advance(61)
        if reports[-1].spec("small").phase is Phase.ACTIVE:
            break

    warnings = [w for report in reports for w in report.spec("small").warnings]
    kept = [w for w in warnings if w.startswith("kept outdated runner")]
    assert len(kept) == 1
    assert any(repr(name) in kept[0] for name in old)
    assert all(report.spec("small").errors == [] for report in reports)
    assert garm.forced == []
    assert not old & {runner.name for runner in garm.runners_of(live_name(spec))}


def test_dropping_a_template_keeps_the_sets_template_when_garm_has_no_default():
    """Arrange: two specs converged on the template `mine`; GARM has no default Linux template.

    Act: a pass in which neither spec names a template any more.
    Assert: both scale sets are updated (their markers) and keep template `mine`'s id; no
    error; the templates are listed once for the pass.
    """
    garm = MemoryGarm()
    garm.templates = [{"id": 7, "name": "mine", "os_type": "linux", "owner_id": "admin"}]
    named = [make_spec("a", template_name="mine"), make_spec("b", template_name="mine")]
    converge(garm, named)
    garm.calls.clear()

    report = run(garm, [make_spec("a"), make_spec("b")])

    updated = [call[1][0] for call in garm.calls if call[0] == "update_scaleset"]
    ids = {garm.by_name(live_name(spec)).id for spec in named}
    assert [call[0] for call in garm.calls].count("list_templates") == 1
    assert set(updated) == ids
    assert {garm.rows[scaleset_id].template_id for scaleset_id in ids} == {7}
    assert report.errors == []
    assert [report.spec(name).errors for name in ("a", "b")] == [[], []]
