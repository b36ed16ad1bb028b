"""A drain whose finished jobs GitHub names (ADR 0015), against the fake GitHub."""

from __future__ import annotations

from doubles.memory_garm import MemoryGarm
from garm_api.models import GithubEndpoint
from scaleset_reconciler import (
    FinishedAtGithub,
    Phase,
    ReconcileReport,
    reconcile,
)
from unit.walks.scalesets import NEW_LABELS, SETTINGS, changeover_started, make_spec


def drain_with_jobs(garm: MemoryGarm, jobs: int = 1) -> tuple[str, str, list[str]]:
    """Jobs run on the old generation, which is then retired; return (old, new, runners)."""
    old, new = changeover_started(garm)
    runners: list[str | None] = []
    scaleset_id = garm.by_name(old).id
    for running in range(jobs):
        # GitHub's assigned-job count includes the jobs already running (GARM scales to it).
        garm.rows[scaleset_id].desired_runner_count = running
        runners.append(garm.start_job_when_ready(scaleset_id))
    assert None not in runners
    garm.advance(61)
    drain(garm)  # retires the old generation
    garm.advance(60)
    assert drain(garm).spec("small").phase is Phase.DRAINING
    return old, new, [str(runner) for runner in runners]


def drain(
    garm: MemoryGarm,
    finished_at_github: FinishedAtGithub | None = None,
    *,
    settle: bool = True,
) -> ReconcileReport:
    """One pass with the new labels, asking GitHub through `finished_at_github`."""
    return reconcile(
        garm,
        [make_spec(labels=NEW_LABELS)],
        now=garm.now,
        settings=SETTINGS,
        sweep_orphans=True,
        finished_at_github=finished_at_github,
        sleep=garm.advance if settle else None,
    )


def removals(garm: MemoryGarm) -> list[str]:
    """The runners the charm asked GARM to remove."""
    return [str(args[0]) for name, args in garm.calls if name == "delete_instance"]


def endpoint(api_base_url: str) -> GithubEndpoint:
    """GARM's github.com endpoint pointed at `api_base_url`."""
    return GithubEndpoint("github.com", "", api_base_url, api_base_url, api_base_url, b"")
