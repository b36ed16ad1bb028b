"""Every answer GARM can give is handled: 5xx and unreadable 200s are a Waiting naming the call.

Never an uncaught exception in a hook or an action (issue 11, item 2).
"""

from __future__ import annotations

import ops
import pytest
from ops import testing

from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from unit.walks.charm import PASSWORD, Config, Ctx, Resources, bootstrap_secrets, bootstrapped

SERVER_ERROR = '{"error": "Internal Server Error", "details": ""}'
LOGIN = "POST /api/v1/auth/login"
SCALESETS = "GET /api/v1/scalesets"
INSTANCES = "GET /api/v1/instances"


def answer(garm: GarmSim, call: str, status: int, body: str) -> None:
    """Make GARM (or a proxy in front of it) answer every `METHOD /path` call with this."""
    method, path = call.split(" ", 1)
    garm.fault(method=method, path=path, status=status, body=body)


def leader(resources: Resources, config: Config) -> testing.State:
    """A leader whose bootstrap secrets exist."""
    return testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )


@pytest.mark.parametrize(
    ("call", "status", "body", "expected"),
    [
        (LOGIN, 500, SERVER_ERROR, "GARM failed login (HTTP 500); retrying at the next hook"),
        (LOGIN, 503, "upstream down", "GARM failed login (HTTP 503); retrying at the next hook"),
        (
            LOGIN,
            200,
            '{"no": "token"}',
            "GARM answered login with an unreadable body; retrying at the next hook",
        ),
        (
            SCALESETS,
            500,
            SERVER_ERROR,
            "GARM failed list scale sets (HTTP 500); retrying at the next hook",
        ),
        (
            SCALESETS,
            200,
            '{"not": "a list"}',
            "GARM answered list scale sets with an unreadable body; retrying at the next hook",
        ),
        (
            SCALESETS,
            200,
            "<html>proxy error</html>",
            "GARM answered list scale sets with an unreadable body; retrying at the next hook",
        ),
    ],
    ids=[
        "login-500",
        "login-503-text",
        "login-200-no-token",
        "list-500",
        "list-200-object",
        "list-200-html",
    ],
)
def test_a_failed_or_unreadable_answer_waits_naming_the_call(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: Resources,
    config: Config,
    call: str,
    status: int,
    body: str,
    expected: str,
):
    """Arrange: a bootstrapped GARM that answers one call with a 5xx or an unreadable 200.

    Act: update-status. Assert: Waiting naming that call (no exception); nothing was created
    or deleted in GARM.
    """
    bootstrapped(garm)
    answer(garm, call, status, body)

    out = ctx.run(ctx.on.update_status(), leader(resources, config))

    assert out.unit_status == ops.WaitingStatus(expected)
    assert len(out.unit_status.message) <= 120
    assert PASSWORD not in out.unit_status.message
    assert not [
        w for w in garm.write_calls() if w.startswith(("DELETE", "POST /api/v1/first-run"))
    ]


def test_unreadable_controller_info_after_a_start_still_bootstraps(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: GARM answers controller-info with a 200 that is not JSON; a fresh start.

    Act: start. Assert: the start wait counts it as an answer and the hook ends Waiting naming
    controller-info, not in an exception.
    """
    bootstrapped(garm)
    answer(garm, "GET /api/v1/controller-info", 200, "not json")

    out = ctx.run(ctx.on.start(), leader(resources, config))

    assert out.unit_status == ops.WaitingStatus(
        "GARM answered controller-info with an unreadable body; retrying at the next hook"
    )


@pytest.mark.parametrize(
    ("call", "status", "body", "match"),
    [
        (LOGIN, 500, SERVER_ERROR, "login: HTTP 500"),
        (SCALESETS, 200, '{"not": "a list"}', "list scale sets: expected a JSON list"),
        (INSTANCES, 502, "Bad Gateway", "list instances: HTTP 502"),
    ],
    ids=["login-500", "list-200-object", "instances-502"],
)
def test_list_scalesets_action_fails_cleanly_on_any_answer(
    ctx: Ctx,
    workload: RecordingWorkload,
    garm: GarmSim,
    config: Config,
    call: str,
    status: int,
    body: str,
    match: str,
):
    """Arrange: GARM answers one call of the action with a 5xx or an unreadable 200.

    Act: list-scalesets. Assert: the action fails with a message naming the call; never an
    uncaught exception.
    """
    bootstrapped(garm)
    answer(garm, call, status, body)
    state = testing.State(leader=True, config=config, secrets=bootstrap_secrets())

    with pytest.raises(testing.ActionFailed, match=match):
        ctx.run(ctx.on.action("list-scalesets"), state)
