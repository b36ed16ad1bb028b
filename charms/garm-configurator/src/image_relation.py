"""The `image` relation with github-runner-image-builder (interface `github_runner_image_v0`).

The image builder writes `id` (the newest image's OpenStack id), `tags` and `images` into its
*unit* databags. Only `id` is used. The data is untrusted: a value that is not a plausible
image id is ignored and logged.

In the other direction the interface's contract is that each requirer unit writes, into its
own unit databag, the OpenStack credentials the builder uploads images with: `auth_url`,
`username`, `password`, `project_name`, `user_domain_name` and `project_domain_name`, in plain
text. This is the one place a secret value enters relation data, and only because the
operator related the two applications (ADR 0011); the garm-configurator relation never
carries one.
"""

import logging
from typing import Protocol

import ops

from charms.garm_configurator.v0.garm_configurator import check_image_id

logger = logging.getLogger(__name__)

IMAGE_RELATION = "image"


class CloudCredentials(Protocol):
    """The OpenStack settings the image builder needs, besides the password."""

    @property
    def auth_url(self) -> str: ...  # noqa: D102

    @property
    def username(self) -> str: ...  # noqa: D102

    @property
    def project_name(self) -> str: ...  # noqa: D102

    @property
    def user_domain_name(self) -> str: ...  # noqa: D102

    @property
    def project_domain_name(self) -> str: ...  # noqa: D102


def share_cloud(model: ops.Model, cloud: CloudCredentials, password: str) -> bool:
    """Write the credentials into this unit's databag of every image relation, if changed.

    Args:
        model: the charm's model.
        cloud: the OpenStack settings.
        password: the OpenStack password.

    Returns:
        Whether any value changed.
    """
    wanted = {
        "auth_url": cloud.auth_url,
        "username": cloud.username,
        "password": password,
        "project_name": cloud.project_name,
        "user_domain_name": cloud.user_domain_name,
        "project_domain_name": cloud.project_domain_name,
    }
    changed = False
    for relation in model.relations[IMAGE_RELATION]:
        databag = relation.data[model.unit]
        for key, value in wanted.items():
            if databag.get(key) != value:
                databag[key] = value
                changed = True
    return changed


def image_from_relation(model: ops.Model) -> str | None:
    """The image id the image builder publishes, if any.

    Units are read in name order so every hook picks the same one.

    Args:
        model: the charm's model.

    Returns:
        The image id, or None while no unit has published a valid one.
    """
    for relation in sorted(model.relations[IMAGE_RELATION], key=lambda relation: relation.id):
        for unit in sorted(relation.units, key=lambda unit: unit.name):
            image = _valid_image(relation.data[unit].get("id", ""), unit.name)
            if image is not None:
                return image
    return None


def _valid_image(raw: str, source: str) -> str | None:
    if not raw:
        return None
    try:
        return check_image_id(raw.strip())
    except ValueError as error:
        logger.warning("ignoring the image id published by %s: it %s", source, error)
        return None
