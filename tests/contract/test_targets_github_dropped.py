"""A scale set GitHub no longer has (its offline deletion), on every target.

GitHub deletes a scale set whose listener stayed offline for days (garm-behaviour B33). The
charm's recovery of live and retired sets rests on what GARM then does, so it is checked
against both real GARM binaries, with the fake GitHub forgetting the set, not only the simulator.
"""

from __future__ import annotations

from contract.conftest import Target


def _github_id(target: Target, scaleset_id: int) -> int:
    return target.call("GET", f"/scalesets/{scaleset_id}").json.get("scale_set_id", 0)


def _exists(target: Target, scaleset_id: int) -> bool:
    return target.call("GET", f"/scalesets/{scaleset_id}").status == 200


def test_a_dropped_scale_set_is_kept_by_delete_and_recreated_by_a_restart(target: Target):
    """Arrange: a disabled scale set without runners (retired, drained), then GitHub forgets it.

    Act: delete it; restart GARM; delete it again.

    Assert: the first delete answers 200 but GARM keeps the scale set with its old GitHub id
    (GitHub answered 404); after the restart GARM's worker has created it again at GitHub under
    a new `scale_set_id`, and the second delete removes it.
    """
    created = target.create_scaleset("dropped")
    sid, old_github_id = created["id"], created["scale_set_id"]
    target.drop_at_github(old_github_id)

    first = target.call("DELETE", f"/scalesets/{sid}")
    kept = _exists(target, sid)
    kept_github_id = _github_id(target, sid)
    target.restart()
    recreated = target.wait_until(lambda: _github_id(target, sid) not in (0, old_github_id))
    second = target.call("DELETE", f"/scalesets/{sid}")

    assert first.status == 200
    assert (kept, kept_github_id) == (True, old_github_id)
    assert recreated
    assert second.status == 200
    assert not _exists(target, sid)
