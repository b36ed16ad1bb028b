"""Every error and outcome of a reconcile -> the status `juju status` shows, in one place.

No other module builds an ops status (tests/unit/test_status_construction.py): the reconcile
and the charm hand this module what happened, and it words it, the statuses shown while a long
step runs included (`installing`, `upgrading`, `removing`). Each text is at most 120 characters
(`status_text.STATUS_LIMIT`); a longer one, which only GARM's or the operator's words can make,
is cut by `bounded` and logged in full. Blocked says what the operator must do; Waiting says
the charm goes on by itself at the next hook.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Final

import ops

from charm_config import InvalidConfigError
from garm_api import GarmApiError, GarmError, GarmServerError, GarmUnreachable, WireFormatError
from reconcile.bootstrap import BootstrapError
from reconcile.garm_objects import ObjectsOutcome
from reconcile.teardown import TeardownReport
from relations.database import DatabaseState, DatabaseStatus
from relations.peers.handover import Decision, Verdict
from relations.peers.pause import Maintenance
from status_text import STATUS_LIMIT, clock_time, cut, fit
from status_text.docs_links import SWITCH_DATABASE
from workload.host import HostWriteError, ResourceError, VersionRefused, WorkloadError
from workload.migration import Recovered
from workload.migration_record import Recovery
from workload.upgrade import V021, Refusal, UpgradeStep
from workload.version import garm_version_supports_postgresql

logger = logging.getLogger(__name__)

INSTALLING: Final = "installing GARM"
CERTIFICATE_AWAITED: Final = "waiting for a certificate (GARM serves plain HTTP)"
GARM_STARTING: Final = "waiting for GARM to start"
SECRETS_CREATED: Final = "created GARM's secrets; GARM is configured at the next hook"

# What `bootstrap` may raise that has a status; anything else is a bug and fails the hook.
BOOTSTRAP_FAILURES: Final = (GarmUnreachable, GarmApiError, WireFormatError, BootstrapError)
BootstrapFailure = GarmUnreachable | GarmApiError | WireFormatError | BootstrapError


def bounded(status: ops.StatusBase) -> ops.StatusBase:
    """Every status fits `juju status` (120 characters); a longer text is logged in full."""
    if len(status.message) <= STATUS_LIMIT:
        return status
    logger.info("status in full: %s", status.message)
    return ops.StatusBase.from_name(status.name, cut(status.message, STATUS_LIMIT))


def invalid_config(error: InvalidConfigError) -> ops.StatusBase:
    """Nothing changes while an option is invalid: the status names it (ADR 0014)."""
    return ops.BlockedStatus(str(error))


def unknown() -> ops.StatusBase:
    """What an action reports as the status before any reconcile of its hook set one."""
    return ops.UnknownStatus()


def installing() -> ops.StatusBase:
    """Shown while GARM's binaries are installed the first time, a long step, mid-hook."""
    return ops.MaintenanceStatus(INSTALLING)


def install_failed(error: WorkloadError) -> ops.StatusBase:
    """A missing or bad resource, or a refused binary, says which; any other failure says so.

    A binary is refused when it must not run on this database (a downgrade, naming both
    versions); it was not installed.
    """
    if isinstance(error, (ResourceError, VersionRefused)):
        return ops.BlockedStatus(str(error))
    return ops.BlockedStatus(f"install failed: {error}")


def paused(pause: Maintenance) -> ops.StatusBase:
    """The charm leaves GARM alone until `resume` (docs/adr/0024-maintenance-mode.md)."""
    return ops.MaintenanceStatus(pause.status_message())


def torn_down(report: TeardownReport, deadline: datetime.datetime) -> ops.StatusBase:
    """The teardown action holds the scale sets down (ADR 0036): what is left, what to do."""
    message = report.status_message(deadline)
    if report.problems:
        return ops.WaitingStatus(f"teardown retried at the next hook: {report.problems[0]}")
    return ops.ActiveStatus(message) if report.done else ops.MaintenanceStatus(message)


def removing(until: datetime.datetime) -> ops.StatusBase:
    """Shown mid-hook while the leader's stop hook tears down before the app goes (ADR 0036)."""
    return ops.MaintenanceStatus(
        f"removing: tearing down the charm's scale sets until {clock_time(until)} at most"
    )


