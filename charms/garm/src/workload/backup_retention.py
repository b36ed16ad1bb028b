"""How many backups stay: the newest `backup-keep`, and every one something still needs.

Backups (`workload.backup`) are taken by the operator and before every upgrade, and each holds
a whole copy of GARM's database: never removed, they fill the disk. After a new backup is
made, it and the newest others up to the operator's `backup-keep` stay, newest by the time
their manifest says they were created (a backup whose manifest cannot be read counts as the
oldest: it cannot be restored anyway), and the rest are removed. Never removed either,
whatever their age (so more than `backup-keep` may stay):

- the backup just made;
- the backup a migration in progress would put back (its record names it);
- the backup the last restore put in place (noted by `note_restored`): the operator's way back.

Hidden `.<name>.partial/` directories (a backup being built) are not backups and are left to
`workload.backup`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection
from pathlib import Path
from typing import Final, cast

from workload.host import Paths, read_regular, remove_tree, write_atomic
from workload.migration_record import record_path

logger = logging.getLogger(__name__)

DEFAULT_KEEP: Final = 10
# The note, in the charm's state directory, naming the backup the last restore put in place.
RESTORED_NOTE: Final = "last-restored-backup"
_MANIFEST: Final = "manifest.json"


def prune(paths: Paths, keep: int, *, just_made: str) -> list[str]:
    """Remove the oldest backups beyond `keep`, sparing every one still needed.

    Args:
        paths: this machine's paths.
        keep: how many backups stay (the newest; at least the one just made).
        just_made: the backup the caller just made.

    Returns:
        The names removed, oldest first. A backup that cannot be removed is logged and kept.
    """
    others = sorted(
        (found for found in _backups(paths) if found[0] != just_made),
        key=lambda found: (found[1], found[0]),
    )
    # The one just made counts as one of the `keep`; the others kept are the newest.
    newest = others[max(0, len(others) - (keep - 1)) :] if keep > 1 else []
    spared = {*(name for name, _ in newest), *referenced(paths)}
    removed: list[str] = []
    for name, _ in others:
        if name in spared:
            continue
        try:
            remove_tree(_root(paths) / name)
        except OSError as error:
            logger.warning("backup %s not pruned: %s", name, error.strerror)
            continue
        removed.append(name)
    if removed:
        logger.info("pruned backups beyond backup-keep=%d: %s", keep, ", ".join(removed))
    return removed


def referenced(paths: Paths) -> Collection[str]:
    """The backups a record still needs: a migration in progress, the last restore."""
    names: set[str] = set()
    # Read leniently: an unreadable record still spares nothing it cannot name.
    record = _json(record_path(paths))
    if isinstance(record, dict):
        backup = cast(dict[str, object], record).get("backup")
        if isinstance(backup, str) and backup:
            names.add(backup)
    found = read_regular(paths.charm_state / RESTORED_NOTE)
    if found is not None:
        name = found[0].decode(errors="replace").strip()
        if name:
            names.add(name)
    return names


def note_restored(paths: Paths, name: str) -> None:
    """Remember the backup a restore put in place, so pruning keeps it (root only)."""
    write_atomic(paths.charm_state / RESTORED_NOTE, f"{name}\n".encode(), 0o600)


def _root(paths: Paths) -> Path:
    return paths.charm_state / "backups"


def _backups(paths: Paths) -> list[tuple[str, str]]:
    """Every backup: its name and its manifest's creation time ("" when unreadable)."""
    root = _root(paths)
    if not root.is_dir():
        return []
    found: list[tuple[str, str]] = []
    for entry in root.iterdir():
        if entry.name.startswith(".") or entry.is_symlink() or not entry.is_dir():
            continue
        manifest = _json(entry / _MANIFEST)
        created = (
            cast(dict[str, object], manifest).get("created") if isinstance(manifest, dict) else ""
        )
        found.append((entry.name, created if isinstance(created, str) else ""))
    return found


def _json(path: Path) -> object:
    found = read_regular(path)
    if found is None:
        return None
    try:
        return json.loads(found[0])
    except ValueError:
        return None
