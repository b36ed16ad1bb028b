"""Scale-set create, read and update against the recordings (C1-C4, C10, C11, C14)."""

from __future__ import annotations

from typing import Any

import pytest

from contract.conftest import Garm, scaleset_body
from contract.garm_http import assert_same_shape, call, recorded_body, recording

CREATES = [
    "01_6a_create_name_len_10",
    "02_6a_create_name_len_11",
    "03_6a_create_name_len_40",
    "04_6a_create_name_len_64",
    "05_6a_create_name_len_65",
    "06_6a_create_name_len_100",
]


def _with_recorded_endpoint(garm: Garm) -> None:
    """Make the repository's endpoint look like the recordings' (description and CA set)."""
    endpoint = garm.sim.state.endpoints["github.com"]
    endpoint.description = "fake GitHub on loopback"


@pytest.mark.parametrize("name", CREATES)
def test_names_of_any_length_are_accepted(garm: Garm, name: str):
    """Arrange: no GitHub name limit. Act: replay a recorded create (C1).

    Assert: 200 with the recorded keys in the recorded order, the name kept whole.
    """
    body = recorded_body(name)

    reply = garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", body)

    recorded = recording(name)
    assert reply.status == recorded["status"]
    assert_same_shape(reply.json, recorded["json"])
    assert reply.json["name"] == body["name"]


def test_github_name_limit_answers_400_with_githubs_message(garm: Garm):
    """Arrange: GitHub refuses names over 64 characters. Act: create a 65-character name (C1).

    Assert: 400 Bad Request naming GitHub's refusal in details; nothing created.
    """
    garm.sim.github.max_name_length = 64
    body = recorded_body("13_6a_create_len65_fake_rejects")

    reply = garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", body)

    recorded = recording("13_6a_create_len65_fake_rejects")
    assert reply.status == recorded["status"] == 400
    assert reply.json["error"] == recorded["json"]["error"]
    assert "longer than 64 characters" in reply.json["details"]
    assert garm.call("GET", "/scalesets").json == []


def test_duplicate_name_is_conflict(garm: Garm):
    """Arrange: a scale set `dup-name-1`. Act: create it again (C2). Assert: 409 Conflict."""
    first = garm.call(
        "POST", f"/repositories/{garm.repo_id}/scalesets", recorded_body("14_6a_create_dup_first")
    )

    second = garm.call(
        "POST", f"/repositories/{garm.repo_id}/scalesets", recorded_body("15_6a_create_dup_second")
    )

    assert first.status == 200
    assert (second.status, second.json["error"]) == (409, "Conflict")
    assert "already exists" in second.json["details"]


def test_garm_id_and_github_id_differ_after_a_late_failure(garm: Garm):
    """Arrange: one create that fails late (max 0, C11). Act: create a valid scale set (C2).

    Assert: GARM's `id` and GitHub's `scale_set_id` are different numbers.
    """
    garm.call(
        "POST", f"/repositories/{garm.repo_id}/scalesets", scaleset_body("bad", max_runners=0)
    )

    created = garm.create_scaleset("good")

    assert created["id"] != created["scale_set_id"]


@pytest.mark.parametrize(
    ("create", "get"),
    [
        ("17_6a_create_min0_enabled", "18_6b_get_min0_enabled"),
        ("19_6a_create_min0_disabled", "20_6b_get_min0_disabled"),
    ],
)
def test_zero_and_false_fields_are_absent(garm: Garm, create: str, get: str):
    """Arrange: nothing. Act: create (enabled, or disabled) with min idle 0 and GET it (C3).

    Assert: the recorded shapes: `enabled` only when true, no `min_idle_runners`, no
    `instances`/`extended_state`/`extra_specs`; `status_messages` null; state pending_create.
    """
    _with_recorded_endpoint(garm)

    created = garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", recorded_body(create))
    fetched = garm.call("GET", f"/scalesets/{created.json['id']}")

    assert_same_shape(created.json, recording(create)["json"])
    assert_same_shape(fetched.json, recording(get)["json"])
    for absent in (
        "min_idle_runners",
        "instances",
        "extended_state",
        "extra_specs",
        "desired_runner_count",
    ):
        assert absent not in fetched.json
    assert fetched.json["status_messages"] is None
    assert fetched.json["state"] == "pending_create"
    assert fetched.json.get("enabled", False) is recorded_body(create)["enabled"]


