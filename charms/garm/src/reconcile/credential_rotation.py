"""Rotate GARM's JWT signing key and, on request, its admin password (ADR 0010). No ops imports.

Each new value becomes a new revision of the charm's app-owned Juju secret; the reconcile that
follows renders it into GARM's config (one restart) and logs in with it. The admin password
lives in GARM's database too, so it changes in three steps, each safe to repeat:

1. the new password is kept in the secret as `pending-password`, next to the current one;
2. `garm admin password-reset` writes it into GARM's database;
3. it replaces `password` in the secret, and `pending-password` goes.

A run that fails after step 1 leaves the pending password in the secret: the next run uses that
same one, so rerunning the action finishes the rotation, and the bootstrap meanwhile logs in
with whichever of the two GARM accepts (`bootstrap.login`).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Protocol

from reconcile.bootstrap import ADMIN_LABEL, JWT_SECRET_LABEL, PENDING_PASSWORD_KEY, SecretStore

logger = logging.getLogger(__name__)


class RotationStore(SecretStore, Protocol):
    """A `SecretStore` that can also add a revision to an existing secret."""

    def update(self, label: str, content: Mapping[str, str]) -> None:
        """Replace the secret's content with a new revision (leader only)."""
        ...


class RotationError(Exception):
    """A rotation step failed; the message says what to do and never holds a secret."""


# (username, new password) -> None; raises RotationError.
PasswordReset = Callable[[str, str], None]


def rotate_jwt_secret(store: RotationStore) -> None:
    """Give GARM's JWT signing key a new value (every token GARM issued becomes invalid).

    Raises:
        RotationError: the secret does not exist yet.
    """
    if store.get(JWT_SECRET_LABEL) is None:
        raise RotationError(_NOT_YET)
    store.update(JWT_SECRET_LABEL, {"secret": secrets.token_urlsafe(48)})
    logger.info("rotated GARM's JWT signing key")


def rotate_admin_password(store: RotationStore, reset: PasswordReset) -> None:
    """Change GARM's admin password in its database and in the secret; finish a half-way run.

    Raises:
        RotationError: the secret does not exist yet, or GARM refused the new password.
    """
    admin = store.get(ADMIN_LABEL)
    if admin is None:
        raise RotationError(_NOT_YET)
    username = admin["username"]
    pending = admin.get(PENDING_PASSWORD_KEY)
    if pending is None:
        pending = secrets.token_urlsafe(32)
        store.update(ADMIN_LABEL, {**admin, PENDING_PASSWORD_KEY: pending})
    reset(username, pending)
    store.update(ADMIN_LABEL, {"username": username, "password": pending})
    logger.info("rotated GARM's admin password")


_NOT_YET = (
    "GARM's credentials do not exist yet: the leader creates them when it first configures GARM"
)
