"""On the real binaries: a backup's database names its runners as GARM's API does.

`restore-backup` names the runners the restored database does not know, whose VMs GARM deletes
after the restore, by reading the backup's `instances` table (`workload/backup_runners.py`).
This checks that table against GARM itself: a copy taken with SQLite's online backup, as
`create-backup` takes it, while GARM runs, holds exactly the runners GARM listed then, and a
runner GARM made after it is the one the restore check names.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from contract.conftest import REAL_TARGETS, Target
from garm_api import Instance
from reconcile.restore_check import check_restore
from workload.backup_runners import runner_names


def _online_copy(database: Path, target: Path) -> None:
    """SQLite's online backup of the live database, as `create-backup` makes it."""
    source = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    destination = sqlite3.connect(target)
    try:
        source.backup(destination)
    finally:
        destination.close()
        source.close()


@pytest.mark.parametrize("target_name", REAL_TARGETS)
def test_a_backup_knows_the_runners_garm_had_when_it_was_taken(target: Target, tmp_path: Path):
    """Arrange: a scale set with one runner; a backup taken while GARM runs; a second runner.

    Act: read the backup's runner names; check a restore of it against GARM's runners now.

    Assert: the backup names exactly the first runner (GARM's API name; the table has `name` and
    the ORM's `deleted_at`); the check names the second runner only.
    """
    assert target.real is not None
    created = target.create_scaleset("backup", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}/instances"

    def runners() -> list[dict[str, Any]]:
        return target.call("GET", path).json or []

    assert target.wait_until(lambda: len(runners()) == 1)
    (first,) = [runner["name"] for runner in runners()]
    copy = tmp_path / "garm.db"
    _online_copy(target.real.workdir / "garm.db", copy)
    target.call("PUT", f"/scalesets/{created['id']}", {"min_idle_runners": 2, "max_runners": 2})
    assert target.wait_until(lambda: len(runners()) == 2)

    known = runner_names(copy, "b1")
    live = [Instance.from_wire(runner) for runner in runners()]
    check = check_restore(live, known, force=False)

    assert known == {first}
    with sqlite3.connect(copy) as database:
        columns = {row[1] for row in database.execute("PRAGMA table_info(instances)")}
    assert {"name", "deleted_at"} <= columns, "the columns backup_runners reads"
    (second,) = {runner.name for runner in live} - {first}
    assert [doomed.runner for doomed in check.doomed] == [second]
