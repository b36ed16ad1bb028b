"""Rotate GARM's JWT signing key and, on request, its admin password (ADR 0010, ADR 0019).

Each new value becomes a new revision of the charm's app-owned Juju secret; the reconcile that
follows renders it into GARM's config (one restart) and logs in with it. The admin password
lives in GARM's database too, and Juju commits a secret revision only when the whole action
ends well, so the new password is made durable on the machine first:

1. it is written to a root-only file (`KeptPassword`) and kept in the secret as
   `pending-password`, next to the current one;
2. `garm admin password-reset` writes it into GARM's database;
3. it replaces `password` in the secret, and `pending-password` goes.

Whatever stops a run (a failed step, an exception, a killed process), the next reconcile
settles it (`settle_admin_password`): it logs in with the committed password, the pending one
and the kept one, makes the secret hold whichever GARM accepts, and forgets the file once a
later hook sees that password committed. No ops imports.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Protocol

from garm_api import GarmClient, GarmNotInitialised, GarmUnauthorized
from reconcile.bootstrap import ADMIN_LABEL, JWT_SECRET_LABEL, PENDING_PASSWORD_KEY, SecretStore

logger = logging.getLogger(__name__)


class RotationStore(SecretStore, Protocol):
    """A `SecretStore` that can also add a revision to an existing secret."""

    def update(self, label: str, content: Mapping[str, str]) -> None:
        """Replace the secret's content with a new revision (leader only)."""
        ...


class KeptPassword(Protocol):
    """The password a rotation is giving GARM, kept root-only on the machine (0600)."""

    def keep(self, password: str) -> None:
        """Write it durably; raises OSError when it cannot."""
        ...

    def read(self) -> str:
        """The kept password, or empty."""
        ...

    def forget(self) -> None:
        """Remove it."""
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


def rotate_admin_password(store: RotationStore, reset: PasswordReset, kept: KeptPassword) -> None:
    """Change GARM's admin password in its database and in the secret; finish a half-way run.

    The new password is on disk before GARM is changed, so no failure after that loses it.

    Raises:
        RotationError: the secret does not exist yet, the password could not be kept on disk
            (GARM unchanged), or GARM refused the new password.
    """
    admin = store.get(ADMIN_LABEL)
    if admin is None:
        raise RotationError(_NOT_YET)
    username = admin["username"]
    # A half-way run's password is reused: GARM may have it already.
    pending = admin.get(PENDING_PASSWORD_KEY) or kept.read() or secrets.token_urlsafe(32)
    try:
        kept.keep(pending)
    except OSError as error:
        raise RotationError(
            f"could not keep the new admin password on the unit ({error.strerror}); GARM is "
            "unchanged: free space under /var/lib/garm-charm"
        ) from None
    store.update(ADMIN_LABEL, {**admin, PENDING_PASSWORD_KEY: pending})
    reset(username, pending)
    store.update(ADMIN_LABEL, {"username": username, "password": pending})
    logger.info("rotated GARM's admin password")


def settle_admin_password(
    client: GarmClient,
    store: RotationStore,
    kept: KeptPassword,
    *,
    may_forget: bool = True,
    admin: Mapping[str, str] | None = None,
) -> str | None:
    """Finish or undo a password rotation that stopped half-way; nothing when none did.

    Args:
        client: GARM on this machine (not logged in yet).
        store: the charm's secrets.
        kept: the password a rotation kept on disk.
        may_forget: whether the file may go once GARM takes the secret's password; False in
            the hook that wrote that password, whose revision Juju has not committed yet.
        admin: the admin secret's content as this hook already read it; None: read it here.
            Reading a secret costs hook tool calls, and this runs in every leader hook.

    Returns:
        The admin password GARM accepts when this call had to find out, else None.

    Raises:
        GarmError: GARM did not answer a login (an outage), or refused it otherwise than 401.
    """
    admin = store.get(ADMIN_LABEL) if admin is None else admin
    kept_password = kept.read()
    if admin is None or not (kept_password or admin.get(PENDING_PASSWORD_KEY)):
        return None
    username, current = admin["username"], admin["password"]
    try:
        accepted = _accepted(client, username, current, admin.get(PENDING_PASSWORD_KEY, ""))
        accepted = accepted or _accepted(client, username, kept_password)
    except GarmNotInitialised:
        return None  # a fresh GARM: the bootstrap's first-run sets the committed password
    if accepted is None:
        return None  # none of them: the bootstrap's login says what to do
    if accepted != current or PENDING_PASSWORD_KEY in admin:
        # Finish (GARM took the new one) or undo (it never did): one password, nothing pending.
        store.update(ADMIN_LABEL, {"username": username, "password": accepted})
        logger.warning("settled a password rotation that stopped half-way")
    if accepted == current and may_forget:
        kept.forget()  # `current` came from a committed revision: the file is not needed
    return accepted


def _accepted(client: GarmClient, username: str, *passwords: str) -> str | None:
    """The first of the passwords GARM lets the admin log in with, or None."""
    for password in passwords:
        if not password:
            continue
        try:
            client.login(username, password)
        except GarmUnauthorized:
            continue
        return password
    return None


_NOT_YET = (
    "GARM's credentials do not exist yet: the leader creates them when it first configures GARM"
)
