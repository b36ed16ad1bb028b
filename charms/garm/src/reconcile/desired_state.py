"""What GARM should serve: the scale sets, providers and GitHub bindings the configurators ask for.

Built by the charm's relation layer (`relations.configurators`) from every garm-configurator
relation; read by the reconcile below it, which never imports ops.
"""

from __future__ import annotations

import dataclasses

from reconcile.github_objects import EntityBinding
from reconcile.runner_template import RunnerConfig
from scaleset_reconciler.spec import ScalesetSpec
from workload.config import OpenStackProvider


@dataclasses.dataclass(frozen=True)
class DesiredState:
    """What the configurators ask for, and what stopped some of them from asking."""

    specs: tuple[ScalesetSpec, ...] = ()
    providers: tuple[OpenStackProvider, ...] = ()
    bindings: tuple[EntityBinding, ...] = ()
    waiting: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    runner_templates: tuple[tuple[str, RunnerConfig], ...] = ()

    @property
    def complete(self) -> bool:
        """Whether every related configurator is represented, so absent specs mean removal."""
        return not self.waiting and not self.problems