def standing_by(database: DatabaseState) -> ops.StatusBase:
    """Non-leaders never run GARM: two GARMs on one database would fight over runners."""
    if database.status is DatabaseStatus.ABSENT:
        return ops.BlockedStatus(
            "standby, but SQLite cannot be shared: relate PostgreSQL or remove this unit"
        )
    return ops.ActiveStatus("standby: the leader runs GARM")


def secrets_created() -> ops.StatusBase:
    """The leader created GARM's secrets in this hook; Juju shows them to the next one."""
    return ops.WaitingStatus(SECRETS_CREATED)


def database_unusable(database: DatabaseState, version: str) -> ops.StatusBase | None:
    """Why GARM cannot run on the related database yet, or None.

    Checked before anything is rendered, so a running GARM keeps its current backend.
    """
    if database.status is DatabaseStatus.PENDING:
        return ops.WaitingStatus("waiting for the database relation to share credentials")
    if database.status is DatabaseStatus.INVALID:
        return ops.BlockedStatus(
            f"database: {database.problem}; fix the PostgreSQL endpoint or remove the relation"
        )
    if database.postgres is not None and garm_version_supports_postgresql(version) is False:
        return ops.BlockedStatus(
            f"database: GARM {version} has no PostgreSQL backend; attach a garm-binary "
            "built after v0.2.1 or remove the relation"
        )
    return None


def backend_switch_refused(problem: str) -> ops.StatusBase:
    """GARM's data cannot follow a backend switch; the how-to is too long for the status.

    So the charm logs its link with the problem (120 characters leave no room for it).
    """
    logger.warning("%s; how to switch GARM's database: %s", problem, SWITCH_DATABASE)
    return ops.BlockedStatus(problem)


def handed_over(decision: Decision) -> ops.StatusBase | None:
    """None when this leader runs GARM now; else why it waits or what blocks it (ADR 0005)."""
    if decision.verdict is Verdict.RUN:
        return None
    if decision.verdict is Verdict.WAIT:
        return ops.WaitingStatus(decision.message)
    return ops.BlockedStatus(decision.message)


def fenced(message: str) -> ops.StatusBase:
    """This leader does not hold GARM's lease yet (ADR 0019): the message says until when."""
    return ops.WaitingStatus(message)


def not_started(error: WorkloadError) -> ops.StatusBase:
    """GARM's files or service could not be put in place."""
    return ops.BlockedStatus(f"cannot run GARM: {error}")


def host_write_failed(error: HostWriteError) -> ops.StatusBase:
    """A file the charm writes could not be written: the path and what to free (full disk)."""
    logger.error("reconcile stopped: %s", error)
    return bounded(ops.BlockedStatus(str(error)))


def starting() -> ops.StatusBase:
    """A (re)started GARM did not answer within the wait; the next hook looks again."""
    return ops.WaitingStatus(GARM_STARTING)


def bootstrap_failed(error: BootstrapFailure) -> ops.StatusBase:
    """GARM not up yet waits; a bootstrap it cannot finish or a refusal blocks."""
    if isinstance(error, GarmUnreachable):
        return starting()
    if isinstance(error, BootstrapError):
        return ops.BlockedStatus(str(error))
    if isinstance(error, (GarmServerError, WireFormatError)):
        return interrupted(error)
    logger.warning("GARM refused its bootstrap: %s", error)
    return ops.BlockedStatus(
        f"GARM refused its bootstrap ({error.operation}, HTTP {error.status}): see juju debug-log"
    )


def upgrade_refusal(decision: UpgradeStep) -> str:
    """Why the installed GARM must not run on the database (a REFUSED step, ADR 0025).

    The install refuses a new binary with this text before it is swapped in;
    `upgrade_refused` blocks with it on a binary that was installed before.
    """
    last_ran, installed = decision.last_ran, decision.installed
    if decision.refusal is Refusal.SKIPS_V021:
        return (
            f"GARM {installed} cannot migrate a {last_ran} database: attach "
            f"garm-binary {V021} first, then {installed}"
        )
    return (
        f"downgrade refused: GARM {installed} is older than {last_ran}, which ran last; "
        "attach that garm-binary again"
    )


def upgrade_refused(decision: UpgradeStep) -> ops.StatusBase:
    """The installed GARM is older than the one that last ran, or skips v0.2.1: nothing runs."""
    return ops.BlockedStatus(upgrade_refusal(decision))


