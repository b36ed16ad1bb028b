"""The min-idle-schedule window in force, for the `juju status` text (pure).

A configurator's `min-idle-schedule` sets a scale set's min idle runners by time of day; the
window that applies now travels in its spec (`ScalesetSpec.min_idle_window`). The status names
it only while a window is in force (not outside every window, not without a schedule), and
only when the whole text still fits in a status: a changeover or refresh text always comes
first, and the schedule is left out rather than cut.
"""

from __future__ import annotations

from collections.abc import Sequence

from scaleset_reconciler.spec import ScalesetSpec
from status_text import STATUS_LIMIT, fit, short_name

# What the configurator's schedule says outside every window.
DEFAULT_WINDOW = "default"
SEPARATOR = "; "


def with_schedule(active: str, specs: Sequence[ScalesetSpec]) -> str:
    """Return `active` followed by the schedule windows in force, when both fit; else `active`."""
    scheduled = schedule_message(specs)
    if not scheduled:
        return active
    joined = SEPARATOR.join(text for text in (active, scheduled) if text)
    return joined if len(joined) <= STATUS_LIMIT else active


def schedule_message(specs: Sequence[ScalesetSpec]) -> str:
    """Return e.g. `scheduled: 'small' min idle 6 (Mon-Fri 08:00-18:00 Europe/Berlin)`, or ""."""
    entries = [
        f"{short_name(spec.name)} min idle {spec.min_idle_runners} ({spec.min_idle_window})"
        for spec in sorted(specs, key=lambda spec: spec.name)
        if spec.min_idle_window not in ("", DEFAULT_WINDOW)
    ]
    if not entries:
        return ""
    prefix = "scheduled: "
    return prefix + fit(entries, ", ", most=2, limit=STATUS_LIMIT - len(prefix))
