#!/usr/bin/env python3
"""Charm entry point for garm-configurator: validate config and publish one scale set."""

import logging
from dataclasses import dataclass

import ops

from charms.garm_configurator.v0.garm_configurator import (
    GITHUB_APP_PRIVATE_KEY_KEY,
    OPENSTACK_PASSWORD_KEY,
    PUBLISHER_KEY,
    publish,
)
from configurator_config import ConfiguratorConfig, InvalidConfigError, load_config
from image_relation import IMAGE_RELATION, image_from_relation, share_cloud
from juju_secrets import read_user_secret, secret_id, sync_app_secret

logger = logging.getLogger(__name__)

RELATION = "garm-configurator"
# What `juju status` shows of a status message; a longer first problem is cut (and logged whole).
STATUS_LIMIT = 120
PASSWORD_SECRET_LABEL = "openstack-password"  # noqa: S105  (a label, not a password)
PRIVATE_KEY_SECRET_LABEL = "github-app-private-key"  # noqa: S105  (a label)


@dataclass(frozen=True)
class Ready:
    """The config is valid and the image known: this can be published.

    Attributes:
        config: the validated config.
        image: the image the runners boot.
    """

    config: ConfiguratorConfig
    image: str


class GarmConfiguratorCharm(ops.CharmBase):
    """Describes one GARM scale set and publishes it over the garm-configurator relation."""

    def __init__(self, framework: ops.Framework) -> None:
        super().__init__(framework)
        self._outcome: Ready | ops.StatusBase | None = None
        # The valid config, also while waiting for an image: the image builder needs the cloud.
        self._config: ConfiguratorConfig | None = None
        for event in (
            self.on.config_changed,
            self.on.upgrade_charm,
            self.on.leader_elected,
            self.on.secret_changed,
            self.on[IMAGE_RELATION].relation_joined,
            self.on[IMAGE_RELATION].relation_changed,
            self.on[IMAGE_RELATION].relation_departed,
            self.on[IMAGE_RELATION].relation_broken,
            self.on[RELATION].relation_created,
            self.on[RELATION].relation_joined,
            self.on[RELATION].relation_changed,
            self.on[RELATION].relation_broken,
        ):
            framework.observe(event, self._reconcile)
        framework.observe(self.on.secret_remove, self._on_secret_remove)
        framework.observe(self.on.collect_unit_status, self._on_collect_status)
        framework.observe(self.on.collect_app_status, self._on_collect_status)

    def _reconcile(self, _: ops.EventBase) -> None:
        outcome = self._evaluate()
        if self._config is not None and share_cloud(
            self.model, self._config.openstack, self._config.openstack_password
        ):
            logger.info("shared the OpenStack credentials with the image builder")
        if isinstance(outcome, Ready) and self.unit.is_leader():
            self._publish(outcome)

    def _on_secret_remove(self, event: ops.SecretRemoveEvent) -> None:
        # The garm charm has moved past this revision of one of our copies: drop it.
        if event.secret.label in {PASSWORD_SECRET_LABEL, PRIVATE_KEY_SECRET_LABEL}:
            event.remove_revision()

    def _on_collect_status(self, event: ops.CollectStatusEvent) -> None:
        outcome = self._evaluate()
        if not isinstance(outcome, Ready):
            event.add_status(outcome)
            return
        name = outcome.config.scaleset.name
        related = len(self.model.relations[RELATION])
        if not related:
            event.add_status(
                ops.WaitingStatus(f"scale set '{name}' ready; waiting for a relation to garm")
            )
        elif self.unit.is_leader():
            event.add_status(ops.ActiveStatus(f"scale set '{name}' published"))
        else:
            event.add_status(
                ops.ActiveStatus(f"scale set '{name}' valid; the leader publishes it")
            )

    def _evaluate(self) -> Ready | ops.StatusBase:
        """Validate config and find the image; the result is computed once per hook."""
        if self._outcome is None:
            self._outcome = self._compute_outcome()
        return self._outcome

    def _compute_outcome(self) -> Ready | ops.StatusBase:
        try:
            config = load_config(
                dict(self.config),
                lambda secret, key: read_user_secret(self.model, secret, key),
            )
        except InvalidConfigError as error:
            # Every problem goes to the log; the status shows the first, naming its option.
            logger.error("invalid configuration, nothing (re)published: %s", error)
            more = len(error.problems) - 1
            suffix = f" (+{more} more in juju debug-log)" if more else ""
            return ops.BlockedStatus(
                _cut(str(error.problems[0]), STATUS_LIMIT - len(suffix)) + suffix
            )
        self._config = config
        image = config.image_override or image_from_relation(self.model)
        if image is None:
            return ops.WaitingStatus(
                "waiting for an image: relate to github-runner-image-builder or set 'image'"
            )
        return Ready(config=config, image=image)

    def _publish(self, ready: Ready) -> None:
        relations = sorted(self.model.relations[RELATION], key=lambda relation: relation.id)
        if not relations:
            return
        password = sync_app_secret(
            self.model,
            PASSWORD_SECRET_LABEL,
            {
                OPENSTACK_PASSWORD_KEY: ready.config.openstack_password,
                PUBLISHER_KEY: self.app.name,
            },
        )
        private_key = sync_app_secret(
            self.model,
            PRIVATE_KEY_SECRET_LABEL,
            {
                GITHUB_APP_PRIVATE_KEY_KEY: ready.config.github_app_private_key,
                PUBLISHER_KEY: self.app.name,
            },
        )
        data = ready.config.to_relation_data(
            image=ready.image,
            password_secret_id=secret_id(password),
            private_key_secret_id=secret_id(private_key),
        )
        for relation in relations:
            password.grant(relation)
            private_key.grant(relation)
            if publish(self.model, relation, data):
                logger.info(
                    "published scale set '%s' on relation %d", data.scaleset.name, relation.id
                )


def _cut(text: str, limit: int) -> str:
    """`text` within `limit` characters; the log above has it in full."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


if __name__ == "__main__":  # pragma: nocover
    ops.main(GarmConfiguratorCharm)