def upgrading(decision: UpgradeStep) -> ops.StatusBase:
    """Shown while the charm backs the database up and starts the new GARM (an UPGRADE step)."""
    return ops.MaintenanceStatus(
        f"upgrading GARM {decision.last_ran} -> {decision.installed}: backing up, then restarting"
    )


def pre_upgrade_backup_failed(error: WorkloadError) -> ops.StatusBase:
    """The backup before an upgrade failed: the new GARM does not start on an unsaved database."""
    return ops.BlockedStatus(f"no backup before the upgrade, so none made: {error}")


def migration_not_restored(error: WorkloadError) -> ops.StatusBase:
    """A migration left behind whose backup could not be put back: nothing starts GARM.

    The record stays, so every hook tries again; restore-backup settles it by hand.
    """
    return bounded(
        ops.BlockedStatus(f"an unfinished migration is not undone ({error}): run restore-backup")
    )


def migration_recovered(recovered: Recovered, *, failed: bool) -> ops.StatusBase | None:
    """A migration left behind, settled: None when it had finished, else Blocked naming the backup.

    The database is the old one (as it was, or the backup put back); the next hook tries the
    upgrade again unless the old garm-binary is attached. The backup's name carries both
    versions (`pre-upgrade-<old>-<new>`).
    """
    record = recovered.record
    if recovered.outcome is Recovery.COMPLETED:
        return None
    what = "failed" if failed else "interrupted"
    if recovered.outcome is Recovery.UNTOUCHED:
        kept = f"database unchanged (backup {record.backup})"
    else:
        kept = f"backup {record.backup} restored"
    return bounded(
        ops.BlockedStatus(f"GARM upgrade {what}; {kept}: attach {record.from_version} again")
    )


def interrupted(error: GarmError | WorkloadError) -> ops.StatusBase:
    """The status of a reconcile that stopped half-way; the next hook takes it up again."""
    logger.warning("reconcile stopped: %s", error)
    if isinstance(error, GarmUnreachable):
        return ops.WaitingStatus("GARM stopped answering; retrying at the next hook")
    if isinstance(error, GarmServerError):
        return ops.WaitingStatus(
            f"GARM failed {error.operation} (HTTP {error.status}); retrying at the next hook"
        )
    if isinstance(error, WireFormatError):
        return ops.WaitingStatus(
            f"GARM answered {error.operation or 'a call'} with an unreadable body; "
            "retrying at the next hook"
        )
    if isinstance(error, WorkloadError):
        return not_started(error)
    if isinstance(error, GarmApiError):
        return ops.BlockedStatus(
            f"GARM refused {error.operation} (HTTP {error.status}): see juju debug-log"
        )
    return ops.BlockedStatus(f"GARM's answer was not understood: {error}")


def objects_reconciled(outcome: ObjectsOutcome, kept: str, *, has_specs: bool) -> ops.StatusBase:
    """A completed pass over GARM's objects: what blocks, what GARM retries, what changes.

    Args:
        outcome: the GitHub and scale-set passes, each part a short text or "".
        kept: which removed configurators' providers stay while their sets drain, or "".
        has_specs: whether any configurator published a scale set yet.
    """
    if outcome.blocked:
        return ops.BlockedStatus(outcome.blocked)
    if outcome.retrying:
        return ops.WaitingStatus(outcome.retrying)
    if outcome.waiting and not has_specs:
        return ops.WaitingStatus(fit([outcome.waiting, kept], "; "))
    return ops.ActiveStatus(fit([outcome.active, outcome.waiting, kept], "; "))


def certificate_awaited(
    status: ops.StatusBase, *, serving_tls: bool, requested: bool, refusal: Callable[[], str]
) -> ops.StatusBase:
    """`status`, unless a certificate is asked for and GARM still serves plain HTTP.

    Then an Active status says so, and a refusal by the CA is Blocked: GARM works, but not
    as the operator asked, so it must not look fine. Other statuses say more urgent things.

    Args:
        status: the reconcile's status.
        serving_tls: whether GARM serves the relation's certificate.
        requested: whether this unit asks for a certificate.
        refusal: why the CA refused the request in force, or "" (read only when it matters).
    """
    if serving_tls or not requested:
        return status
    if not isinstance(status, ops.ActiveStatus):
        return status
    refused = refusal()
    if refused:
        return ops.BlockedStatus(refused)
    return ops.ActiveStatus(fit([CERTIFICATE_AWAITED, status.message], "; "))
