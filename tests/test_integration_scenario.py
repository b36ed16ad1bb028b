"""The integration scenario's judgement of a status history, and Juju's history read (no Juju)."""

from __future__ import annotations

import json
import pathlib

import jubilant
import pytest

from integration.juju_model import capture_logs, history_from_json
from integration.scenario import Status, assert_phases_in_order, changeover_statuses

CHANGING = "'small' labels changing: "
# A changeover as the dry run recorded it on the e2e machine, with what came before and after.
HISTORY = [
    Status("active", ""),
    Status("active", "'small': creating"),
    Status("active", ""),
    Status("active", CHANGING + "starting new scale set"),
    Status(
        "active", CHANGING + "handing over (waiting for an idle runner of the new set until 16:16)"
    ),
    Status("active", CHANGING + "handing over"),
    Status("active", CHANGING + "draining 1 runner (deadline 16:16 UTC)"),
    Status("active", ""),
    Status("active", "'small': creating"),
]


def test_a_changeover_in_order_passes():
    """Arrange: a recorded history. Act: cut out the changeover, judge it. Assert: 4 phases."""
    changeover = changeover_statuses(HISTORY)

    assert_phases_in_order(changeover)
    assert changeover == HISTORY[3:7]


@pytest.mark.parametrize(
    ("history", "complaint"),
    [
        ([HISTORY[0], *HISTORY[5:2:-1], HISTORY[7]], "out of order"),
        ([HISTORY[0], HISTORY[3], HISTORY[6], HISTORY[7]], "handing over"),
        ([HISTORY[0], HISTORY[3], Status("blocked", "no runner"), HISTORY[7]], "blocked"),
        ([HISTORY[0], HISTORY[3], HISTORY[4]], "never finished"),
        (HISTORY[:3], "no label change"),
    ],
    ids=["phases reversed", "no hand-over", "blocked on the way", "unfinished", "no change"],
)
def test_a_wrong_changeover_fails_saying_what(history: list[Status], complaint: str):
    """Arrange: a history that went wrong. Act: judge it. Assert: AssertionError naming why."""
    with pytest.raises(AssertionError, match=complaint):
        assert_phases_in_order(changeover_statuses(history))


def test_juju_status_log_json_gives_the_workload_statuses_oldest_first():
    """Arrange: `juju show-status-log --format json` output (Juju's DetailedStatus fields).

    Act: read it. Assert: the workload entries' status and message, empty message included.
    """
    output = json.dumps(
        [
            {"status": "waiting", "message": "installing", "since": "2026-12-01T16:00:00Z",
             "type": "workload"},
            {"status": "executing", "message": "running update-status hook",
             "since": "2026-12-01T16:00:01Z", "type": "juju-unit"},
            {"status": "active", "since": "2026-12-01T16:00:02Z", "type": "workload"},
        ]
    )  # fmt: skip

    assert history_from_json(output) == [Status("waiting", "installing"), Status("active", "")]


class _RecordingJuju:
    """A jubilant.Juju's `cli`: answers each command with its name; one command fails."""

    def __init__(self, failing: str) -> None:
        self.failing = failing
        self.commands: list[tuple[str, ...]] = []

    def cli(self, *args: str) -> str:
        self.commands.append(args)
        if " ".join(args).startswith(self.failing):
            raise jubilant.CLIError(1, ["juju", *args], "", "ERROR unit not found")
        return f"output of {' '.join(args)}\n"


def test_failed_run_logs_are_written_each_to_its_file_even_when_one_command_fails(
    tmp_path: pathlib.Path,
):
    """Arrange: a model whose configurator unit has no status log (never deployed).

    Act: capture the logs. Assert: debug-log, status and both status logs each in a file; the
    failing one holds the error.
    """
    juju = _RecordingJuju(failing="show-status-log small/0")

    capture_logs(juju, tmp_path / "logs")  # type: ignore[arg-type]  # only `cli` is used

    files = {path.name: path.read_text() for path in (tmp_path / "logs").iterdir()}
    assert sorted(files) == [
        "debug-log.txt", "status-log-garm-0.txt", "status-log-small-0.txt", "status.json",
        "status.txt",
    ]  # fmt: skip
    assert files["debug-log.txt"].startswith("output of debug-log --replay --no-tail")
    assert files["status-log-garm-0.txt"].startswith("output of show-status-log garm/0")
    assert "failed" in files["status-log-small-0.txt"]
