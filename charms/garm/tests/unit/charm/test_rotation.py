"""rotate-credentials cannot lose GARM's admin password, whichever step fails (ADR 0019).

Juju commits an action's secret revisions only when the action ends without crashing, so each
test fails one step (the disk, `garm admin`, the reconcile after it, the whole process) and
checks that GARM, the secret and the password kept on disk agree again after the next hook,
with the charm active. The simulator is GARM; `garm admin password-reset` changes its password.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ops
import pytest
from ops import testing

from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile.bootstrap import ADMIN_LABEL
from unit.walks.charm import CONTROLLER_URLS, PASSWORD, Config, Ctx, Resources, bootstrap_secrets
from workload.config import GarmConfig
from workload.host import CommandError
from workload.pending_password import PendingPasswordFile

ROTATE_PASSWORD = {"admin-password": True}


def _admin(state: testing.State) -> dict[str, str]:
    (secret,) = [secret for secret in state.secrets if secret.label == ADMIN_LABEL]
    return dict(secret.latest_content or {})


def _active_leader(ctx: Ctx, garm: GarmSim, resources: Resources, config: Config) -> testing.State:
    garm.bootstrap("admin", PASSWORD, urls=CONTROLLER_URLS)
    state = testing.State(
        leader=True, resources=resources, config=config, secrets=bootstrap_secrets()
    )
    out = ctx.run(ctx.on.config_changed(), state)
    assert out.unit_status == ops.ActiveStatus()
    return out


def _reset_recording(garm: GarmSim, workload: RecordingWorkload) -> list[tuple[str, str]]:
    """`garm admin` changes GARM; each call records (new password, what was kept on disk)."""
    seen: list[tuple[str, str]] = []

    def reset(username: str, password: str) -> None:
        seen.append((password, workload.pending_admin_password.read()))
        garm.reset_admin_password(username, password)

    workload.on_password_reset = reset
    return seen


def test_the_new_password_is_on_disk_before_garm_changes_and_goes_once_committed(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: an active leader. Act: rotate the admin password; then one more hook.

    Assert: when `garm admin` ran, the new password was already kept on disk; the action keeps
    it there (its own revision is not committed yet); the next hook, seeing the committed
    revision GARM accepts, forgets it.
    """
    state = _active_leader(ctx, garm, resources, config)
    seen = _reset_recording(garm, workload)

    out = ctx.run(ctx.on.action("rotate-credentials", params=ROTATE_PASSWORD), state)
    kept_after_action = workload.pending_admin_password.read()
    after = ctx.run(ctx.on.update_status(), out)

    ((new, kept_at_reset),) = seen
    assert kept_at_reset == new
    assert kept_after_action == new
    assert _admin(out) == {"username": "admin", "password": new}
    assert garm.admin_credentials == ("admin", new)
    assert workload.pending_admin_password.read() == ""
    assert after.unit_status == ops.ActiveStatus()


