"""The live scale set's one update to match its spec, and when a rolling refresh starts (pure).

Visible fields are compared with what GARM lists, the rest through the marker's config hash
(`marker`); a change that leaves the runners outdated starts a rolling refresh (ADR 0022).
"""

from __future__ import annotations

import datetime
from typing import Any

from garm_api.models import ScaleSet, ScaleSetUpdate
from scaleset_reconciler.actions import UpdateAction
from scaleset_reconciler.grouping import Member
from scaleset_reconciler.grouping import member_serves as _serves
from scaleset_reconciler.marker import Marker, config_hash
from scaleset_reconciler.prepare import DEFAULT_RUNNER_GROUP
from scaleset_reconciler.refresh import DEFAULT_SURGE, RefreshStep, changes_runners, raised_counts
from scaleset_reconciler.spec import ScalesetSpec


def refresh_after(
    spec: ScalesetSpec, live: Member, now: datetime.datetime, step: RefreshStep
) -> datetime.datetime | None:
    """The `refresh-from` the live scale set's marker carries after this pass (ADR 0022).

    A change this pass makes that leaves the runners outdated starts a refresh now (not while
    the set is being re-enabled: it has served nothing since); otherwise the one under way, if
    `step` goes on with it.
    """
    if live.marker is not None and _serves(live) and changes_runners(_live_fields(spec, live)):
        return now
    return step.refresh_from


def live_update(
    spec: ScalesetSpec,
    live: Member,
    now: datetime.datetime,
    refresh_from: datetime.datetime | None = None,
    surge: int = DEFAULT_SURGE,
) -> UpdateAction | None:
    """Return the one update that makes the live scale set match `spec`, or None if it does.

    Visible fields are compared with what GARM lists; `extra_specs` and the template (lists
    name it only by id) through the marker's config hash. A retired or disabled live scale set (a
    label change back to an earlier set) is re-enabled with its counts restored. While a rolling
    refresh runs (`refresh_from`, from `refresh_after`) the counts are raised by `surge` (ADR
    0022).
    """
    scaleset, marker = live.scaleset, live.marker
    reenabling = not _serves(live)
    fields = _live_fields(spec, live)
    hidden = config_hash(spec)
    hidden_differs = marker is None or marker.config != hidden
    if refresh_from is not None:
        raised = raised_counts(spec.min_idle_runners, spec.max_runners, surge)
        _set_counts(fields, scaleset, raised)
    wanted_marker = Marker(
        logical=spec.name,
        config=hidden,
        enabled_at=now if reenabling else (marker.enabled_at if marker else None),
        attempt=live.attempt,
        application=spec.application,
        refresh_from=refresh_from,
        generation=live.generation,
    )
    if wanted_marker != marker:
        fields["extended_state"] = wanted_marker.render()
    if not fields and not hidden_differs:
        return None
    return UpdateAction(
        owner=spec.name,
        scaleset_id=scaleset.id,
        name=scaleset.name,
        update=ScaleSetUpdate(**fields),
        set_template=hidden_differs,
        template_name=spec.template_name,
        os_type=spec.os_type,
    )


def _live_fields(spec: ScalesetSpec, live: Member) -> dict[str, Any]:
    """The update fields in which the live scale set differs from `spec` (without the marker).

    `extra_specs` is sent whenever the marker's config hash differs, so that the template,
    which GARM's lists name only by id, is set again with it.
    """
    fields = _visible_differences(spec, live.scaleset)
    if live.marker is None or live.marker.config != config_hash(spec):
        fields["extra_specs"] = dict(spec.extra_specs)
    return fields


def _set_counts(fields: dict[str, Any], scaleset: ScaleSet, counts: tuple[int, int]) -> None:
    """Ask for `counts` (min idle, max) instead of the spec's, sent only when GARM differs."""
    fields.pop("min_idle_runners", None)
    fields.pop("max_runners", None)
    if (scaleset.min_idle_runners, scaleset.max_runners) != counts:
        fields["min_idle_runners"], fields["max_runners"] = counts


def _visible_differences(spec: ScalesetSpec, scaleset: ScaleSet) -> dict[str, Any]:
    """Return the mutable fields a list response shows that differ from `spec`.

    GARM applies a string field only when it is not empty, so an empty spec value means
    "leave it"; min and max are sent together so GARM never sees min > max in between.
    """
    fields: dict[str, Any] = {}
    if not scaleset.enabled:
        fields["enabled"] = True
    if (scaleset.min_idle_runners, scaleset.max_runners) != (
        spec.min_idle_runners,
        spec.max_runners,
    ):
        fields["min_idle_runners"] = spec.min_idle_runners
        fields["max_runners"] = spec.max_runners
    wanted_strings = {
        "image": spec.image,
        "flavor": spec.flavor,
        "os_type": spec.os_type,
        "os_arch": spec.os_arch,
        "runner_group": spec.runner_group or DEFAULT_RUNNER_GROUP,
    }
    for field, wanted in wanted_strings.items():
        if wanted.strip() and getattr(scaleset, field) != wanted:
            fields[field] = wanted
    if scaleset.runner_bootstrap_timeout != spec.runner_bootstrap_timeout:
        fields["runner_bootstrap_timeout"] = spec.runner_bootstrap_timeout
    return fields
