#!/usr/bin/env python3
"""Charm entry point for garm: every event leads to one holistic reconcile."""

import logging

import ops

logger = logging.getLogger(__name__)


class GarmCharm(ops.CharmBase):
    """Machine charm that installs, bootstraps and drives GARM."""

    def __init__(self, framework: ops.Framework) -> None:
        super().__init__(framework)
        framework.observe(self.on.collect_unit_status, self._on_collect_status)

    def _on_collect_status(self, event: ops.CollectStatusEvent) -> None:
        event.add_status(ops.BlockedStatus("not implemented yet"))


if __name__ == "__main__":  # pragma: nocover
    ops.main(GarmCharm)
