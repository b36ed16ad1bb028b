"""`charm_status`: the charm's errors and outcomes -> statuses, checked without a charm."""

from __future__ import annotations

import ops
import pytest

import charm_status
from garm_api import GarmConflict, GarmServerError, GarmUnreachable, WireFormatError
from reconcile.bootstrap import BootstrapError
from reconcile.garm_objects import ObjectsOutcome
from scaleset_reconciler.report import ReconcileReport
from status_text import STATUS_LIMIT


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (GarmUnreachable("login", "refused"), ops.WaitingStatus("waiting for GARM to start")),
        (
            BootstrapError("GARM's admin is not ours"),
            ops.BlockedStatus("GARM's admin is not ours"),
        ),
        (
            GarmServerError("first-run", 500, "Internal Server Error", "d" * 300),
            ops.WaitingStatus("GARM failed first-run (HTTP 500); retrying at the next hook"),
        ),
        (
            WireFormatError("not JSON", operation="controller-info"),
            ops.WaitingStatus(
                "GARM answered controller-info with an unreadable body; retrying at the next hook"
            ),
        ),
        (
            GarmConflict("first-run", 409, "Conflict", "c" * 300),
            ops.BlockedStatus(
                "GARM refused its bootstrap (first-run, HTTP 409): see juju debug-log"
            ),
        ),
    ],
)
def test_a_failed_bootstrap_waits_for_an_outage_and_blocks_on_a_refusal(
    error: charm_status.BootstrapFailure, expected: ops.StatusBase
):
    """Arrange: each error bootstrap may raise. Act: its status.

    Assert: the text, word for word, within 120 characters and without GARM's details.
    """
    status = charm_status.bootstrap_failed(error)

    assert status == expected
    assert len(status.message) <= STATUS_LIMIT


def outcome(
    blocked: str = "", retrying: str = "", waiting: str = "", active: str = ""
) -> ObjectsOutcome:
    """A pass over GARM's objects with these texts."""
    return ObjectsOutcome(blocked, retrying, waiting, active, ReconcileReport())


def test_what_blocks_outranks_what_is_retried_and_what_is_awaited():
    """Arrange: a pass with a refusal, a retry and a missing publication. Act: its status.

    Assert: Blocked with the refusal; without it, Waiting with the retry.
    """
    both = outcome(blocked="refused", retrying="retrying", waiting="waiting for x")

    assert charm_status.objects_reconciled(both, "", has_specs=True) == ops.BlockedStatus(
        "refused"
    )
    retry = outcome(retrying="retrying", waiting="waiting for x")
    assert charm_status.objects_reconciled(retry, "", has_specs=True) == ops.WaitingStatus(
        "retrying"
    )


def test_configurators_not_yet_published_wait_only_while_no_scale_set_is_asked_for():
    """Arrange: a configurator that has not published, a kept provider. Act: the status.

    Assert: Waiting without any spec; Active, naming both, once some spec exists.
    """
    pending = outcome(waiting="waiting for b", active="")

    assert charm_status.objects_reconciled(pending, "kept p", has_specs=False) == (
        ops.WaitingStatus("waiting for b; kept p")
    )
    assert charm_status.objects_reconciled(pending, "kept p", has_specs=True) == (
        ops.ActiveStatus("waiting for b; kept p")
    )


def test_a_certificate_awaited_is_said_only_over_an_active_status():
    """Arrange: a certificate requested, none issued. Act: the status over Active and Waiting.

    Assert: Active says GARM serves plain HTTP; Waiting is kept, the refusal never read for it.
    """
    asked: list[str] = []

    def no_refusal() -> str:
        asked.append("refusal")
        return ""

    active = charm_status.certificate_awaited(
        ops.ActiveStatus("ok"), serving_tls=False, requested=True, refusal=no_refusal
    )
    waiting = charm_status.certificate_awaited(
        ops.WaitingStatus("w"), serving_tls=False, requested=True, refusal=no_refusal
    )

    assert active == ops.ActiveStatus(f"{charm_status.CERTIFICATE_AWAITED}; ok")
    assert waiting == ops.WaitingStatus("w")
    assert asked == ["refusal"]


def test_a_refused_certificate_blocks_and_a_served_one_changes_nothing():
    """Arrange: a CA's refusal; then GARM serving TLS. Act: the status over Active.

    Assert: Blocked with the refusal; with TLS served, the Active status as it was.
    """
    refused = charm_status.certificate_awaited(
        ops.ActiveStatus("ok"), serving_tls=False, requested=True, refusal=lambda: "refused"
    )
    served = charm_status.certificate_awaited(
        ops.ActiveStatus("ok"), serving_tls=True, requested=True, refusal=lambda: "refused"
    )

    assert refused == ops.BlockedStatus("refused")
    assert served == ops.ActiveStatus("ok")
