"""Runner instances: list and delete."""

from __future__ import annotations

from garm_sim.errors import bad_request, not_found
from garm_sim.model import DELETABLE_STATUSES, Instance
from garm_sim.routing import EMPTY, Request, Response, Route
from garm_sim.serialise import instance_json

_NOT_DELETABLE = (
    "runner must be in one of the following states: "
    '"running, error, pending_force_delete, pending_delete"'
)
# GARM's details quote GitHub's answer (the fake GitHub's `JOB_STILL_RUNNING`, shortened).
_AGENT_URL = (
    "https://pipelines.actions.githubusercontent.com/_apis/distributedtask/pools/0/agents/{0}"
    "?api-version=6.0-preview"
)
_JOB_STILL_RUNNING = (
    "error removing runner from github: request failed for " + _AGENT_URL + ": "
    "bad request while calling " + _AGENT_URL + ": "
    '"{{\\"typeKey\\":\\"JobStillRunningException\\"}}"'
)


def routes() -> list[Route]:
    """Return the instance routes."""
    return [
        Route("GET", "/instances", list_instances),
        Route("GET", "/instances/{name}", get_instance),
        Route("DELETE", "/instances/{name}", delete_instance),
    ]


def list_instances(request: Request) -> Response:
    """List every instance (`scale_set_id` is GARM's numeric scale-set id)."""
    state = request.state
    found = sorted(state.instances.values(), key=lambda i: i.created_ns)
    return Response(200, [instance_json(state, i) for i in found])


def get_instance(request: Request) -> Response:
    """Return one instance by name."""
    return Response(200, instance_json(request.state, _instance(request, _GET), detail=True))


def delete_instance(request: Request) -> Response:
    """Mark an instance for deletion; it disappears at the next simulator tick.

    GARM only deletes runners that are running, errored or already being deleted; a runner
    still being created (`pending_create`) is refused with 400. Forced or not, GARM first
    removes the runner at GitHub, which refuses one running a job with 400; GARM answers that
    400 and keeps the runner unless `bypassGHUnauthorized` is set (garm-behaviour B32).
    """
    instance = _instance(request, _DELETE)
    if instance.status not in DELETABLE_STATUSES:
        raise bad_request(_NOT_DELETABLE)
    if not request.flag("bypassGHUnauthorized") and instance.runner_status == "active":
        raise bad_request(_JOB_STILL_RUNNING.format(instance.agent_id))
    instance.status = "pending_force_delete" if request.flag("forceRemove") else "pending_delete"
    instance.updated_at = request.state.clock.stamp()
    return Response(200, EMPTY)


def _instance(request: Request, context: str) -> Instance:
    instance = request.state.instances.get(request.params["name"])
    if instance is None:
        raise not_found(f"{context}error fetching instance by name: not found")
    return instance


# What GARM wraps its database's not-found in, per call (the same on both).
_GET = _DELETE = "error fetching instance: error fetching instance: "
