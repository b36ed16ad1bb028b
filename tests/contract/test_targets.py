"""HTTP-only behaviours run against the four targets: sim and real, as v0.2.1 and newer.

The targets are `sim-v0.2.1`, `sim-newer`, `real-v0.2.1` and `real-newer`. Each test here
uses nothing but the API, so the same assertions hold for all; a real target is skipped
(with the reason) when its binary is not found.
"""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from contract.conftest import ADMIN, PASSWORD, Target, scaleset_body
from contract.garm_http import assert_same_shape, call, recorded_body, recording


def test_bootstrap_gates(bare_target: Target):
    """Arrange: a fresh GARM. Act: call before first-run, before URLs, then without a token.

    Assert: 409 init_required, 409 urls_required (even unauthenticated), then 401 (C10).
    """
    url = bare_target.url
    user = {"username": ADMIN, "email": "admin@example.com", "password": PASSWORD}

    before_init = call(url, "GET", "/controller-info")
    call(url, "POST", "/first-run", user)
    token = call(url, "POST", "/auth/login", user).json["token"]
    before_urls = call(url, "GET", "/scalesets")
    urls = {"metadata_url": f"{url}/api/v1/metadata", "callback_url": f"{url}/cb"}
    call(url, "PUT", "/controller", urls, token=token)
    anonymous = call(url, "GET", "/scalesets")

    assert (before_init.status, before_init.json["error"]) == (409, "init_required")
    assert (before_urls.status, before_urls.json["error"]) == (409, "urls_required")
    assert anonymous.raw == recording("63_6f_no_token")["raw_response"]


def test_names_are_not_limited_by_garm(target: Target):
    """Arrange: no GitHub limit. Act: create 10- and 100-character names (C1). Assert: both 200."""
    for name in ("01_6a_create_name_len_10", "06_6a_create_name_len_100"):
        reply = target.call(
            "POST", f"/repositories/{target.repo_id}/scalesets", recorded_body(name)
        )

        assert reply.status == 200, reply.raw
        assert_same_shape(reply.json, recording(name)["json"])


def test_duplicate_name_conflicts(target: Target):
    """Arrange: scale set dup-name-1. Act: create it again (C2). Assert: 409 Conflict."""
    target.create_scaleset("dup-name-1")

    reply = target.call(
        "POST", f"/repositories/{target.repo_id}/scalesets", scaleset_body("dup-name-1")
    )

    assert (reply.status, reply.json["error"]) == (409, "Conflict")


def test_omitted_fields_and_list_shapes(target: Target):
    """Arrange: a disabled scale set with min idle 0. Act: GET it, list all, list per repo (C3).

    Assert: the recorded shapes of each read path.
    """
    created = target.create_scaleset("acc-min0-off", max_runners=1)

    one = target.call("GET", f"/scalesets/{created['id']}").json
    per_repo = target.call("GET", f"/repositories/{target.repo_id}/scalesets").json

    assert_same_shape(one, recording("20_6b_get_min0_disabled")["json"])
    assert_same_shape(per_repo[0], recording("21_6b_list_repo_scalesets")["json"][1])


def test_labels_cannot_change(target: Target):
    """Arrange: a scale set. Act: PUT new labels (C4). Assert: 200, same tags and updated_at."""
    created = target.create_scaleset("labelled")

    reply = target.call("PUT", f"/scalesets/{created['id']}", {"labels": ["changed-label"]})

    assert reply.status == 200
    assert (reply.json["tags"], reply.json["updated_at"]) == (
        created["tags"],
        created["updated_at"],
    )


