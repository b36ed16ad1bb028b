"""The rotate-credentials steps before GARM's credentials exist, and a half-way rotation."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from doubles.workload_double import KeptPasswordDouble
from reconcile.bootstrap import ADMIN_LABEL, JWT_SECRET_LABEL, PENDING_PASSWORD_KEY
from reconcile.credential_rotation import RotationError, rotate_admin_password, rotate_jwt_secret


class Store:
    """App-owned secrets in memory, as `JujuSecretStore` keeps them."""

    def __init__(self, contents: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.contents = {label: dict(content) for label, content in (contents or {}).items()}

    def get(self, label: str) -> Mapping[str, str] | None:
        """The content, or None when absent."""
        return self.contents.get(label)

    def create(self, label: str, content: Mapping[str, str]) -> None:
        """Create a secret."""
        self.contents[label] = dict(content)

    def update(self, label: str, content: Mapping[str, str]) -> None:
        """Give a secret new content."""
        self.contents[label] = dict(content)


def test_rotation_before_the_credentials_exist_changes_nothing():
    """Arrange: no secrets yet. Act: rotate the JWT key, then the admin password.

    Assert: each refuses saying the leader creates them first; nothing is created; GARM's
    password is never reset.
    """
    store = Store()
    resets: list[tuple[str, str]] = []

    with pytest.raises(RotationError, match="do not exist yet"):
        rotate_jwt_secret(store)
    with pytest.raises(RotationError, match="do not exist yet"):
        rotate_admin_password(
            store, lambda user, password: resets.append((user, password)), KeptPasswordDouble()
        )

    assert store.contents == {}
    assert resets == []


def test_a_half_way_password_rotation_finishes_with_the_pending_password():
    """Arrange: a rotation that stored its pending password, then died before GARM took it.

    Act: rotate again. Assert: GARM is given the same pending password (never a third one),
    and the secret then holds it as the password, without the pending key.
    """
    store = Store(
        {ADMIN_LABEL: {"username": "admin", "password": "old", PENDING_PASSWORD_KEY: "p2"}}
    )
    resets: list[tuple[str, str]] = []

    rotate_admin_password(
        store, lambda user, password: resets.append((user, password)), KeptPasswordDouble()
    )

    assert resets == [("admin", "p2")]
    assert store.contents[ADMIN_LABEL] == {"username": "admin", "password": "p2"}
    assert JWT_SECRET_LABEL not in store.contents
