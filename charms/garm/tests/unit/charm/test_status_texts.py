"""`juju status` texts: at most 120 characters, saying what they wait for, no refusal Active."""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Iterator

import ops
import pytest
from ops import testing

import charm
import charm_status
from doubles.configurator_publication import pkcs1_app_key
from doubles.memory_garm import MemoryGarm
from doubles.workload_double import RecordingWorkload
from garm_api import GarmBadRequest, GarmServerError, GarmUnreachable
from garm_sim import GarmSim
from scaleset_reconciler.report import (
    Failure,
    Phase,
    PredecessorReport,
    ReconcileReport,
    SpecReport,
    blocked_message,
    retry_message,
    status_message,
)
from status_text import STATUS_LIMIT, fit
from unit.walks.configurators import relabelled
from unit.walks.scalesets import converge, make_spec, run

# The longest name a spec may have, as far as validation goes, is not bounded: take a long one.
LONG = "a-very-long-scale-set-name-for-the-gpu-runners-of-the-platform-team-x"
DEADLINE = datetime.datetime(2026, 11, 30, 14, 5, tzinfo=datetime.UTC)
NEW_LABELS = ("x64", "gpu")


def every_kind_of_spec(count: int) -> list[SpecReport]:
    """`count` specs with long names, cycling through every phase a status can name."""
    shapes = [
        SpecReport(LONG, Phase.CREATING),
        SpecReport(LONG, Phase.CREATING, serves_in=3599.5),
        SpecReport(LONG, Phase.HANDING_OVER, labels_changing=True),
        SpecReport(LONG, Phase.DRAINING, labels_changing=True, deadline=DEADLINE),
        SpecReport(LONG, Phase.FORCING, jobs_stopped=12345),
        SpecReport(LONG, Phase.DELETING),
        SpecReport(LONG, Phase.BLOCKED, message="x" * 500),
        SpecReport(LONG, Phase.BLOCKED, message="x" * 500, status="y" * 200),
        SpecReport(LONG, Phase.ERROR, message="z" * 500),
    ]
    specs: list[SpecReport] = []
    for index, shape in zip(range(count), itertools.cycle(shapes), strict=False):
        spec = SpecReport(**{**vars(shape), "logical": f"{LONG}-{index}"})
        spec.predecessors = [
            PredecessorReport(f"{LONG}-old-{n}", n, Phase.DRAINING, runners=999) for n in range(3)
        ]
        specs.append(spec)
    return specs


def every_kind_of_failure(count: int) -> list[Failure]:
    """`count` failures with long names: refused, failed, not sent."""
    shapes = [
        Failure(LONG, "create", 400),
        Failure(LONG, "remove a runner of", 503, retry=True),
        Failure(LONG, "update", None),
    ]
    return [shape for _, shape in zip(range(count), itertools.cycle(shapes), strict=False)]


@pytest.mark.parametrize("count", [1, 2, 3, 9, 50])
def test_every_scale_set_status_text_fits(count: int):
    """Arrange: `count` long-named specs in every phase, failures, orphans with kept deletes.

    Act: compose the Active, Blocked and Waiting texts.
    Assert: each is at most 120 characters; with several of each, none is empty.
    """
    report = ReconcileReport(
        specs=every_kind_of_spec(count),
        orphans=[
            PredecessorReport(
                f"{LONG}-{n}", n, Phase.DELETING, delete_failures=n, deadline=DEADLINE
            )
            for n in range(count)
        ],
        failures=every_kind_of_failure(count),
    )

    texts = [status_message(report), blocked_message(report), retry_message(report)]

    assert all(len(text) <= STATUS_LIMIT for text in texts), texts
    assert count < 5 or all(texts), texts


