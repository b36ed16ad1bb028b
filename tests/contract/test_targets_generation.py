"""Which in-place scale-set updates move `generation`, and what runners carry, on every target.

The charm's rolling refresh (ADR 0022) decides which idle runners are outdated from these
facts, so they are checked against both real GARM binaries, not only the simulator.
"""

from __future__ import annotations

import base64
from typing import Any

from contract.conftest import Target


def _runners(target: Target, scaleset_id: int) -> list[dict[str, Any]]:
    return target.call("GET", f"/scalesets/{scaleset_id}/instances").json or []


def _generation(target: Target, scaleset_id: int) -> int:
    return target.call("GET", f"/scalesets/{scaleset_id}").json["generation"]


def _template(target: Target) -> int:
    body = {
        "name": "probe-template",
        "description": "a second linux template",
        "data": base64.b64encode(b"#!/bin/bash\necho {{ .RunnerName }}\n").decode(),
        "os_type": "linux",
        "forge_type": "github",
    }
    reply = target.call("POST", "/templates", body)
    assert reply.status == 200, reply.raw
    return reply.json["id"]


def test_which_updates_move_generation(target: Target):
    """Arrange: an enabled scale set (min idle 1) whose runner is running, and a second template.

    Act: update image, flavor, extra_specs, template_id, min/max, extended_state, one at a time;
    then force-remove the runner so GARM makes a new one after the bumps.

    Assert: image, flavor and extra_specs each move `generation` by one; template_id, counts and
    extended_state do not; runners of a scale set always carry generation 0, also those made
    after the bumps (so `outdatedOnly` lists every runner once the set's generation moved).
    """
    created = target.create_scaleset("gen", enabled=True, min_idle_runners=1)
    sid = created["id"]
    template_id = _template(target)
    assert target.wait_until(lambda: [r["status"] for r in _runners(target, sid)] == ["running"])
    first = _runners(target, sid)[0]
    steps: list[tuple[str, dict[str, Any]]] = [
        ("image", {"image": "ubuntu:24.04"}),
        ("flavor", {"flavor": "large"}),
        ("extra_specs", {"extra_specs": {"a": 1}}),
        ("template", {"template_id": template_id}),
        ("counts", {"min_idle_runners": 1, "max_runners": 3}),
        ("extended_state", {"extended_state": "probe"}),
    ]
    moved: dict[str, int] = {}
    for what, body in steps:
        before = _generation(target, sid)
        reply = target.call("PUT", f"/scalesets/{sid}", body)
        assert reply.status == 200, (what, reply.raw)
        moved[what] = _generation(target, sid) - before
    outdated = target.call("GET", f"/scalesets/{sid}/instances?outdatedOnly=true").json or []
    name = first["name"]
    target.call("DELETE", f"/instances/{name}?forceRemove=true&bypassGHUnauthorized=true")
    assert target.wait_until(
        lambda: [r["status"] for r in _runners(target, sid) if r["name"] != name] == ["running"]
    )
    second = next(r for r in _runners(target, sid) if r["name"] != name)

    assert moved == {
        "image": 1,
        "flavor": 1,
        "extra_specs": 1,
        "template": 0,
        "counts": 0,
        "extended_state": 0,
    }
    assert (first["generation"], second["generation"]) == (0, 0)
    assert [r["name"] for r in outdated] == [name]
    assert _generation(target, sid) == 3
