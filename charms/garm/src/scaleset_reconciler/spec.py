"""`ScalesetSpec`: what one configurator asks for, as the scale-set reconciler consumes it.

A spec is built by `relations.configurators` from relation data (already validated there) and is
pure data: no I/O, no ops, no GARM types beyond `EntityKind`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from garm_api.models import EntityKind


@dataclasses.dataclass(frozen=True)
class EntityRef:
    """The GitHub entity a scale set serves: `owner/name` for a repository, else an org name."""

    kind: EntityKind
    name: str

    def __str__(self) -> str:
        """Return the form operators type: `org` or `owner/repo`."""
        return self.name


@dataclasses.dataclass(frozen=True)
class ScalesetSpec:
    """One scale set as the operator configured it.

    `name` is the logical name; the live name GARM shows adds a hash of what GARM cannot change
    in place (labels, provider, entity), see `scaleset_reconciler`. `application` is the
    garm-configurator application that published it: a spec's family is (application, name),
    and its scale sets' markers record the application (docs/adr/0018-scale-set-ownership.md).
    """

    name: str
    entity: EntityRef
    provider_name: str
    labels: tuple[str, ...]
    image: str
    flavor: str
    max_runners: int
    min_idle_runners: int = 0
    os_type: str = "linux"
    os_arch: str = "amd64"
    runner_group: str = "Default"
    runner_bootstrap_timeout: int = 20
    extra_specs: Mapping[str, Any] = dataclasses.field(default_factory=dict[str, Any])
    template_name: str | None = None
    application: str = ""
    # The configurator's min-idle-schedule window that set `min_idle_runners` ("" without a
    # schedule, "default" outside every window).
    min_idle_window: str = ""
