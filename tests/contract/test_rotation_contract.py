"""A rotation that died after `garm admin password-reset` is finished from the kept password.

The next reconcile does it, against the simulator and the real GARM binary (builds after v0.2.1).

The action's secret revisions are lost when it dies (Juju commits them only at its end), so the
reconcile starts from the old secret; the only copy of the new password is the root-only file
`rotate_admin_password` wrote before GARM changed (docs/adr/0019-fencing-and-durable-rotation.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from contract.conftest import ADMIN, PASSWORD, Target, target_param
from garm_api import GarmClient
from reconcile.bootstrap import ADMIN_LABEL
from reconcile.credential_rotation import rotate_admin_password, settle_admin_password
from workload.pending_password import PendingPasswordFile


class MemoryStore:
    """The charm's app-owned secrets, as a dict of label -> content."""

    def __init__(self, content: Mapping[str, Mapping[str, str]]) -> None:
        self.content = {label: dict(value) for label, value in content.items()}

    def get(self, label: str) -> Mapping[str, str] | None:
        """The content, or None."""
        return self.content.get(label)

    def create(self, label: str, content: Mapping[str, str]) -> None:
        """A new secret."""
        self.content[label] = dict(content)

    def update(self, label: str, content: Mapping[str, str]) -> None:
        """A new revision."""
        self.content[label] = dict(content)


@pytest.mark.parametrize("target_name", [target_param("sim-newer"), target_param("real-newer")])
def test_the_next_reconcile_logs_in_with_the_kept_password_after_a_killed_rotation(
    target: Target, tmp_path: Path
):
    """Arrange: a bootstrapped GARM; the committed secret holds the admin's password.

    Act: rotate the admin password with `garm admin password-reset`, dropping the action's
    secret revisions (it died); settle from the committed secret; settle again.
    Assert: GARM refuses the old password; the first settle logs in with the kept one, makes
    it the secret's and the client works; the second, seeing it committed, forgets the file.
    """
    garm = target.real or target.sim
    assert garm is not None
    committed = MemoryStore({ADMIN_LABEL: {"username": ADMIN, "password": PASSWORD}})
    kept = PendingPasswordFile(tmp_path / "charm-state" / "pending-admin-password")
    dying_action = MemoryStore(committed.content)
    rotate_admin_password(dying_action, garm.reset_admin_password, kept)
    client = GarmClient(target.url)

    accepted = settle_admin_password(client, committed, kept)
    scalesets = client.list_scalesets()
    settle_admin_password(GarmClient(target.url), committed, kept)

    new = dying_action.content[ADMIN_LABEL]["password"]
    assert accepted == new != PASSWORD
    assert committed.content[ADMIN_LABEL] == {"username": ADMIN, "password": new}
    assert scalesets == []
    assert not kept.path.exists()
