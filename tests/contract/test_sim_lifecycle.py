"""Runners, enable/disable, delete and the 200-but-kept delete (C5-C9, C12, C13)."""

from __future__ import annotations

import base64

import pytest

from contract.conftest import Garm, scaleset_body
from contract.garm_http import assert_same_shape, call, recorded_body, recording
from garm_sim import GarmSim


def test_enabled_flag_round_trips(garm: Garm):
    """Arrange: an enabled scale set. Act: disable, enable, disable again (C5).

    Assert: the recorded shapes: `enabled` absent when disabled, true when enabled.
    """
    created = garm.create_scaleset("acc-min0", enabled=True)
    path = f"/scalesets/{created['id']}"

    off = garm.call("PUT", path, recorded_body("26_6c_update_disable")).json
    on = garm.call("PUT", path, recorded_body("28_6c_update_enable_again")).json
    off_again = garm.call("PUT", path, recorded_body("29_6c_update_disable_again")).json

    assert "enabled" not in off
    assert on["enabled"] is True
    assert "enabled" not in off_again
    assert_same_shape(garm.call("GET", path).json, recording("27_6c_get_after_disable")["json"])


def test_min_idle_one_creates_a_running_runner(garm: Garm):
    """Arrange: nothing. Act: create an enabled scale set with min idle 1 (C6).

    Assert: one instance, `running`, with the recorded instance shape in both the instance list
    and the embedded `instances` of GET by id (where `provider_name` is empty).
    """
    created = garm.call(
        "POST",
        f"/repositories/{garm.repo_id}/scalesets",
        recorded_body("30_6d_create_min1_enabled"),
    ).json

    listed = garm.call("GET", f"/scalesets/{created['id']}/instances").json
    fetched = garm.call("GET", f"/scalesets/{created['id']}").json

    assert len(listed) == 1
    assert listed[0]["status"] == "running"
    assert listed[0]["scale_set_id"] == created["id"]
    assert_same_shape(listed, _instance_shape("31_6d_list_instances_min1"))
    assert_same_shape(fetched, recording("32_6d_get_min1_scaleset")["json"])
    assert fetched["instances"][0]["provider_name"] == ""


def _instance_shape(name: str) -> list[dict[str, object]]:
    """The recorded instance with the simulator's fixed OS values (the fake's were different)."""
    return list(recording(name)["json"])


def test_min_idle_zero_has_no_instances(garm: Garm):
    """Arrange: an enabled scale set with min idle 0. Act: list its instances (C6).

    Assert: `[]` as recorded.
    """
    created = garm.create_scaleset("acc-min0-off", enabled=True, max_runners=1)
    garm.sim.advance(30)

    reply = garm.call("GET", f"/scalesets/{created['id']}/instances")

    assert reply.raw == recording("33_6d_list_instances_min0")["raw_response"]


def test_disabled_scaleset_creates_no_runner(garm: Garm):
    """Arrange: a disabled scale set with min idle 1. Act: let the worker run. Assert: none."""
    created = garm.create_scaleset("off", min_idle_runners=1)

    garm.sim.advance(60)

    assert garm.call("GET", f"/scalesets/{created['id']}/instances").json == []


def test_delete_is_refused_with_runners_or_while_enabled(garm: Garm):
    """Arrange: S1 enabled with a runner; S2 enabled and empty. Act: delete both (C7).

    Assert: 400 `scale set has runners` for S1, `scale set is enabled; disable it first` for S2,
    exactly as recorded; both still exist.
    """
    s1 = garm.create_scaleset("acc-min1", enabled=True, min_idle_runners=1)
    s2 = garm.create_scaleset("acc-min0-off", enabled=True, max_runners=1)

    with_runner = garm.call("DELETE", f"/scalesets/{s1['id']}")
    enabled = garm.call("DELETE", f"/scalesets/{s2['id']}")

    assert with_runner.raw == recording("34_6e_delete_with_instance_enabled")["raw_response"]
    assert enabled.raw == recording("36_6e_delete_enabled_no_instances")["raw_response"]
    assert len(garm.call("GET", "/scalesets").json) == 2


def test_disabling_keeps_the_idle_runner_until_min_idle_drops(garm: Garm):
    """Arrange: an enabled scale set with one idle runner.

    Act: disable it, try to delete, set min idle 0, delete (C7, C8).

    Assert: the runner survives disabling (delete refused as recorded); after min idle 0 it goes
    away, the delete answers 200 with an empty body, GET answers 404, a second delete 200.
    """
    created = garm.create_scaleset("acc-min1", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}"

    disabled = garm.call("PUT", path, recorded_body("38_6e_disable_min1")).json
    refused = garm.call("DELETE", path)
    garm.call("PUT", path, recorded_body("40_6e_set_min_idle_0"))
    instances = garm.call("GET", f"{path}/instances")
    deleted = garm.call("DELETE", path)
    gone = garm.call("GET", path)
    again = garm.call("DELETE", path)

    assert len(disabled["instances"]) == 1
    assert refused.raw == recording("39_6e_delete_with_instance_disabled")["raw_response"]
    assert instances.json == []
    assert (deleted.status, deleted.raw) == (200, "")
    assert gone.raw == recording("43_6e_get_after_delete")["raw_response"]
    assert (again.status, again.raw) == (200, "")