def test_a_disk_that_cannot_keep_the_password_fails_the_action_before_garm_changes(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: an active leader whose disk is full. Act: rotate the admin password; a hook.

    Assert: the action fails saying what to free; `garm admin` never ran; GARM and the secret
    keep the old password; the next hook is active.
    """
    state = _active_leader(ctx, garm, resources, config)
    workload.pending_admin_password.keep_error = OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(testing.ActionFailed, match="free space") as failed:
        ctx.run(ctx.on.action("rotate-credentials", params=ROTATE_PASSWORD), state)
    after = ctx.run(ctx.on.update_status(), _output(failed))

    assert "reset_admin_password" not in workload.calls
    assert garm.admin_credentials == ("admin", PASSWORD)
    assert _admin(after) == {"username": "admin", "password": PASSWORD}
    assert after.unit_status == ops.ActiveStatus()


def test_garm_admin_failing_before_the_change_is_undone_by_the_next_hook(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: an active leader; `garm admin` fails without changing GARM.

    Act: rotate the admin password; two hooks.
    Assert: the action fails naming the command; the next hook is active on the old password
    and drops the pending one from the secret; the one after forgets the file.
    """
    state = _active_leader(ctx, garm, resources, config)
    workload.password_reset_error = CommandError("garm admin password-reset failed with exit 1")

    with pytest.raises(testing.ActionFailed, match="password-reset failed") as failed:
        ctx.run(ctx.on.action("rotate-credentials", params=ROTATE_PASSWORD), state)
    first = ctx.run(ctx.on.update_status(), _output(failed))
    second = ctx.run(ctx.on.update_status(), first)

    assert garm.admin_credentials == ("admin", PASSWORD)
    assert _admin(first) == {"username": "admin", "password": PASSWORD}
    assert (first.unit_status, second.unit_status) == (ops.ActiveStatus(), ops.ActiveStatus())
    assert workload.pending_admin_password.read() == ""


def test_garm_admin_failing_after_the_change_is_finished_by_the_next_hook(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: an active leader; `garm admin` changes GARM, then exits non-zero.

    Act: rotate the admin password; two hooks.
    Assert: the action fails; the next hook logs in with the new password and makes it the
    secret's (nothing pending), active; the one after forgets the file.
    """
    state = _active_leader(ctx, garm, resources, config)
    seen = _reset_recording(garm, workload)
    workload.password_reset_error = None
    recording = workload.on_password_reset
    assert recording is not None

    def changes_then_fails(username: str, password: str) -> None:
        recording(username, password)
        raise CommandError("garm admin password-reset failed with exit status 1")

    workload.on_password_reset = changes_then_fails
    with pytest.raises(testing.ActionFailed, match="run the action again") as failed:
        ctx.run(ctx.on.action("rotate-credentials", params=ROTATE_PASSWORD), state)
    first = ctx.run(ctx.on.update_status(), _output(failed))
    ctx.run(ctx.on.update_status(), first)

    ((new, _),) = seen
    assert garm.admin_credentials == ("admin", new)
    assert _admin(first) == {"username": "admin", "password": new}
    assert first.unit_status == ops.ActiveStatus()
    assert workload.pending_admin_password.read() == ""


def test_an_action_killed_after_garm_changed_is_finished_from_the_kept_password(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: an active leader; the action's process dies before Juju commits.

    Act: rotate the admin password, discarding its output state; two hooks on the old state.

    Assert: the next hook logs in with the password kept on disk, makes it the secret's and is
    active; the one after forgets the file.
    """
    state = _active_leader(ctx, garm, resources, config)
    seen = _reset_recording(garm, workload)
    ctx.run(ctx.on.action("rotate-credentials", params=ROTATE_PASSWORD), state)

    first = ctx.run(ctx.on.update_status(), state)
    second = ctx.run(ctx.on.update_status(), first)

    ((new, _),) = seen
    assert _admin(state) == {"username": "admin", "password": PASSWORD}
    assert _admin(first) == {"username": "admin", "password": new}
    assert (first.unit_status, second.unit_status) == (ops.ActiveStatus(), ops.ActiveStatus())
    assert workload.pending_admin_password.read() == ""


def test_an_os_error_after_garm_changed_fails_the_action_and_keeps_the_charm_usable(
    ctx: Ctx, workload: RecordingWorkload, garm: GarmSim, resources: Resources, config: Config
):
    """Arrange: an active leader whose disk fails when GARM's new config is written.

    Act: rotate the admin password; a hook once the disk works again.
    Assert: the action fails (not a crash) saying to run it again; its secret revisions hold the
    password GARM has; the file stays until the next hook, which is active and forgets it.
    """
    state = _active_leader(ctx, garm, resources, config)
    seen = _reset_recording(garm, workload)
    _fail_next_apply(workload, OSError(errno.ENOSPC, "No space left on device"))

    with pytest.raises(testing.ActionFailed, match=r"OSError.*run the action again") as failed:
        ctx.run(ctx.on.action("rotate-credentials", params=ROTATE_PASSWORD), state)
    kept_after_action = workload.pending_admin_password.read()
    after = ctx.run(ctx.on.update_status(), _output(failed))

    ((new, _),) = seen
    assert garm.admin_credentials == ("admin", new)
    assert _admin(_output(failed)) == {"username": "admin", "password": new}
    assert kept_after_action == new
    assert after.unit_status == ops.ActiveStatus()
    assert workload.pending_admin_password.read() == ""


def test_the_kept_password_file_is_root_only(tmp_path: Path):
    """Arrange: the file under a machine root. Act: keep, read, forget.

    Assert: 0600 while kept, read back as written, gone after forget.
    """
    kept = PendingPasswordFile(tmp_path / "var" / "lib" / "garm-charm" / "pending-admin-password")

    kept.keep("new-Admin-pw-1")
    mode = kept.path.stat().st_mode & 0o777
    read = kept.read()
    kept.forget()

    assert (mode, read) == (0o600, "new-Admin-pw-1")
    assert not kept.path.exists()
    assert kept.read() == ""


def _output(failed: pytest.ExceptionInfo[testing.ActionFailed]) -> testing.State:
    state = failed.value.state
    assert isinstance(state, testing.State)
    return state


def _fail_next_apply(workload: RecordingWorkload, error: OSError) -> None:
    """The next `apply` raises `error`; later ones work."""
    apply: Callable[[GarmConfig], bool] = workload.apply
    failures: list[Any] = [error]

    def failing_once(config: GarmConfig) -> bool:
        if failures:
            raise failures.pop()
        return apply(config)

    workload.apply = failing_once  # type: ignore[method-assign]
