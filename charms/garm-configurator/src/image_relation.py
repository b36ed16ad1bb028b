"""Read the image id that github-runner-image-builder publishes on the `image` relation.

The image builder (interface `github_runner_image_v0`) writes `id` (the newest image's
OpenStack id), `tags` and `images` into its *unit* databags. Only `id` is used. The data is
untrusted: a value that is not a plausible image id is ignored and logged.
"""

import logging

import ops

from charms.garm_configurator.v0.garm_configurator import check_image_id

logger = logging.getLogger(__name__)

IMAGE_RELATION = "image"


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
