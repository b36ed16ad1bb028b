"""The admin password a rotation is about to give GARM, kept on disk before GARM gets it.

Juju commits a hook's (or an action's) secret revisions only when the hook ends well: an
action that dies after `garm admin password-reset` changed GARM's database would lose the new
password with them (docs/adr/0019-fencing-and-durable-rotation.md). So the password is written
here first, root-only 0600, and the charm tries it at login until a committed secret revision
holds it. No ops imports.
"""

from __future__ import annotations

from pathlib import Path

from workload.host import Paths, read_regular, write_atomic

FILE_NAME = "pending-admin-password"
MODE = 0o600


class PendingPasswordFile:
    """One root-only file holding at most one password: kept, read, forgotten."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def under(cls, paths: Paths) -> PendingPasswordFile:
        """The file in the charm's own state directory (root only)."""
        return cls(paths.charm_state / FILE_NAME)

    def keep(self, password: str) -> None:
        """Write the password durably (fsync'd, renamed into place) before GARM is changed.

        Raises:
            OSError: it could not be written; GARM must then not be changed.
        """
        write_atomic(self.path, password.encode(), MODE)

    def read(self) -> str:
        """The kept password; empty when there is none (or it is not a regular file)."""
        found = read_regular(self.path)
        return found[0].decode(errors="replace").strip() if found is not None else ""

    def forget(self) -> None:
        """Remove the file once a committed secret revision holds what GARM has."""
        self.path.unlink(missing_ok=True)
