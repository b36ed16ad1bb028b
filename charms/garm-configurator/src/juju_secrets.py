"""Read the operator's user secrets and keep app-owned copies of them for the relation.

The garm charm is granted the app-owned copies, never the operator's own secrets: the operator
can rotate or replace theirs without re-granting anything, and only this application decides
what the other side can read.
"""

import ops

from configurator_config import SecretReadError


def read_user_secret(model: ops.Model, secret_id: str, key: str) -> str:
    """Read one key of a user secret named in the config, tracking its latest revision.

    Args:
        model: the charm's model.
        secret_id: the secret id from the config.
        key: the content key to read.

    Returns:
        The value.

    Raises:
        SecretReadError: the secret is missing, not granted, or lacks the key; the message
            says how to fix it and never holds a value.
    """
    app = model.app.name
    try:
        content = model.get_secret(id=secret_id).get_content(refresh=True)
    except (ops.SecretNotFoundError, ops.ModelError):
        # The id once, in the command: twice would push the fix past a status's 120 characters.
        raise SecretReadError(
            f"cannot read its secret: juju grant-secret {secret_id} {app}"
        ) from None
    value = content.get(key)
    if value is None:
        raise SecretReadError(
            f"has a secret without '{key}': juju update-secret {secret_id} {key}=..."
        )
    return value


def sync_app_secret(model: ops.Model, label: str, content: dict[str, str]) -> ops.Secret:
    """Create or update the app-owned secret `label`, writing only when its content differs.

    Writing identical content would add a revision (before Juju 3.6) and wake every reader
    with secret-changed, so it is compared first. Leader only.

    Args:
        model: the charm's model.
        label: the secret's label, this charm's name for it.
        content: the wanted content.

    Returns:
        The secret.
    """
    try:
        secret = model.get_secret(label=label)
    except ops.SecretNotFoundError:
        return model.app.add_secret(content, label=label)
    if secret.peek_content() != content:
        secret.set_content(content)
    return secret


def secret_id(secret: ops.Secret) -> str:
    """The id to publish for an app-owned secret, in one canonical form every hook.

    Args:
        secret: an app-owned secret.

    Returns:
        Its canonical id.
    """
    return secret.get_info().id