def test_runner_lifecycle_and_delete_rules(target: Target):
    """Arrange: an enabled scale set with min idle 1.

    Act: wait for its runner, try deletes, disable, retire to min 0 / max 0, delete (C6, C7, C8,
    C12).

    Assert: a running runner; 400 while it exists; it goes once min and max are 0; the delete
    answers 200 with an empty body and GET then 404; a second delete 200.
    """
    created = target.create_scaleset("acc-min1", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}"

    def instances() -> list[dict[str, object]]:
        return target.call("GET", f"{path}/instances").json

    appeared = target.wait_until(lambda: [i["status"] for i in instances()] == ["running"])
    with_runner = target.call("DELETE", path)
    target.call("PUT", path, {"enabled": False, "min_idle_runners": 0, "max_runners": 0})
    drained = target.wait_until(lambda: instances() == [])
    deleted = target.call("DELETE", path)

    assert appeared
    assert with_runner.raw == recording("34_6e_delete_with_instance_enabled")["raw_response"]
    assert drained
    assert (deleted.status, deleted.raw) == (200, "")
    assert target.call("GET", path).raw == recording("43_6e_get_after_delete")["raw_response"]
    assert target.call("DELETE", path).status == 200


def test_force_removed_runner_is_not_replaced_while_disabled(target: Target):
    """Arrange: an enabled scale set's running runner, then the set disabled.

    Act: force-delete the runner (C13).

    Assert: 200 empty; the runner goes and no new one comes.
    """
    created = target.create_scaleset("force", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}/instances"
    target.wait_until(lambda: [i["status"] for i in target.call("GET", path).json] == ["running"])
    target.call("PUT", f"/scalesets/{created['id']}", {"enabled": False})
    name = target.call("GET", path).json[0]["name"]

    reply = target.call("DELETE", f"/instances/{name}?forceRemove=true&bypassGHUnauthorized=true")

    assert (reply.status, reply.raw) == (200, "")
    assert target.wait_until(lambda: target.call("GET", path).json == [], timeout=30)


def test_removing_a_busy_runner_is_refused_unless_github_errors_are_bypassed(target: Target):
    """Arrange: an enabled scale set's running runner, then given a job at GitHub.

    Act: DELETE the runner without flags, with `forceRemove`, then with `forceRemove` and
    `bypassGHUnauthorized` (B32).

    Assert: GitHub's refusal (400) comes back as 400 Bad Request without and with
    `forceRemove`, the runner still `running`; with `bypassGHUnauthorized` 200 and the runner
    is marked `pending_force_delete` (or already gone).
    """
    created = target.create_scaleset("busy", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}/instances"

    def runners() -> list[dict[str, object]]:
        return target.call("GET", path).json or []

    assert target.wait_until(lambda: [r["status"] for r in runners()] == ["running"])
    name = str(runners()[0]["name"])
    target.start_job(created, name)

    unforced = target.call("DELETE", f"/instances/{name}")
    forced = target.call("DELETE", f"/instances/{name}?forceRemove=true")
    # GitHub counts the job as assigned: GARM may boot a runner beside the busy one.
    kept = [r["status"] for r in runners() if r["name"] == name]
    bypassed = target.call(
        "DELETE", f"/instances/{name}?forceRemove=true&bypassGHUnauthorized=true"
    )

    assert (unforced.status, unforced.json["error"]) == (400, "Bad Request")
    assert (forced.status, forced.json["error"]) == (400, "Bad Request")
    assert "JobStillRunningException" in forced.json["details"]
    assert kept == ["running"]
    assert (bypassed.status, bypassed.raw) == (200, "")
    # The enabled set may already run a replacement beside it.
    marked = [r["status"] for r in runners() if r["name"] == name]
    assert marked in (["pending_force_delete"], [])


def test_a_running_job_counts_as_assigned_so_a_runner_boots_beside_the_busy_one(target: Target):
    """Arrange: an enabled scale set, min idle 1 and max 2, with its one runner `idle`.

    Act: GitHub hands the runner a job; later the job ends.
    Assert: while the job runs GARM's `desired_runner_count` is 1 (GitHub counts a running job
    as assigned) and a second runner boots beside the busy one; once the job ended the count is
    0 (absent) and only that second runner is left.
    """
    created = target.create_scaleset("assigned", enabled=True, min_idle_runners=1)
    path = f"/scalesets/{created['id']}"

    def runners(*statuses: str) -> list[str]:
        listed = target.call("GET", f"{path}/instances").json or []
        wanted = statuses or ("pending", "idle", "active")
        return [
            str(r["name"])
            for r in listed
            if r["status"] == "running" and r["runner_status"] in wanted
        ]

    assert target.wait_until(lambda: len(runners()) == 1)
    (busy,) = runners()
    target.report_idle(busy)
    assert target.wait_until(lambda: runners("idle") == [busy])
    target.start_job(created, busy)
    beside = target.wait_until(
        lambda: (
            target.call("GET", path).json.get("desired_runner_count") == 1 and len(runners()) == 2
        )
    )
    (other,) = set(runners()) - {busy}
    target.finish_job(busy)
    ended = target.wait_until(
        lambda: (
            "desired_runner_count" not in target.call("GET", path).json and runners() == [other]
        )
    )

    assert beside
    assert ended