def test_lists_omit_what_only_get_by_id_returns(garm: Garm):
    """Arrange: a scale set with extra specs. Act: list per repository, list all, GET by id (C3).

    Assert: both lists have the recorded shapes plus `extra_specs` (both binaries list them; the
    recorded sets had none), no template name or instances, the per-repo list with an empty
    endpoint; GET by id has the template name and extra specs.
    """
    created = garm.create_scaleset("acc-min0", extra_specs={"disk": 10}, enabled=True)

    per_repo = garm.call("GET", f"/repositories/{garm.repo_id}/scalesets").json
    everything = garm.call("GET", "/scalesets").json
    one = garm.call("GET", f"/scalesets/{created['id']}").json

    assert_same_shape(
        per_repo, [_with_extra_specs(recording("21_6b_list_repo_scalesets")["json"][0])]
    )
    assert per_repo[0]["endpoint"] == {
        "created_at": "0001-01-01T00:00:00Z",
        "updated_at": "0001-01-01T00:00:00Z",
    }
    assert_same_shape(
        everything,
        recording("65_6f_list_all_scalesets_final")["json"] and [_with_extra_specs(_all_shape())],
    )
    assert (per_repo[0]["extra_specs"], everything[0]["extra_specs"]) == ({"disk": 10},) * 2
    assert "template_name" not in everything[0]
    assert "template_name" not in per_repo[0]
    assert one["extra_specs"] == {"disk": 10}
    assert one["template_name"] == "github_linux"


def _with_extra_specs(recorded: dict[str, Any]) -> dict[str, Any]:
    """A recorded list element plus `extra_specs` where both binaries put it."""
    ordered: dict[str, Any] = {}
    for key, value in recorded.items():
        ordered[key] = value
        if key == "runner_bootstrap_timeout":
            ordered["extra_specs"] = {"disk": 10}
    return ordered


def _all_shape() -> dict[str, Any]:
    """The recorded GET /scalesets element plus `enabled`, which the recorded set lacked."""
    recorded = dict(recording("65_6f_list_all_scalesets_final")["json"][0])
    ordered: dict[str, Any] = {}
    for key, value in recorded.items():
        ordered[key] = value
        if key == "os_arch":
            ordered["enabled"] = True
    return ordered


def test_tags_are_global_and_case_insensitive(garm: Garm):
    """Arrange: a scale set labelled `Ubuntu`. Act: create another labelled `ubuntu`.

    Assert: the second one's tags read `Ubuntu` (GARM links the existing tag row).
    """
    garm.create_scaleset("first", labels=["Ubuntu"])

    second = garm.create_scaleset("second", labels=["ubuntu", "gpu"])

    assert sorted(tag["name"] for tag in second["tags"]) == ["Ubuntu", "gpu"]


def test_labels_dropped_by_github_are_missing_from_tags(garm: Garm):
    """Arrange: an older GHES keeping one label only. Act: create with two labels.

    Assert: the returned tags lack the dropped label.
    """
    garm.sim.github.max_labels = 1

    created = garm.create_scaleset("old-ghes", labels=["harness", "x64"])

    assert [tag["name"] for tag in created["tags"]] == ["harness"]


def test_update_ignores_labels_and_keeps_updated_at(garm: Garm):
    """Arrange: a scale set. Act: PUT new labels (C4, C14).

    Assert: 200 as recorded, tags unchanged, `updated_at` unchanged.
    """
    created = garm.create_scaleset("acc-min0", enabled=True)

    reply = garm.call("PUT", f"/scalesets/{created['id']}", recorded_body("22_6c_update_labels"))

    assert reply.status == 200
    assert_same_shape(reply.json, recording("22_6c_update_labels")["json"])
    assert reply.json["tags"] == created["tags"]
    assert reply.json["updated_at"] == created["updated_at"]