@pytest.mark.parametrize("github_status", [500, 404])
def test_delete_not_confirmed_by_github_answers_200_and_keeps(garm: Garm, github_status: int):
    """Arrange: a disabled, empty scale set; GitHub answers its DELETE with 500 or 404.

    Act: delete it (C9).

    Assert: 200 with an empty body, but GET still returns the scale set; once GitHub answers 204
    the delete really deletes.
    """
    created = garm.create_scaleset("acc-min0-off", max_runners=1)
    path = f"/scalesets/{created['id']}"
    garm.sim.github.delete_status = github_status

    kept = garm.call("DELETE", path)
    after = garm.call("GET", path)
    garm.sim.github.delete_status = 204
    garm.call("DELETE", path)

    assert (kept.status, kept.raw) == (
        200,
        recording("45_6e_delete_when_github_500")["raw_response"],
    )
    assert after.status == 200
    assert_same_shape(after.json, recording("46_6e_get_after_github_500_delete")["json"])
    assert garm.call("GET", path).status == 404


def test_bad_credentials_fail_create_and_keep_on_delete(garm: Garm):
    """Arrange: a scale set; then GitHub refuses GARM's credentials.

    Act: create and delete (C9).

    Assert: create 500 with empty details and delete 200 while the scale set stays, as recorded.
    """
    created = garm.create_scaleset("x-upd")
    garm.sim.github.bad_credentials = True

    create = garm.call(
        "POST",
        f"/repositories/{garm.repo_id}/scalesets",
        recorded_body("107_x_create_github_bad_credentials"),
    )
    delete = garm.call("DELETE", f"/scalesets/{created['id']}")

    assert create.raw == recording("107_x_create_github_bad_credentials")["raw_response"]
    assert (delete.status, delete.raw) == (200, "")
    assert garm.call("GET", f"/scalesets/{created['id']}").status == 200


def test_retired_scaleset_loses_its_runner_and_can_be_deleted(garm: Garm):
    """Arrange: an enabled scale set with an idle runner.

    Act: PUT enabled false, min 0, max 0, then delete (C12).

    Assert: the runner is gone and the delete really deletes.
    """
    created = garm.create_scaleset("old", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}"

    garm.call("PUT", path, {"enabled": False, "min_idle_runners": 0, "max_runners": 0})
    garm.sim.tick()
    deleted = garm.call("DELETE", path)

    assert deleted.status == 200
    assert garm.call("GET", path).status == 404


def test_desired_runner_count_adds_runners_up_to_max(garm: Garm):
    """Arrange: an enabled scale set min 1, max 3. Act: GitHub reports 5 assigned jobs.

    Assert: three runners (min(1 + 5, 3)) and `desired_runner_count` 5 in the scale set.
    """
    created = garm.create_scaleset("busy", enabled=True, min_idle_runners=1, max_runners=3)

    garm.sim.set_desired("busy", 5)
    garm.sim.tick()

    fetched = garm.call("GET", f"/scalesets/{created['id']}").json
    assert len(fetched["instances"]) == 3
    assert fetched["desired_runner_count"] == 5


def test_active_runners_are_never_scaled_down(garm: Garm):
    """Arrange: a scale set with two runners, one running a job. Act: drop min and max to 0.

    Assert: the idle runner goes, the active one stays until its job finishes.
    """
    garm.create_scaleset("jobs", enabled=True, min_idle_runners=2)
    garm.sim.tick()  # the runners boot and report idle
    busy = garm.sim.start_job("jobs")

    garm.call(
        "PUT",
        f"/scalesets/{garm.sim.scaleset('jobs').id}",
        {"min_idle_runners": 0, "max_runners": 0},
    )
    during = [i["name"] for i in garm.call("GET", "/instances").json]
    garm.sim.finish_job(busy)
    after = garm.call("GET", "/instances").json

    assert during == [busy]
    assert after == []


def test_finished_job_runner_is_replaced(garm: Garm):
    """Arrange: an enabled scale set with one idle runner (max 2). Act: run and finish a job on it.

    Assert: the runner is active during the job, and GARM boots another beside it (`pending`,
    as every runner GARM has created and no real runner has reported for yet): GitHub counts the
    running job as assigned, which raises the desired count to 1. Afterwards the count is 0 and
    only that other runner serves.
    """
    garm.create_scaleset("ephemeral", enabled=True, min_idle_runners=1)
    garm.sim.tick()  # the runners boot and report idle
    runner = garm.sim.start_job("ephemeral")
    during = garm.call("GET", "/instances").json
    desired = garm.sim.scaleset("ephemeral").desired_runner_count

    garm.sim.finish_job(runner)
    after = garm.call("GET", "/instances").json

    statuses = [(i["name"], i["runner_status"]) for i in during]
    assert desired == 1
    assert statuses[0] == (runner, "active")
    assert [status for _, status in statuses[1:]] == ["pending"]
    assert [i["name"] for i in after] == [statuses[1][0]]
    assert garm.sim.scaleset("ephemeral").desired_runner_count == 0