def test_error_answers(target: Target):
    """Arrange: no scale sets. Act: unknown id, bad id, bad JSON (C10). Assert: as recorded."""
    cases = {
        "51_6f_get_not_found": target.call("GET", "/scalesets/999999"),
        "52_6f_get_bad_id": target.call("GET", "/scalesets/abc"),
        "55_6f_create_bad_json": target.call(
            "POST", f"/repositories/{target.repo_id}/scalesets", raw_body=b"{not json"
        ),
    }

    for name, reply in cases.items():
        assert (reply.status, reply.raw) == (
            recording(name)["status"],
            recording(name)["raw_response"],
        )


def test_late_validation_is_500_without_details(target: Target):
    """Arrange: nothing. Act: create with max 0 and with min above max (C11).

    Assert: 500 with empty details, nothing created.
    """
    for fields in ({"max_runners": 0}, {"min_idle_runners": 3, "max_runners": 1}):
        reply = target.call(
            "POST", f"/repositories/{target.repo_id}/scalesets", scaleset_body("late", **fields)
        )

        assert reply.json == {"error": "Server error", "details": ""}
    assert target.call("GET", "/scalesets").json == []


def test_min_above_max_update_is_refused(target: Target):
    """Arrange: a scale set with max 2. Act: PUT min idle 5 (C12). Assert: 400 as recorded."""
    created = target.create_scaleset("x-upd")

    reply = target.call(
        "PUT", f"/scalesets/{created['id']}", recorded_body("102_x_update_min_gt_max")
    )

    assert reply.raw == recording("102_x_update_min_gt_max")["raw_response"]


def test_noop_update_keeps_updated_at_and_extended_state_is_writable(target: Target):
    """Arrange: a disabled scale set. Act: PUT identical values, then an extended state (C14).

    Assert: updated_at unchanged by the no-op and moved by the change; lists return the state.
    """
    created = target.create_scaleset("marks")
    path = f"/scalesets/{created['id']}"

    same = target.call("PUT", path, {"max_runners": 2, "enabled": False}).json
    changed = target.call("PUT", path, {"extended_state": "draining"}).json

    assert same["updated_at"] == created["updated_at"]
    assert changed["updated_at"] != created["updated_at"]
    assert target.call("GET", "/scalesets").json[0]["extended_state"] == "draining"


def test_pkcs8_app_key_is_a_server_error(target: Target):
    """Arrange: an RSA key in PKCS#8 form. Act: create App credentials (C16). Assert: 500."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    app = {"app_id": 1, "installation_id": 2, "private_key_bytes": base64.b64encode(pem).decode()}
    body = {"name": "app8", "endpoint": "github.com", "auth_type": "app", "app": app}

    reply = target.call("POST", "/github/credentials", body)

    assert reply.json == {"error": "Server error", "details": ""}


def test_repository_with_scalesets_cannot_be_deleted(target: Target):
    """Arrange: a repository with a scale set. Act: delete the repository (C17).

    Assert: 400; after deleting the scale set the repository delete answers 200.
    """
    created = target.create_scaleset("pinned")

    refused = target.call("DELETE", f"/repositories/{target.repo_id}")
    target.call("DELETE", f"/scalesets/{created['id']}")
    accepted = target.call("DELETE", f"/repositories/{target.repo_id}")

    assert refused.status == 400
    assert (accepted.status, accepted.raw) == (200, "")
