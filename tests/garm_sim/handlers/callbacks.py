"""What a runner sends GARM while it boots: its status, through the controller's callback URL.

GARM's runner install script posts `installing`, then `idle` once the runner is registered
(with its agent id); the instance's token (`GarmSim.instance_token`, what the provider is given
as `instance-token`) authenticates it, and only while the runner is `pending` or `installing`.
Every message is kept as a status event (shown by `GET /instances/{name}`), even one whose
status GARM then refuses.
"""

from __future__ import annotations

from functools import partial

from garm_sim.auth import TokenSigner
from garm_sim.errors import bad_request
from garm_sim.routing import EMPTY, Request, Response, Route

# GARM's runner status transitions (params.RunnerStatusTransitions) from the statuses a runner
# can call back in.
_TRANSITIONS = {
    "pending": ("failed", "installing", "terminated", "pending"),
    "installing": ("failed", "idle", "terminated", "installing"),
}
_REFUSED = "error updating runner agent ID: error updating instance: {}"


def routes(signer: TokenSigner) -> list[Route]:
    """Return the callback routes (behind the instance token, not the admin's)."""
    return [Route("POST", "/callbacks/status", partial(status, signer), gate="open")]


def status(signer: TokenSigner, request: Request) -> Response:
    """Record a runner's status message, then move its runner status as GARM allows."""
    instance = signer.instance_of(request.state, request.headers_authorization)
    body = request.body()
    new_status = body.text("status")
    instance.status_messages.append(
        {
            "created_at": request.state.clock.stamp(),
            "message": body.text("message"),
            "event_type": "status",
            "event_level": "info",
        }
    )
    agent_id = body.uint("agent_id") or 0
    if agent_id and instance.agent_id and agent_id != instance.agent_id:
        raise bad_request(_REFUSED.format("agent ID mismatch"))
    current = instance.runner_status
    if new_status and new_status != current and new_status not in _TRANSITIONS[current]:
        raise bad_request(
            _REFUSED.format(f"invalid runner status transition from {current} to {new_status}")
        )
    if new_status:
        instance.runner_status = new_status
        instance.updated_at = request.state.clock.stamp()
    return Response(200, EMPTY)
