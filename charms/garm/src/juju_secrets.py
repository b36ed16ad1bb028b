"""The charm's own secrets: GARM's bootstrap secrets as app-owned Juju secrets, found by label.

What is kept in them and when they change is `reconcile.bootstrap`'s and
`reconcile.credential_rotation`'s business; this module only speaks Juju.
"""

from __future__ import annotations

from collections.abc import Mapping

import ops


class JujuSecretStore:
    """Bootstrap secrets as app-owned Juju secrets, found by label."""

    def __init__(self, model: ops.Model) -> None:
        self._model = model

    def get(self, label: str) -> Mapping[str, str] | None:
        """The secret's latest content (a rotation may have just added a revision), or None."""
        try:
            return self._model.get_secret(label=label).get_content(refresh=True)
        except (ops.SecretNotFoundError, ops.ModelError):
            return None

    def create(self, label: str, content: Mapping[str, str]) -> None:
        """Create an app-owned secret (the leader's job)."""
        self._model.app.add_secret(dict(content), label=label, description="GARM bootstrap")

    def update(self, label: str, content: Mapping[str, str]) -> None:
        """Add a revision to an app-owned secret (the leader's job)."""
        self._model.get_secret(label=label).set_content(dict(content))