def test_force_removed_instance_goes_and_disabled_set_does_not_replace_it(garm: Garm):
    """Arrange: a disabled scale set (min idle 1) with one running runner.

    Act: DELETE the instance with forceRemove and bypassGHUnauthorized (C13).

    Assert: 200 empty body; the instance is gone after the next tick and not replaced.
    """
    created = garm.create_scaleset("force", enabled=True, min_idle_runners=1)
    garm.call("PUT", f"/scalesets/{created['id']}", {"enabled": False})
    name = garm.call("GET", "/instances").json[0]["name"]

    reply = garm.call("DELETE", f"/instances/{name}?forceRemove=true&bypassGHUnauthorized=true")
    garm.sim.advance(5)

    assert (reply.status, reply.raw) == (200, "")
    assert garm.call("GET", "/instances").json == []


def test_instance_still_being_created_cannot_be_deleted():
    """Arrange: runners take 10 s to boot; a fresh runner in pending_create.

    Act: DELETE it (C13), then again after it booted.

    Assert: 400 naming the allowed states; after booting the delete is accepted.
    """
    with GarmSim(["fake"], boot_seconds=10, frozen_clock=True) as sim:
        token = sim.bootstrap()
        repo = sim.seed_entity()
        body = {
            "name": "slow",
            "provider_name": "fake",
            "image": "i",
            "flavor": "f",
            "os_type": "linux",
            "max_runners": 1,
            "min_idle_runners": 1,
            "enabled": True,
        }
        call(sim.url, "POST", f"/repositories/{repo}/scalesets", body, token=token)
        sim.tick()
        name = sim.instances("slow")[0].name
        refused = call(sim.url, "DELETE", f"/instances/{name}?forceRemove=true", token=token)
        sim.advance(10)
        accepted = call(sim.url, "DELETE", f"/instances/{name}?forceRemove=true", token=token)

    assert refused.json == {
        "error": "Bad Request",
        "details": "runner must be in one of the following states: "
        '"running, error, pending_force_delete, pending_delete"',
    }
    assert accepted.status == 200


def test_all_instances_carry_garms_scaleset_id_and_base64_fault(garm: Garm):
    """Arrange: a runner whose provider reported a fault. Act: GET /instances.

    Assert: `scale_set_id` is GARM's id (not GitHub's) and `provider_fault` decodes from base64.
    """
    garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", scaleset_body("x", max_runners=0))
    created = garm.create_scaleset("faulty", enabled=True, min_idle_runners=1)
    name = garm.sim.instances("faulty")[0].name
    garm.sim.set_provider_fault(name, b"quota exceeded")

    instance = garm.call("GET", "/instances").json[0]

    assert instance["scale_set_id"] == created["id"] != created["scale_set_id"]
    assert base64.b64decode(instance["provider_fault"]) == b"quota exceeded"
    assert instance["status"] == "error"


def test_finish_job_by_scaleset_name(garm: Garm):
    """Arrange: two runners, one busy. Act: finish the job by naming the scale set.

    Assert: the busy runner is the one that finished; the idle one stays.
    """
    garm.create_scaleset("pair", enabled=True, min_idle_runners=2)
    garm.sim.tick()  # the runners boot and report idle
    busy = garm.sim.start_job("pair")

    finished = garm.sim.finish_job("pair")
    garm.sim.tick()

    remaining = [i.name for i in garm.sim.instances("pair")]
    assert finished == busy
    assert busy not in remaining
    assert len(remaining) == 2


def test_a_runner_reports_through_the_callback_url(garm: Garm):
    """Arrange: a runner that does not report by itself, and the token its provider got.

    Act: post `installing`, an unknown status, `idle`, then `installing` again, with that
    token; also post once with a forged one (B44).

    Assert: the forged token and the post after `idle` are 401; the unknown status is 400
    naming the transition; the runner ends `idle`, takes a job, and lists every message.
    """
    garm.sim.github.runners_report = False
    created = garm.create_scaleset("reports", enabled=True, min_idle_runners=1)
    runner = garm.sim.instances(created["id"])[0].name
    token = garm.sim.instance_token(runner)

    def report(status: str, with_token: str = token) -> int:
        body = {"status": status, "message": f"now {status}"}
        return garm.call("POST", "/callbacks/status", body, token=with_token).status

    answers = [
        report("installing", "forged.token.x"),
        report("installing"),
        report("no-such-status"),
        report("idle"),
        report("installing"),
    ]
    read = garm.call("GET", f"/instances/{runner}").json

    assert answers == [401, 200, 400, 200, 401]
    assert read["runner_status"] == "idle"
    assert [m["message"] for m in read["status_messages"]] == [
        "now installing",
        "now no-such-status",
        "now idle",
    ]
    assert garm.sim.start_job(created["id"]) == runner