def test_update_uses_runner_group_and_bumps_generation(garm: Garm):
    """Arrange: a scale set and a GitHub runner group `fake-group`.

    Act: rename, change group, change max runners and flavor (C4).

    Assert: the recorded answers: name and `github-runner-group` change, `generation` moves on
    the group and flavor changes, `updated_at` moves on each.
    """
    garm.sim.github.runner_groups.add("fake-group")
    created = garm.create_scaleset("acc-min0", enabled=True)
    path = f"/scalesets/{created['id']}"

    renamed = garm.call("PUT", path, recorded_body("23_6c_update_name")).json
    regrouped = garm.call("PUT", path, recorded_body("24_6c_update_runner_group")).json
    resized = garm.call("PUT", path, recorded_body("25_6c_update_max_runners_flavor")).json

    assert renamed["name"] == "acc-min0-renamed"
    assert (regrouped["github-runner-group"], regrouped["generation"]) == ("fake-group", 1)
    assert (resized["max_runners"], resized["flavor"], resized["generation"]) == (5, "large", 2)
    stamps = [
        created["updated_at"],
        renamed["updated_at"],
        regrouped["updated_at"],
        resized["updated_at"],
    ]
    assert len(set(stamps)) == 4


def test_unknown_runner_group_on_update_is_not_found(garm: Garm):
    """Arrange: a scale set. Act: PUT an unknown runner group. Assert: 404 as recorded."""
    created = garm.create_scaleset("x-upd")

    reply = garm.call(
        "PUT", f"/scalesets/{created['id']}", recorded_body("106_x_update_runner_group_unknown")
    )

    assert reply.json == recording("106_x_update_runner_group_unknown")["json"]


def test_rename_refused_by_github_changes_nothing(garm: Garm):
    """Arrange: GitHub refuses names over 10 characters. Act: rename to a longer name.

    Assert: 400 with GitHub's message; the scale set keeps its name and `updated_at`.
    """
    created = garm.create_scaleset("x-upd")
    garm.sim.github.max_name_length = 10

    reply = garm.call(
        "PUT", f"/scalesets/{created['id']}", recorded_body("104_x_update_name_github_rejects")
    )

    after = garm.call("GET", f"/scalesets/{created['id']}").json
    assert reply.status == 400
    assert "longer than 10 characters" in reply.json["details"]
    assert (after["name"], after["updated_at"]) == ("x-upd", created["updated_at"])


@pytest.mark.parametrize(
    ("body", "details"),
    [
        ({"min_idle_runners": 5}, "min_idle_runners cannot be larger than max_runners"),
        ({"runner_bootstrap_timeout": 0}, "runner_bootstrap_timeout cannot be 0"),
        (
            {"max_runners": 0, "min_idle_runners": 1},
            "min_idle_runners cannot be larger than max_runners",
        ),
    ],
)
def test_update_refuses_min_above_max(garm: Garm, body: dict[str, Any], details: str):
    """Arrange: a scale set with max 2. Act: PUT an inconsistent size (C12). Assert: 400."""
    created = garm.create_scaleset("x-upd")

    reply = garm.call("PUT", f"/scalesets/{created['id']}", body)

    assert reply.json == {"error": "Bad Request", "details": details}


def test_max_zero_with_min_zero_is_accepted_and_reads_absent(garm: Garm):
    """Arrange: a scale set with min 1 max 2. Act: PUT min 0 and max 0 (C12).

    Assert: 200, and `max_runners` and `min_idle_runners` are absent from the answer.
    """
    created = garm.create_scaleset("retire", min_idle_runners=1)

    reply = garm.call(
        "PUT", f"/scalesets/{created['id']}", {"min_idle_runners": 0, "max_runners": 0}
    )

    assert reply.status == 200
    assert "max_runners" not in reply.json
    assert "min_idle_runners" not in reply.json


def test_updated_at_moves_only_on_effective_change(garm: Garm):
    """Arrange: a disabled scale set left alone while the clock moves on.

    Act: PUT the same values, then a new `extended_state` (C14).

    Assert: `updated_at` unchanged after idling and the no-op PUT; moved after the change;
    `extended_state` returned by GET and both lists.
    """
    created = garm.create_scaleset("idle-set", max_runners=3)
    path = f"/scalesets/{created['id']}"
    garm.sim.advance(20)

    untouched = garm.call("GET", path).json
    same = garm.call("PUT", path, {"max_runners": 3, "enabled": False, "flavor": "small"}).json
    changed = garm.call("PUT", path, {"extended_state": '{"drain_started": 1}'}).json

    assert untouched["updated_at"] == same["updated_at"] == created["updated_at"]
    assert changed["updated_at"] != created["updated_at"]
    assert changed["extended_state"] == '{"drain_started": 1}'
    listed = garm.call("GET", "/scalesets").json[0]
    per_repo = garm.call("GET", f"/repositories/{garm.repo_id}/scalesets").json[0]
    assert listed["extended_state"] == per_repo["extended_state"] == '{"drain_started": 1}'


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        ("56_6f_create_missing_provider", {}),
        ("58_6f_create_max_runners_0", {}),
        ("59_6f_create_min_gt_max", {}),
        ("60_6f_create_empty_name", {}),
        (None, {"image": ""}),
        (None, {"flavor": ""}),
    ],
)
def test_late_validation_answers_500_with_empty_details(
    garm: Garm, name: str | None, fields: dict[str, Any]
):
    """Arrange: nothing. Act: create with an invalid field (C11).

    Assert: 500 `{"error":"Server error","details":""}` as recorded; nothing created.
    """
    body = recorded_body(name) if name else scaleset_body("late", **fields)

    reply = garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", body)

    assert (reply.status, reply.raw) == (
        500,
        recording("56_6f_create_missing_provider")["raw_response"],
    )
    assert garm.call("GET", "/scalesets").json == []


