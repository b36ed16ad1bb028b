"""Which providers of removed configurators GARM still needs, and the status text about them.

When a garm-configurator relation goes, the orphan sweep drains and deletes its scale sets
over the following hooks, and GARM needs the provider to delete their runners' VMs. The
relation's data and secrets are gone by then, so the leader keeps the provider files it last
rendered until GARM holds no scale set on that provider
(docs/explanation/scaleset-changeover.md, "A removed configurator's provider").

Pure: the charm hands in names and counts; the workload lists and removes the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def retained_providers(
    desired: Iterable[str], on_disk: Iterable[str], in_use: Mapping[str, int] | None
) -> tuple[str, ...]:
    """The providers on disk that no configurator asks for but that must stay, sorted.

    Args:
        desired: the providers the related configurators publish (they are rendered anyway,
            from their new data).
        on_disk: the providers whose files the leader rendered or kept before.
        in_use: scale sets per provider name as GARM holds them, or None when that is not
            known (GARM down, not bootstrapped, or it refused): then every one is kept.
    """
    candidates = set(on_disk) - set(desired)
    if in_use is not None:
        candidates = {name for name in candidates if in_use.get(name, 0) > 0}
    return tuple(sorted(candidates))


def retention_message(retained: Iterable[str], in_use: Mapping[str, int], limit: int = 2) -> str:
    """The short status text for the kept providers, at most `limit` named, or "".

    Example: `keeping provider openstack-small until its 2 scale sets are gone`.
    """
    entries = [
        f"keeping provider {name} until its {_scalesets(in_use.get(name, 0))} gone"
        for name in retained
    ]
    text = ", ".join(entries[:limit])
    if len(entries) > limit:
        text += f", +{len(entries) - limit} more"
    return text


def _scalesets(count: int) -> str:
    return "scale set is" if count == 1 else f"{count} scale sets are"
