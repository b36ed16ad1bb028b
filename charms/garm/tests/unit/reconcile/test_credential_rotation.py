"""The rotate-credentials steps before GARM's credentials exist, and a half-way rotation."""

from __future__ import annotations

import errno
import logging
import string
from collections.abc import Mapping

import pytest

from doubles.workload_double import KeptPasswordDouble
from garm_api import GarmUnauthorized
from reconcile.bootstrap import ADMIN_LABEL, JWT_SECRET_LABEL, PENDING_PASSWORD_KEY
from reconcile.credential_rotation import (
    RotationError,
    rotate_admin_password,
    rotate_jwt_secret,
    settle_admin_password,
)
from unit.walks.credential_store import Store

# --- Edge cases: before GARM's credentials exist, and half-way ---
# (was test_credential_rotation_edges.py)


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


# --- Found by mutation testing (mutmut): exact values and texts ---
# (was test_credential_rotation_exact.py)
# The rotations' values, texts and the settle's less common starting points, pinned.
#
# Written from the survivors of a mutation run of `reconcile.credential_rotation`
# (docs/reference/testing.md).


URLSAFE = set(string.ascii_letters + string.digits + "-_")


class CountingStore(Store):
    """`Store`, counting the revisions added to existing secrets."""

    revisions = 0

    def update(self, label: str, content: Mapping[str, str]) -> None:
        """Give a secret new content, as a new revision."""
        self.revisions += 1
        super().update(label, content)


class Garm:
    """GARM taking one admin password and answering 401 to the rest; records every login."""

    def __init__(self, password: str) -> None:
        self.password = password
        self.logins: list[tuple[str, str]] = []

    def login(self, username: str, password: str) -> None:
        """POST /auth/login: a token for the admin's password, else 401."""
        self.logins.append((username, password))
        if (username, password) != ("admin", self.password):
            raise GarmUnauthorized("login", 401, "Unauthorized", "invalid username or password")