def test_unknown_provider_is_accepted_but_never_scales(garm: Garm):
    """Arrange: nothing. Act: create with provider `nope`, min idle 1, enabled (C11).

    Assert: 200 as recorded; after worker passes there are still no instances.
    """
    body = recorded_body("57_6f_create_unknown_provider") | {
        "min_idle_runners": 1,
        "enabled": True,
    }

    reply = garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", body)
    garm.sim.advance(60)

    assert reply.status == 200
    assert reply.json["provider_name"] == "nope"
    assert garm.call("GET", f"/scalesets/{reply.json['id']}/instances").json == []


@pytest.mark.parametrize(
    ("name", "body"),
    [("61_6f_create_bad_os_type", None), (None, scaleset_body("no-os") | {"os_type": None})],
)
def test_missing_or_bad_os_type_is_bad_request(
    garm: Garm, name: str | None, body: dict[str, Any] | None
):
    """Arrange: nothing. Act: create with os_type plan9 or none (C11). Assert: 400 as recorded."""
    payload = recorded_body(name) if name else body

    reply = garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", payload)

    assert reply.raw == recording("61_6f_create_bad_os_type")["raw_response"]


def test_create_under_unknown_repository_is_not_found(garm: Garm):
    """Arrange: nothing. Act: create under the zero UUID. Assert: 404 as recorded."""
    recorded = recording("62_6f_create_repo_not_found")

    reply = garm.call(
        "POST", recorded["request"]["path"].removeprefix("/api/v1"), recorded["request"]["body"]
    )

    assert (reply.status, reply.raw) == (recorded["status"], recorded["raw_response"])


@pytest.mark.parametrize(
    ("name", "method", "path", "body"),
    [
        ("51_6f_get_not_found", "GET", "/scalesets/999999", None),
        ("52_6f_get_bad_id", "GET", "/scalesets/abc", None),
        ("53_6f_update_not_found", "PUT", "/scalesets/999999", {"max_runners": 3}),
        ("54_6f_instances_not_found", "GET", "/scalesets/999999/instances", None),
    ],
)
def test_error_answers_match_recordings(garm: Garm, name: str, method: str, path: str, body: Any):
    """Arrange: no scale sets. Act: call with an unknown or malformed id (C10).

    Assert: status and raw body exactly as recorded.
    """
    reply = garm.call(method, path, body)

    recorded = recording(name)
    assert (reply.status, reply.raw) == (recorded["status"], recorded["raw_response"])


def test_bad_json_is_invalid_request(garm: Garm):
    """Arrange: nothing. Act: create with a broken body (C10). Assert: 400 as recorded."""
    reply = garm.call("POST", f"/repositories/{garm.repo_id}/scalesets", raw_body=b"{not json")

    assert reply.raw == recording("55_6f_create_bad_json")["raw_response"]


def test_wrong_json_type_is_invalid_request(garm: Garm):
    """Arrange: nothing. Act: create with a negative max_runners. Assert: 400 invalid request."""
    reply = garm.call(
        "POST", f"/repositories/{garm.repo_id}/scalesets", scaleset_body("neg", max_runners=-1)
    )

    assert reply.json == {"error": "Bad Request", "details": "invalid request"}


def test_unauthenticated_scaleset_calls_are_refused(garm: Garm):
    """Arrange: a scale set. Act: GET it without a token. Assert: 401 and the set unchanged."""
    created = garm.create_scaleset("guarded")

    reply = call(garm.url, "GET", f"/scalesets/{created['id']}")

    assert reply.status == 401
