"""Backups of GARM's SQLite database on this machine (docs/adr/0025-backups-and-upgrades.md).

A backup is SQLite's online backup of the live database (consistent while GARM writes), written
under `/var/lib/garm-charm/backups/<name>/` (directory 0700, files 0600, root only; GARM's
file-object database `blob-garm.db` too, where the GARM build has one) beside a
manifest: the database file's sha256, the GARM version that wrote it and the Juju secret holding
the passphrase GARM encrypts secrets in the database with, without which the copy is useless.
It is built in a hidden `.<name>.partial/` and renamed to `<name>/` once its manifest is
written, so a backup that fails half way never stands in the way of the next attempt.

A restore checks the manifest, the checksum and the version, then swaps the file in with one
rename; GARM must be stopped first (the charm does that), and its `-wal`/`-shm` files go once
that rename is done, so SQLite never replays the old journal onto the restored database and a
failed rename leaves the old database whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import hashlib
import json
import os
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Final, cast

from workload.host import (
    Paths,
    WorkloadError,
    ensure_directory,
    read_regular,
    remove_tree,
    size_text,
    write_atomic,
)
from workload.version import version_order

DATABASE_FILE: Final = "garm.db"
# Builds after v0.2.1 keep file objects (cached agent binaries and the like) in a second database.
BLOB_FILE: Final = "blob-garm.db"
MANIFEST_FILE: Final = "manifest.json"
# SQLite's journal files beside a database, named after it.
JOURNALS: Final = ("-wal", "-shm", "-journal")
# Names the charm makes (`garm-<UTC time>`, `pre-upgrade-...`): no path separator can slip in.
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SHA256: Final = re.compile(r"[0-9a-f]{64}")
# Fields a manifest may lack: written only by builds that have the file-object database.
_MANIFEST_DEFAULTS: Final[dict[str, object]] = {"blob_sha256": ""}


class BackupError(WorkloadError):
    """A backup could not be made, read or restored; the message says why (no secret in it)."""


@dataclasses.dataclass(frozen=True)
class BackupManifest:
    """What a backup holds and what it needs to be restored."""

    name: str
    created: str
    garm_version: str
    sha256: str
    size: int
    passphrase_secret: str
    blob_sha256: str = ""

    def as_results(self, path: Path) -> dict[str, str]:
        """The action's results: where the backup's database is and what restoring it needs."""
        return {
            "name": self.name,
            "path": str(path),
            "sha256": self.sha256,
            "garm-version": self.garm_version,
            "passphrase-secret": self.passphrase_secret,
            "created": self.created,
        }


def backup_dir(paths: Paths, name: str) -> Path:
    """Where the backup called `name` lives."""
    return paths.charm_state / "backups" / name


def create_backup(
    paths: Paths,
    *,
    name: str,
    garm_version: str,
    passphrase_secret: str,
    now: datetime.datetime,
) -> BackupManifest:
    """Copy the live database with SQLite's online backup and write its manifest.

    Args:
        paths: this machine's paths.
        name: the backup's name (letters, digits, `.`, `_`, `-`).
        garm_version: the version of the GARM that runs on the database.
        passphrase_secret: the reference of the Juju secret holding the database passphrase.
        now: the time the backup is taken at.

    Raises:
        BackupError: no database, a bad name, an existing backup of that name, or SQLite or
            the disk failed (nothing is left under `name` then).
    """
    directory = _named_dir(paths, name)
    if not paths.sqlite_db.is_file():
        raise BackupError(f"no SQLite database at {paths.sqlite_db}: GARM has not run here")
    if directory.exists():
        raise BackupError(f"a backup called {name} exists already: choose another name")
    ensure_directory(directory.parent, 0o700)
    # Built aside and renamed in whole: a copy that fails half way leaves no `<name>` behind,
    # so the next attempt under the same name (the pre-upgrade backup's) starts afresh.
    partial = partial_dir(paths, name)
    try:
        remove_tree(partial)
        ensure_directory(partial, 0o700)
        manifest = _fill(
            paths,
            partial,
            BackupManifest(
                name=name,
                created=now.astimezone(datetime.UTC).isoformat(timespec="seconds"),
                garm_version=garm_version,
                sha256="",
                size=0,
                passphrase_secret=passphrase_secret,
            ),
        )
        os.rename(partial, directory)
    except OSError as error:
        _discard(partial)
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _disk_full(paths, name) from None
        raise BackupError(f"could not write backup {name}: {error.strerror}") from None
    except BackupError as error:
        _discard(partial)
        if "full" in str(error):
            raise _disk_full(paths, name) from None
        raise
    except WorkloadError:
        _discard(partial)
        raise
    return manifest


def _disk_full(paths: Paths, name: str) -> BackupError:
    """A full disk: the error names where the backup goes and how much it needs there."""
    needed = sum(
        path.stat().st_size for path in (paths.sqlite_db, paths.data / BLOB_FILE) if path.is_file()
    )
    return BackupError(
        f"disk full writing backup {name}: free at least {size_text(needed)} in "
        f"{backup_dir(paths, name).parent}"
    )


def partial_dir(paths: Paths, name: str) -> Path:
    """Where the backup `name` is built before it is renamed in (hidden: never a backup)."""
    return backup_dir(paths, f".{name}.partial")


def _discard(partial: Path) -> None:
    """Best effort: a partial left behind is cleared by the next attempt anyway."""
    with contextlib.suppress(OSError):
        remove_tree(partial)


def _fill(paths: Paths, directory: Path, described: BackupManifest) -> BackupManifest:
    """Copy the databases into `directory`, then write their manifest there, last."""
    target = directory / DATABASE_FILE
    online_copy(paths.sqlite_db, target)
    content = target.read_bytes()
    blob_sha256 = ""
    if (paths.data / BLOB_FILE).is_file():
        online_copy(paths.data / BLOB_FILE, directory / BLOB_FILE)
        blob_sha256 = hashlib.sha256((directory / BLOB_FILE).read_bytes()).hexdigest()
    manifest = dataclasses.replace(
        described,
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
        blob_sha256=blob_sha256,
    )
    write_atomic(
        directory / MANIFEST_FILE,
        json.dumps(dataclasses.asdict(manifest), indent=2).encode(),
        0o600,
    )
    return manifest


def read_backup(paths: Paths, name: str) -> BackupManifest:
    """The manifest of the backup `name`, its database checked against the recorded sha256.

    Raises:
        BackupError: no such backup, an unreadable manifest, or a database that changed.
    """
    directory = _named_dir(paths, name)
    manifest_file = read_regular(directory / MANIFEST_FILE)
    database = read_regular(directory / DATABASE_FILE)
    if manifest_file is None or database is None:
        raise BackupError(f"no backup called {name} under {directory.parent}")
    # What is restored is the directory checked here, whatever name the manifest says (a
    # backup copied back under another name restores from where it is now).
    manifest = dataclasses.replace(parse_manifest(manifest_file[0], name), name=name)
    blob = read_regular(directory / BLOB_FILE) if manifest.blob_sha256 else None
    if hashlib.sha256(database[0]).hexdigest() != manifest.sha256 or (
        manifest.blob_sha256
        and (blob is None or hashlib.sha256(blob[0]).hexdigest() != manifest.blob_sha256)
    ):
        raise BackupError(f"backup {name} does not match its sha256: it changed or is damaged")
    return manifest


def parse_manifest(content: bytes, name: str) -> BackupManifest:
    """The manifest in `content`, every field of its type (a hand edit is refused, not run).

    Fields this charm does not know are ignored (a later revision may add some).

    Raises:
        BackupError: not JSON, not an object, a field missing or of the wrong type, a digest
            that is no sha256; names the field.
    """
    try:
        document: Any = json.loads(content)
    except ValueError:
        raise BackupError(f"the manifest of backup {name} is not JSON") from None
    if not isinstance(document, dict):
        raise BackupError(f"the manifest of backup {name} is not a JSON object")
    found = cast("dict[str, Any]", document)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(BackupManifest):
        value = found.get(field.name, _MANIFEST_DEFAULTS.get(field.name))
        if not _of_type(field.name, value):
            raise BackupError(
                f"the manifest of backup {name} has no valid {field.name!r}: not restored"
            )
        values[field.name] = value
    return BackupManifest(**values)


def _of_type(field: str, value: object) -> bool:
    if field == "size":
        return type(value) is int and value >= 0
    if not isinstance(value, str):
        return False
    if field in ("sha256", "blob_sha256"):
        return _SHA256.fullmatch(value) is not None or (field == "blob_sha256" and not value)
    return True


def restore_problem(manifest: BackupManifest, installed_version: str) -> str | None:
    """Why the installed GARM must not run on this backup, or None.

    A newer GARM's database may hold migrations the installed one does not know: refused. An
    older one is migrated forward by GARM when it starts (an upgrade). Versions the charm cannot
    order must be the same string.
    """
    backup, installed = version_order(manifest.garm_version), version_order(installed_version)
    if backup is None or installed is None:
        if manifest.garm_version == installed_version:
            return None
        return (
            f"cannot compare the backup's GARM {manifest.garm_version or '(unknown)'} with the "
            f"installed {installed_version or '(unknown)'}: attach the garm-binary that made it"
        )
    if backup > installed:
        return (
            f"backup {manifest.name} was made by GARM {manifest.garm_version}, newer than the "
            f"installed {installed_version}: attach that garm-binary first"
        )
    return None


def restore_backup(paths: Paths, manifest: BackupManifest, *, uid: int, gid: int) -> None:
    """Swap the backup's databases in for GARM's, each in one rename; GARM must be stopped.

    Each copy is checked again as it is read (what is renamed in is what was verified), gets
    the owner GARM runs as and mode 0600, and replaces GARM's file; the old journal files go
    once it has (a failed swap leaves the old database with its journal).

    Raises:
        BackupError: a copy does not match the manifest or a swap failed.
    """
    directory = backup_dir(paths, manifest.name)
    files = [(DATABASE_FILE, manifest.sha256)]
    if manifest.blob_sha256:
        files.append((BLOB_FILE, manifest.blob_sha256))
    contents: list[tuple[Path, bytes]] = []
    for name, sha256 in files:
        content = read_regular(directory / name)
        if content is None or hashlib.sha256(content[0]).hexdigest() != sha256:
            raise BackupError(f"backup {manifest.name} changed since it was checked: not restored")
        contents.append((paths.data / name, content[0]))
    ensure_directory(paths.data, None)
    for target, content in contents:
        _swap_in(target, content, uid=uid, gid=gid)


def _swap_in(target: Path, content: bytes, *, uid: int, gid: int) -> None:
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.restore.")
    try:
        os.fchmod(descriptor, 0o600)
        os.fchown(descriptor, uid, gid)
        with os.fdopen(descriptor, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        replace_dropping_journal(Path(temporary), target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise BackupError(f"could not swap {target.name} in: {error.strerror}") from None


def replace_dropping_journal(temporary: Path, target: Path) -> None:
    """Rename `temporary` over `target`; its journal files go only once that rename is done.

    They are moved aside first, so SQLite never replays the old journal onto the restored
    database, and moved back when the rename fails: the old database keeps its committed
    writes in the WAL.
    """
    aside: list[tuple[Path, Path]] = []
    try:
        for suffix in JOURNALS:
            journal = target.with_name(target.name + suffix)
            kept = journal.with_name(f".{journal.name}.aside")
            with contextlib.suppress(FileNotFoundError):
                os.replace(journal, kept)
                aside.append((kept, journal))
        os.replace(temporary, target)
    except OSError:
        for kept, journal in aside:
            os.replace(kept, journal)
        raise
    for kept, _ in aside:
        kept.unlink(missing_ok=True)


def _named_dir(paths: Paths, name: str) -> Path:
    if _NAME.fullmatch(name) is None:
        raise BackupError(
            f"backup name {name!r} is not allowed: use letters, digits, '.', '_' and '-'"
        )
    return backup_dir(paths, name)


def online_copy(database: Path, target: Path) -> None:
    """SQLite's online backup: a consistent copy while GARM keeps writing.

    The source is opened read-only, so the charm can never change GARM's database here; the
    target is created 0600 before SQLite writes a byte into it.
    """
    target.touch(mode=0o600, exist_ok=False)
    try:
        source = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            destination = sqlite3.connect(target)
            try:
                source.backup(destination)
            finally:
                destination.close()
        finally:
            source.close()
    except sqlite3.Error as error:
        target.unlink(missing_ok=True)
        raise BackupError(f"SQLite could not copy the database: {error}") from None


def matching_backup(paths: Paths, prefix: str) -> BackupManifest | None:
    """A backup named `prefix` (or `prefix-<suffix>`) whose database is GARM's, byte for byte.

    A failed upgrade restores its backup, which makes the database that backup's file, so a
    retry finds the backup it took; any other backup of that name (an earlier upgrade between
    the same versions, the operator having gone back since) is older than the database and does
    not match. A backup just taken does not match either (SQLite's online copy is not the file
    byte for byte): a hook that dies between backup and migration leaves one more backup. A
    journal not yet checkpointed (`-wal` with content) means the database holds more than the
    file: nothing matches.
    """
    live = read_regular(paths.sqlite_db)
    wal = read_regular(paths.sqlite_db.with_name(f"{DATABASE_FILE}-wal"))
    root = paths.charm_state / "backups"
    if live is None or not root.is_dir() or (wal is not None and wal[0]):
        return None
    digest = hashlib.sha256(live[0]).hexdigest()
    for directory in sorted(root.iterdir(), key=lambda found: found.name, reverse=True):
        if directory.name != prefix and not directory.name.startswith(f"{prefix}-"):
            continue
        try:
            manifest = read_backup(paths, directory.name)
        except BackupError:
            continue
        if manifest.sha256 == digest:
            return manifest
    return None