def test_each_status_phrase_fits_alone_with_a_long_name():
    """Arrange: one spec per phase and one failure per kind, each with a long name.

    Act: compose each text alone. Assert: none needed cutting (no '...' but the name's own).
    """
    for spec in every_kind_of_spec(9):
        report = ReconcileReport(specs=[spec])
        for text in (status_message(report), blocked_message(report)):
            assert len(text) <= STATUS_LIMIT
            assert not text.removesuffix("...").endswith("...")
    for failure in every_kind_of_failure(3):
        assert len(failure.text()) <= STATUS_LIMIT
    for kept in (1, 99):
        orphan = PredecessorReport(LONG, 1, Phase.DELETING, delete_failures=kept)
        report = ReconcileReport(orphans=[orphan])
        assert len(blocked_message(report) or retry_message(report)) <= STATUS_LIMIT


def test_many_long_changeovers_against_garm_fit_and_count_the_rest():
    """Arrange: twelve long-named specs converged, then all change labels; grace passed.

    Act: three passes a minute apart. Assert: every status fits; each one that names
    changeovers keeps the end of the name (where generated names differ) and counts the rest.
    """
    garm = MemoryGarm()
    names = [f"{LONG[:50]}-{n}" for n in range(12)]
    converge(garm, [make_spec(name) for name in names])
    changed = [make_spec(name, labels=NEW_LABELS) for name in names]

    texts: list[str] = []
    for _ in range(3):
        texts.append(status_message(run(garm, changed)))
        garm.advance(61)

    assert all(len(text) <= STATUS_LIMIT for text in texts), texts
    assert [text.endswith(", +11 more") for text in texts] == [True, True, False], texts
    assert texts[0].startswith("'a-very-lon...nners-of--0' labels changing: ")


def test_dropped_labels_blocked_text_fits_whole_with_long_names_and_labels():
    """Arrange: a long-named spec whose three long labels GitHub drops. Act: a pass past grace.

    Assert: the Blocked text fits in 120 characters without being cut: it still ends with when
    the charm retries.
    """
    garm = MemoryGarm()
    labels = ("self-hosted-gpu-accelerated", "ubuntu-noble-large-disk", "x64")
    garm.drop_labels = set(labels[:2])
    spec = make_spec(LONG, labels=labels)
    run(garm, [spec])
    garm.advance(61)

    text = blocked_message(run(garm, [spec]))

    assert len(text) <= STATUS_LIMIT
    assert text.endswith(" UTC"), text


