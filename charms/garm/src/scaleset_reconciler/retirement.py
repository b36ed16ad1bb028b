"""A predecessor's or orphan's way out: retire it, drain it, force it at its deadline, delete it.

The drain deadline stands still while the charm pauses (`drain_clock`, ADR 0042); the steps are
explained in docs/explanation/scaleset-changeover.md.
"""

from __future__ import annotations

import dataclasses

from garm_api.models import ScaleSet, ScaleSetUpdate
from scaleset_reconciler.actions import Action, DeleteAction, ForceRemoveAction, UpdateAction
from scaleset_reconciler.context import PassContext as _Context
from scaleset_reconciler.drain_clock import drain_deadline
from scaleset_reconciler.grouping import Member
from scaleset_reconciler.marker import Marker
from scaleset_reconciler.needs import known_busy as _known_busy
from scaleset_reconciler.report import Phase, PredecessorReport
from scaleset_reconciler.runners import REMOVABLE


def plan_retirement(
    logical: str,
    member: Member,
    ready: bool,
    context: _Context,
    *,
    owner: str | None = None,
    application: str | None = None,
) -> tuple[PredecessorReport, list[Action]]:
    """Plan one predecessor (or orphan): retire it, drain it, force it, delete it.

    With `application` (a predecessor's spec), the retiring marker records it: a scale set an
    earlier charm version stamped is adopted once, by that spec.
    """
    scaleset, marker = member.scaleset, member.marker
    owner = owner or logical
    if marker is None or marker.retired_at is None:
        if not ready:
            return PredecessorReport(scaleset.name, scaleset.id, Phase.ACTIVE), []
        base = marker or Marker(
            logical=logical, attempt=member.attempt, generation=member.generation
        )
        if application is not None:
            base = dataclasses.replace(base, application=application)
        retired = dataclasses.replace(base, retired_at=context.now)
        return (
            PredecessorReport(scaleset.name, scaleset.id, Phase.HANDING_OVER),
            [_retire_action(owner, scaleset, retired)],
        )
    actions: list[Action] = []
    if scaleset.enabled or scaleset.min_idle_runners or scaleset.max_runners:
        actions.append(_retire_action(owner, scaleset, marker))
    report = _drain(owner, member, marker, context, actions)
    return report, actions


def _retire_action(owner: str, scaleset: ScaleSet, marker: Marker) -> UpdateAction:
    """One update that stops the listener and lets GARM remove idle runners (B14)."""
    return UpdateAction(
        owner=owner,
        scaleset_id=scaleset.id,
        name=scaleset.name,
        update=ScaleSetUpdate(
            enabled=False, min_idle_runners=0, max_runners=0, extended_state=marker.render()
        ),
    )


def _drain(
    owner: str,
    member: Member,
    marker: Marker,
    context: _Context,
    actions: list[Action],
) -> PredecessorReport:
    scaleset = member.scaleset
    retired_at = marker.retired_at or context.now
    runners = context.observed.runners(scaleset.id)
    settings = context.settings
    deadline = drain_deadline(retired_at, settings.drain_timeout, settings.drain_holds)
    left = max(0.0, (deadline - context.now).total_seconds())
    report = PredecessorReport(
        scaleset.name,
        scaleset.id,
        Phase.DRAINING,
        runners=len(runners),
        seconds_left=left,
        delete_failures=marker.delete_failures,
        deadline=deadline,
        missing_at_github=scaleset.id in context.observed.missing_at_github,
    )
    if not runners:
        report.phase = Phase.DELETING
        report.delete_retry_at = marker.delete_retry_at
        if marker.delete_retry_at is None or context.now >= marker.delete_retry_at:
            actions.append(DeleteAction(owner, scaleset.id, scaleset.name, marker))
    elif context.now >= deadline:
        report.phase = Phase.FORCING
        forceable = [r for r in runners if r.status in REMOVABLE]
        report.forced = len(forceable)
        actions.extend(ForceRemoveAction(owner, scaleset.name, r.name) for r in forceable)
    else:
        # Positive evidence only: GitHub answered that it no longer lists this busy runner.
        finished = [r for r in runners if _known_busy(r) and r.name in context.observed.finished]
        actions.extend(
            ForceRemoveAction(owner, scaleset.name, r.name, finished=True) for r in finished
        )
    return report


def orphan_owner(name: str) -> str:
    """Return the key under which an orphan's actions and errors are reported."""
    return f"orphan:{name}"
