"""Settling a half-way password rotation when GARM takes none of the passwords the charm has."""

from __future__ import annotations

from doubles.workload_double import KeptPasswordDouble
from garm_api import GarmUnauthorized
from reconcile.bootstrap import ADMIN_LABEL, PENDING_PASSWORD_KEY
from reconcile.credential_rotation import settle_admin_password
from unit.walks.credential_store import Store


class RefusingGarm:
    """GARM answering every login 401 (its password was reset by hand); records the tries."""

    def __init__(self) -> None:
        self.tried: list[str] = []

    def login(self, username: str, password: str) -> None:
        """POST /auth/login: 401."""
        self.tried.append(password)
        raise GarmUnauthorized("login", 401, "Unauthorized", "invalid username or password")


def test_no_password_accepted_leaves_the_secret_and_the_kept_file_as_they_are():
    """Arrange: a rotation stopped half-way (pending `p2`, kept `k`); GARM takes none of them.

    Act: settle. Assert: nothing settled (None); every password was tried; the admin secret
    (with its pending key) and the kept file are unchanged, so the next hook can still finish.
    """
    admin = {"username": "admin", "password": "p1", PENDING_PASSWORD_KEY: "p2"}
    store = Store({ADMIN_LABEL: admin})
    kept = KeptPasswordDouble(password="k")
    garm = RefusingGarm()

    settled = settle_admin_password(garm, store, kept)  # type: ignore[arg-type]

    assert settled is None
    assert garm.tried == ["p1", "p2", "k"]
    assert store.contents[ADMIN_LABEL] == admin
    assert kept.password == "k"
