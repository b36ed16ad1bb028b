"""The context of one planning pass: its time, the policy, what was observed, what is taken."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping

from scaleset_reconciler.needs import Observed
from scaleset_reconciler.settings import ReconcileSettings


@dataclasses.dataclass(frozen=True)
class PassContext:
    """What every planning step of one pass reads besides the spec and its family."""

    now: datetime.datetime
    settings: ReconcileSettings
    observed: Observed
    # Every configurator is readable: a scale set another one holds is an orphan, not a claim.
    sweep_orphans: bool = False
    # Every name GARM shows, and those this pass's creates take: a create never reuses one.
    taken: set[str] = dataclasses.field(default_factory=set[str])
    # Changeovers the surge budget keeps waiting: logical name -> place in the queue.
    queued: Mapping[str, int] = dataclasses.field(default_factory=dict[str, int])
