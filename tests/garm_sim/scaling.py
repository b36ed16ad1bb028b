"""GARM's scale-set worker, reduced to one deterministic pass (`tick`), plus a job API.

A tick does, in order: finish pending deletions (rows vanish), let booted runners report `idle`
(GARM's runner install script does so on a real VM; a switch stands for a broken image), retire
runners whose job ended unseen once GARM's consolidation would notice, finish booting runners
whose boot time has passed, remove surplus idle runners, and create runners up to the target
`min(min_idle_runners + desired_runner_count, max_runners)` for enabled scale sets whose
provider exists. Active runners (running a job) are never scaled down.

A job ends as GARM hears of it: through the scale set's message listener while the set is
enabled (at once), and, for a disabled set, which has no listener, only when GARM's periodic
consolidation finds the ephemeral runner gone from GitHub's agents list
(`CONSOLIDATION_SECONDS`).

GitHub counts a running job as assigned to its scale set, and GARM takes `desired_runner_count`
from the assigned jobs of each queue message, so a job that starts raises the count by one and
one that ends lowers it, as the listener hears them: an idle runner boots beside a busy one
(within `max_runners`). A disabled set has no listener: its count keeps its last value
(garm-behaviour, "Disabling does not remove existing runners").
"""

from __future__ import annotations

import secrets
import string
import uuid

from garm_sim import workers
from garm_sim.model import DELETING_STATUSES, Instance, ScaleSet
from garm_sim.state import SimState

_NAME_ALPHABET = string.ascii_lowercase + string.digits
# GARM refuses a job for a runner that has not reported `idle` (pending -> active is not a
# transition it allows).
_READY = ("idle",)
# How often GARM compares its runners with GitHub's agents list (its pool reap interval).
CONSOLIDATION_SECONDS = 300
_SCALABLE_DOWN = ("idle", "pending", "installing", "online", "offline", "unknown", "failed")


def tick(state: SimState, boot_seconds: float) -> None:
    """Run one worker pass over every scale set.

    Args:
        state: the database.
        boot_seconds: how long (sim clock) a new runner stays `pending_create`; 0 = at once.
    """
    with state.lock:
        workers.run(state)
        _finish_deletions(state)
        _report_booted(state)
        _consolidate(state)
        _finish_boots(state, boot_seconds)
        for scaleset in list(state.scalesets.values()):
            _scale(state, scaleset, boot_seconds)


def target(scaleset: ScaleSet) -> int:
    """Return how many runners GARM aims for."""
    return min(scaleset.min_idle_runners + scaleset.desired_runner_count, scaleset.max_runners)


def start_job(state: SimState, scaleset: ScaleSet) -> Instance:
    """Give an idle runner of the scale set a job.

    Returns:
        The runner, now `active`.

    Raises:
        LookupError: when the scale set has no idle running runner.
    """
    with state.lock:
        for instance in state.scaleset_instances(scaleset.id):
            if instance.status == "running" and instance.runner_status in _READY:
                instance.runner_status = "active"
                instance.updated_at = state.clock.stamp()
                _hear_assigned(state, scaleset, +1)
                return instance
    raise LookupError(f"scale set {scaleset.name} has no idle runner")


def finish_job(state: SimState, instance: Instance) -> None:
    """End a runner's job: the ephemeral runner terminates and goes away.

    On an enabled scale set GARM hears `JobCompleted` at once and the runner goes at the next
    tick; on a disabled one it stays `active` until the consolidation notices.
    """
    with state.lock:
        scaleset = state.scalesets.get(instance.scaleset_id)
        if scaleset is not None and not scaleset.enabled:
            instance.job_finished_ns = state.clock.now_ns()
            return
        busy = instance.runner_status == "active"
        _terminate(state, instance)
        if scaleset is not None and busy:
            _hear_assigned(state, scaleset, -1)


def _hear_assigned(state: SimState, scaleset: ScaleSet, change: int) -> None:
    """The listener hears GitHub's assigned-job count move by `change` (none when disabled)."""
    if not scaleset.enabled:
        return
    count = max(scaleset.desired_runner_count + change, 0)
    if count != scaleset.desired_runner_count:
        scaleset.desired_runner_count = count
        scaleset.updated_at = state.clock.stamp()


def _terminate(state: SimState, instance: Instance) -> None:
    instance.runner_status = "terminated"
    instance.status = "pending_delete"
    instance.updated_at = state.clock.stamp()


def _report_booted(state: SimState) -> None:
    if not state.github.behaviour.runners_report:
        return
    for instance in state.instances.values():
        if instance.status == "running" and instance.runner_status == "pending":
            instance.runner_status = "idle"
            instance.updated_at = state.clock.stamp()


def _consolidate(state: SimState) -> None:
    now_ns = state.clock.now_ns()
    for instance in state.instances.values():
        finished = instance.job_finished_ns
        if finished is not None and now_ns - finished >= CONSOLIDATION_SECONDS * 1_000_000_000:
            _terminate(state, instance)


def _finish_deletions(state: SimState) -> None:
    for name, instance in list(state.instances.items()):
        if instance.status in DELETING_STATUSES:
            del state.instances[name]


def _finish_boots(state: SimState, boot_seconds: float) -> None:
    now_ns = state.clock.now_ns()
    for instance in state.instances.values():
        booted = now_ns - instance.created_ns >= boot_seconds * 1_000_000_000
        if instance.status == "pending_create" and booted:
            instance.status = "running"
            instance.provider_id = f"sim-{instance.name}"
            instance.updated_at = state.clock.stamp()


def _scale(state: SimState, scaleset: ScaleSet, boot_seconds: float) -> None:
    live = [i for i in state.scaleset_instances(scaleset.id) if i.status not in DELETING_STATUSES]
    surplus = len(live) - target(scaleset)
    if surplus > 0:
        idle = [i for i in reversed(live) if i.runner_status in _SCALABLE_DOWN]
        for instance in idle[:surplus]:
            del state.instances[instance.name]
        return
    can_create = scaleset.enabled and scaleset.provider_name in state.provider_names()
    for _ in range(-surplus if can_create else 0):
        _create_runner(state, scaleset, boot_seconds)


def _create_runner(state: SimState, scaleset: ScaleSet, boot_seconds: float) -> None:
    suffix = "".join(secrets.choice(_NAME_ALPHABET) for _ in range(12))
    name = f"{scaleset.runner_prefix}-{suffix}".lower()
    now = state.clock.stamp()
    instance = Instance(
        id=str(uuid.uuid4()),
        name=name,
        provider_id="" if boot_seconds > 0 else f"sim-{name}",
        provider_name=scaleset.provider_name,
        agent_id=state.ids.agent,
        scaleset_id=scaleset.id,
        os_type=scaleset.os_type,
        os_arch=scaleset.os_arch,
        runner_group=scaleset.runner_group,
        created_at=now,
        updated_at=now,
        created_ns=state.clock.now_ns(),
        status="pending_create" if boot_seconds > 0 else "running",
        runner_status="pending",
    )
    state.ids.agent += 1
    state.instances[name] = instance
