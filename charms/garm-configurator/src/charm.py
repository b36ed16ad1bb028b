#!/usr/bin/env python3
"""Charm entry point for garm-configurator: validate config and publish one scale set."""

import logging

import ops

logger = logging.getLogger(__name__)


class GarmConfiguratorCharm(ops.CharmBase):
    """Describes one GARM scale set and publishes it over the garm-configurator relation."""

    def __init__(self, framework: ops.Framework) -> None:
        super().__init__(framework)
        framework.observe(self.on.collect_unit_status, self._on_collect_status)

    def _on_collect_status(self, event: ops.CollectStatusEvent) -> None:
        event.add_status(ops.BlockedStatus("not implemented yet"))


if __name__ == "__main__":  # pragma: nocover
    ops.main(GarmConfiguratorCharm)