def test_a_new_jwt_key_has_384_random_bits_and_the_rotation_is_logged(
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: the JWT secret exists. Act: rotate it.

    Assert: the new key is 64 URL-safe characters (48 random bytes), and one info line says
    the key was rotated, without the key.
    """
    store = Store({JWT_SECRET_LABEL: {"secret": "old"}})

    with caplog.at_level(logging.INFO, logger="reconcile.credential_rotation"):
        rotate_jwt_secret(store)

    secret = store.contents[JWT_SECRET_LABEL]["secret"]
    assert (len(secret), set(secret) <= URLSAFE) == (64, True)
    assert [record.getMessage() for record in caplog.records] == ["rotated GARM's JWT signing key"]


def test_a_new_admin_password_has_256_random_bits_and_the_rotation_is_logged(
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: the admin secret, no rotation under way. Act: rotate the admin password.

    Assert: GARM is given a 43-character URL-safe password (32 random bytes), the secret holds
    it, and one info line says the password was rotated, without it.
    """
    store = Store({ADMIN_LABEL: {"username": "admin", "password": "old"}})
    resets: list[tuple[str, str]] = []

    with caplog.at_level(logging.INFO, logger="reconcile.credential_rotation"):
        rotate_admin_password(
            store, lambda user, password: resets.append((user, password)), KeptPasswordDouble()
        )

    [(user, password)] = resets
    assert (user, len(password), set(password) <= URLSAFE) == ("admin", 43, True)
    assert store.contents[ADMIN_LABEL] == {"username": "admin", "password": password}
    assert [record.getMessage() for record in caplog.records] == ["rotated GARM's admin password"]


def test_a_password_that_cannot_be_kept_names_the_cause_and_what_to_do():
    """Arrange: the admin secret; the disk is full. Act: rotate the admin password.

    Assert: the error says the password could not be kept, why, that GARM is unchanged and
    what to free; GARM is never reset and the secret is unchanged.
    """
    admin = {"username": "admin", "password": "old"}
    store = Store({ADMIN_LABEL: admin})
    full = KeptPasswordDouble(keep_error=OSError(errno.ENOSPC, "No space left on device"))
    resets: list[tuple[str, str]] = []

    with pytest.raises(RotationError) as raised:
        rotate_admin_password(store, lambda user, password: resets.append((user, password)), full)

    assert str(raised.value) == (
        "could not keep the new admin password on the unit (No space left on device); GARM is "
        "unchanged: free space under /var/lib/garm-charm"
    )
    assert (resets, store.contents[ADMIN_LABEL]) == ([], admin)


def test_a_kept_password_garm_never_took_is_forgotten_by_default():
    """Arrange: a rotation kept `k` on disk, died before the secret held it; GARM takes `p1`.

    Act: settle, with `may_forget` left at its default.
    Assert: `p1` is returned as GARM's password, the secret is unchanged, the kept file is
    gone; every login was the admin's.
    """
    admin = {"username": "admin", "password": "p1"}
    store = CountingStore({ADMIN_LABEL: admin})
    kept = KeptPasswordDouble(password="k")
    garm = Garm("p1")

    settled = settle_admin_password(garm, store, kept)  # type: ignore[arg-type]

    assert (settled, store.contents[ADMIN_LABEL], kept.password) == ("p1", admin, "")
    assert store.revisions == 0  # nothing to settle: no new secret revision
    assert garm.logins == [("admin", "p1")]


def test_a_pending_password_garm_never_took_is_dropped():
    """Arrange: the secret holds pending `p2` and the kept file `p2`; GARM still takes `p1`.

    Act: settle in the hook that did not write `p1` (the default).
    Assert: the secret is `p1` with nothing pending (the rotation is undone, a later one starts
    afresh), and the kept file is gone.
    """
    store = Store(
        {ADMIN_LABEL: {"username": "admin", "password": "p1", PENDING_PASSWORD_KEY: "p2"}}
    )
    kept = KeptPasswordDouble(password="p2")

    settled = settle_admin_password(Garm("p1"), store, kept)  # type: ignore[arg-type]

    assert (settled, store.contents[ADMIN_LABEL], kept.password) == (
        "p1",
        {"username": "admin", "password": "p1"},
        "",
    )


def test_a_kept_password_garm_took_becomes_the_secrets_password():
    """Arrange: GARM took the kept `k`, but the secret never held it (no pending key).

    Act: settle. Assert: the secret's password is `k`, the kept file stays (this revision is
    not committed yet); the admin logged in with each password in turn (committed, then kept).
    """
    store = Store({ADMIN_LABEL: {"username": "admin", "password": "p1"}})
    kept = KeptPasswordDouble(password="k")
    garm = Garm("k")

    settled = settle_admin_password(garm, store, kept)  # type: ignore[arg-type]

    assert (settled, store.contents[ADMIN_LABEL]) == ("k", {"username": "admin", "password": "k"})
    assert kept.password == "k"  # kept until a later hook sees `k` committed
    assert garm.logins == [("admin", "p1"), ("admin", "k")]


def test_a_pending_password_without_a_kept_file_is_settled(caplog: pytest.LogCaptureFixture):
    """Arrange: the secret holds pending `p2`, GARM took it, no kept file (already forgotten).

    Act: settle. Assert: the secret's password is `p2` with nothing pending, found by logging
    in as the admin with the committed password, then the pending one; one warning says so.
    """
    store = Store(
        {ADMIN_LABEL: {"username": "admin", "password": "p1", PENDING_PASSWORD_KEY: "p2"}}
    )
    garm = Garm("p2")

    with caplog.at_level(logging.INFO, logger="reconcile.credential_rotation"):
        settled = settle_admin_password(garm, store, KeptPasswordDouble())  # type: ignore[arg-type]

    assert (settled, store.contents[ADMIN_LABEL]) == (
        "p2",
        {"username": "admin", "password": "p2"},
    )
    assert garm.logins == [("admin", "p1"), ("admin", "p2")]
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [
        ("WARNING", "settled a password rotation that stopped half-way")
    ]
