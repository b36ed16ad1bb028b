"""What a restore will kill: the runners GARM runs now that the restored database does not know.

After a restore GARM deletes, within about 5 minutes, every VM of its providers that its
database does not know: runners created since the backup, busy ones with their jobs included
(garm-behaviour, "A restore deletes the runners the backup does not know"). The restore action
asks this module, before it stops GARM, which runners those are and whether to go on. Pure: the
charm hands in what GARM lists now and the names the backup holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from garm_api import Instance
from scaleset_reconciler.runners import is_busy


@dataclasses.dataclass(frozen=True)
class Doomed:
    """A runner GARM runs now that the restored database does not know."""

    runner: str
    busy: bool
    status: str
    vm: str
    provider: str
    job: str

    def as_result(self) -> dict[str, str | bool]:
        """The runner as the restore action lists it."""
        return {
            "runner": self.runner,
            "busy": self.busy,
            "status": self.status,
            "vm": self.vm,
            "provider": self.provider,
            "job": self.job,
        }


@dataclasses.dataclass(frozen=True)
class RestoreCheck:
    """The runners a restore would have GARM delete, busy ones first, and whether to refuse."""

    doomed: tuple[Doomed, ...]
    force: bool

    @property
    def busy(self) -> tuple[Doomed, ...]:
        """The doomed runners that have a job: the restore stops those jobs."""
        return tuple(runner for runner in self.doomed if runner.busy)

    def refusal(self, name: str) -> str | None:
        """Why the restore must not go on (a job would be killed), or None."""
        if not self.busy or self.force:
            return None
        names = ", ".join(runner.runner for runner in self.busy)
        return (
            f"backup {name} does not know {len(self.busy)} runners with a job ({names}): GARM "
            "would delete their VMs and stop the jobs within about 5 minutes of the restore; "
            "wait for the jobs, or run restore-backup again with force=true"
        )


def check_restore(live: Iterable[Instance], known: frozenset[str], *, force: bool) -> RestoreCheck:
    """The runners GARM lists now that `known` (the backup's runner names) lacks."""
    doomed = [
        Doomed(
            runner=instance.name,
            busy=is_busy(instance),
            status=f"{instance.status}/{instance.runner_status or '-'}",
            vm=instance.provider_id,
            provider=instance.provider_name,
            job=instance.job,
        )
        for instance in live
        if instance.name not in known
    ]
    doomed.sort(key=lambda runner: (not runner.busy, runner.runner))
    return RestoreCheck(tuple(doomed), force)


def unknown_check(error: Exception, *, force: bool) -> str | None:
    """Why to refuse when GARM cannot list its runners now (so none can be named), or None."""
    if force:
        return None
    return (
        f"GARM did not list its runners ({error}), so those the backup does not know, whose "
        "VMs GARM deletes after a restore, cannot be named: start GARM, or use force=true"
    )