def test_waiting_for_the_grace_says_when_the_new_set_serves():
    """Arrange: labels changed, the new scale set created. Act: a pass 20 s later.

    Assert: the status says the new set serves in 40 s.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    garm.advance(20)

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    assert status_message(report) == (
        "'small' labels changing: handing over (new set serves in 40s)"
    )


def test_draining_names_the_deadline_as_a_utc_clock_time():
    """Arrange: a job on the old generation, retired. Act: a pass.

    Assert: the drain deadline (retired-at + 7 h) is in the status as HH:MM UTC and in the report.
    """
    garm = MemoryGarm()
    converge(garm, [make_spec()])
    run(garm, [make_spec(labels=NEW_LABELS)])
    old = next(iter(garm.rows.values()))
    garm.start_job_when_ready(old.id)
    garm.advance(60)
    retiring_at = garm.now
    run(garm, [make_spec(labels=NEW_LABELS)])

    report = run(garm, [make_spec(labels=NEW_LABELS)])

    deadline = retiring_at + datetime.timedelta(hours=7)
    assert report.spec("small").deadline == deadline
    assert status_message(report) == (
        f"'small' labels changing: draining 1 runner (deadline {deadline:%H:%M} UTC)"
    )


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, "GARM refused to create 'small' (HTTP 400): see juju debug-log"),
        (500, "GARM failed to create 'small' (HTTP 500); retrying"),
    ],
)
def test_a_refusal_is_blocked_a_failure_waits_neither_under_active(status: int, expected: str):
    """Arrange: GARM answers `status` to the create. Act: a pass.

    Assert: 4xx is the Blocked text, 5xx the Waiting text, naming the call; the Active text
    does not mention it.
    """
    garm = MemoryGarm()
    garm.refuse("create_scaleset", status)

    report = run(garm, [make_spec()])

    assert (blocked_message(report) or retry_message(report)) == expected
    assert "refused" not in status_message(report)
    assert "failed" not in status_message(report)


def test_fit_names_what_fits_then_counts():
    """Arrange: entries of 50 characters. Act: fit them. Assert: two named, then +N more."""
    entries = ["e" * 50] * 5

    assert fit(entries, ", ") == f"{'e' * 50}, {'e' * 50}, +3 more"
    assert fit(["x" * 300], "; ") == "x" * 117 + "..."
    assert fit([], "; ") == ""


@pytest.mark.parametrize(
    "error",
    [
        GarmUnreachable("list scale sets", "ConnectionRefusedError: " + "x" * 300),
        GarmServerError("list scale sets", 502, "Bad Gateway", "y" * 300),
        GarmBadRequest("create scale set", 400, "Bad Request", "z" * 300),
    ],
)
def test_an_interrupted_reconcile_names_the_call_in_a_short_status(error: Exception):
    """Arrange: GARM's error with 300 characters of details. Act: the interrupted status.

    Assert: at most 120 characters, never Active, GARM's details left to the log.
    """
    status = charm_status.interrupted(error)  # pyright: ignore[reportArgumentType]

    assert len(status.message) <= STATUS_LIMIT
    assert not isinstance(status, ops.ActiveStatus)
    assert "x" * 20 not in status.message
    assert "y" * 20 not in status.message
    assert "z" * 20 not in status.message


def test_a_status_too_long_is_cut_to_fit():
    """Arrange: a Blocked status of 300 characters. Act: bound it. Assert: 120, still Blocked."""
    bounded = charm_status.bounded(ops.BlockedStatus("b" * 300))

    assert bounded == ops.BlockedStatus("b" * 117 + "...")


# The charm, against the simulator, reading the time from its one clock --------------------


@pytest.fixture
def frozen_sim() -> Iterator[GarmSim]:
    """A GARM simulator whose clock moves only when told to, with `small`'s provider."""
    with GarmSim(["openstack-small"], frozen_clock=True) as server:
        yield server


@pytest.fixture
def sim_clock(frozen_sim: GarmSim, monkeypatch: pytest.MonkeyPatch) -> GarmSim:
    """The charm's clock (`charm.utc_now`, its one time seam) reads the simulator's."""
    monkeypatch.setattr(
        charm,
        "utc_now",
        lambda: datetime.datetime.fromtimestamp(frozen_sim.clock.now(), datetime.UTC),
    )
    return frozen_sim


def test_the_charm_says_when_the_new_set_serves_by_its_clock(
    sim_clock: GarmSim, workload: RecordingWorkload, resources: frozenset[testing.Resource]
):
    """Arrange: labels changed; the new scale set created; 20 s pass on the one clock.

    Act: a reconcile tick. Assert: Active, saying the new set serves in 40 s.
    """
    ctx, state = relabelled(sim_clock, resources, pkcs1_app_key())
    state = ctx.run(ctx.on.relation_changed(next(iter(state.relations))), state)
    sim_clock.clock.advance(20)

    out = ctx.run(ctx.on.update_status(), state)

    assert out.unit_status == ops.ActiveStatus(
        "'small' labels changing: handing over (new set serves in 40s)"
    )


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, ops.BlockedStatus("GARM refused to create 'small' (HTTP 400): see juju debug-log")),
        (503, ops.WaitingStatus("GARM failed to create 'small' (HTTP 503); retrying")),
    ],
)
def test_the_charm_never_shows_a_refused_create_under_active(
    sim_clock: GarmSim,
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    status: int,
    expected: ops.StatusBase,
):
    """Arrange: labels changed; GARM answers `status` to creating the new scale set.

    Act: relation-changed. Assert: Blocked (4xx) or Waiting (5xx) naming the call and the set.
    """
    ctx, state = relabelled(sim_clock, resources, pkcs1_app_key())
    sim_clock.fault("status", method="POST", path="*/scalesets", status=status)

    out = ctx.run(ctx.on.relation_changed(next(iter(state.relations))), state)

    assert out.unit_status == expected
