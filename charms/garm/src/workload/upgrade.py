"""Whether a new GARM binary may run on the database an older one wrote (ADR 0025).

GARM migrates its database forward when it starts and never back: a downgrade would run a GARM
on tables it does not know. Builds after v0.2.1 dropped the old ad-hoc migrations, so a database
from before v0.2.1 must be migrated by v0.2.1 first (docs/reference/garm-behaviour.md). Pure:
the charm records the version that last ran and takes the backup. The outcome names the step
and, for a refusal, its reason; `charm_status` words it (`upgrade_refusal`, `upgrading`).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Final

from workload.version import LAST_RELEASE_WITHOUT_POSTGRESQL, version_order

V021: Final = "v0.2.1"
_V021_ORDER: Final = (*LAST_RELEASE_WITHOUT_POSTGRESQL, 1, 0)
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]")


class Step(enum.Enum):
    """What the reconcile does about the installed binary's version."""

    SAME = "same"
    UPGRADE = "upgrade"
    REFUSED = "refused"


class Refusal(enum.Enum):
    """Why a binary must not run on the database (REFUSED)."""

    DOWNGRADE = "downgrade"
    SKIPS_V021 = "skips-v0.2.1"


@dataclasses.dataclass(frozen=True)
class UpgradeStep:
    """The step, the backup to take first (UPGRADE), and why (REFUSED).

    Attributes:
        step: same, upgrade or refused.
        last_ran: the version that last ran on the database ("" when none is recorded).
        installed: the version of the binary now installed.
        backup_name: the backup to take before an UPGRADE, "" otherwise.
        refusal: why it is REFUSED, None otherwise.
    """

    step: Step
    last_ran: str = ""
    installed: str = ""
    backup_name: str = ""
    refusal: Refusal | None = None


def upgrade_step(last_ran: str, installed: str) -> UpgradeStep:
    """What to do before `installed` runs on the database `last_ran` wrote.

    Args:
        last_ran: the version that last ran on the database; "" when none is recorded (a
            first start, or a charm revision that did not record it): nothing to compare.
        installed: the version of the binary now installed.
    """
    if not last_ran or not installed or last_ran == installed:
        return UpgradeStep(Step.SAME, last_ran, installed)
    before, after = version_order(last_ran), version_order(installed)
    if before is not None and after is not None:
        if after < before:
            return UpgradeStep(Step.REFUSED, last_ran, installed, refusal=Refusal.DOWNGRADE)
        if before[:3] < LAST_RELEASE_WITHOUT_POSTGRESQL and after > _V021_ORDER:
            return UpgradeStep(Step.REFUSED, last_ran, installed, refusal=Refusal.SKIPS_V021)
        if after == before:
            return UpgradeStep(Step.SAME, last_ran, installed)
    return UpgradeStep(
        Step.UPGRADE,
        last_ran,
        installed,
        backup_name=f"pre-upgrade-{_slug(last_ran)}-{_slug(installed)}",
    )


def _slug(version: str) -> str:
    return _UNSAFE.sub("_", version)[:50]
