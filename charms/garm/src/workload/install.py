"""Installing GARM on this machine: its system user, its directories and both binaries.

Which tarball each installed binary came from is recorded (sha256, root only), so an unchanged
tarball is never extracted again and the service fingerprint sees a binary change.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workload.config import ProxyConfig
from workload.host import (
    SYSTEM_USER,
    IdLookup,
    Paths,
    Runner,
    VersionRefused,
    check_command,
    ensure_directory,
    is_intact,
    write_atomic,
)
from workload.releases import (
    GARM_RELEASE,
    PROVIDER_RELEASE,
    Fetcher,
    Release,
    extract_member,
    tarball_bytes,
)
from workload.rendering import GARM_DIRECTORY
from workload.version import binary_version

logger = logging.getLogger(__name__)
# Executables: root's, runnable by all (GARM runs as its own user).
BINARY_MODE = 0o755
# A new GARM binary's version -> why it must not be installed, or None.
VersionCheck = Callable[[str], str | None]


class Installer:
    """Puts GARM's user, directories and binaries on the machine."""

    def __init__(
        self, paths: Paths, *, run: Runner, fetch: Fetcher, arch: str, ids: IdLookup
    ) -> None:
        self._paths = paths
        self._run = run
        self._ids = ids
        self._fetch = fetch
        self._arch = arch

    def install(
        self,
        garm_tarball: Path | None,
        provider_tarball: Path | None,
        proxy: ProxyConfig,
        refusal: VersionCheck | None = None,
    ) -> None:
        """Create the user and directories and install both binaries.

        Args:
            garm_tarball: the attached `garm-binary` resource, or None to download.
            provider_tarball: the attached `garm-provider-openstack` resource, or None.
            proxy: the model's proxy, used for downloads.
            refusal: given a new GARM binary's version, why it must not replace the installed
                one (e.g. a downgrade), or None; asked before the binary is swapped in.

        Raises:
            ResourceError: a tarball is missing, unverifiable or lacks its binary.
            VersionRefused: `refusal` refused the new GARM binary; the installed one stays.
            CommandError: creating the user or setting ownership failed.
        """
        self._ensure_user()
        self._ensure_directories()
        self._install_binary(GARM_RELEASE, garm_tarball, self._paths.garm_binary, proxy, refusal)
        self._install_binary(
            PROVIDER_RELEASE, provider_tarball, self._paths.provider_binary, proxy
        )

    def is_installed(self) -> bool:
        """Whether both binaries are in place."""
        return is_intact(self._paths.garm_binary, BINARY_MODE) and is_intact(
            self._paths.provider_binary, BINARY_MODE
        )

    def installed_digests(self) -> dict[str, str]:
        """Resource name -> sha256 of the tarball its binary was installed from."""
        try:
            loaded: Any = json.loads(self._paths.installed.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(loaded, dict):
            return {}
        entries: dict[Any, Any] = loaded  # pyright: ignore[reportUnknownVariableType]
        return {str(key): str(value) for key, value in entries.items()}

    def garm_ids(self) -> tuple[int, int]:
        """The uid and gid GARM runs as."""
        return self._ids(SYSTEM_USER)

    def _ensure_user(self) -> None:
        if self._run(["id", "-u", SYSTEM_USER]).returncode == 0:
            return
        check_command(
            self._run,
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                str(self._paths.data),
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ],
        )

    def _ensure_directories(self) -> None:
        """GARM reads its configuration (root:garm 0750) and writes only its data (garm:garm).

        Owner and mode are set at every install, not only on creation: a directory an earlier
        version (or a hand) left to `garm` would let GARM rewrite its own configuration.
        """
        paths = self._paths
        uid, gid = self._ids(SYSTEM_USER)
        # Owned by root again, whoever took them: a directory's owner may replace its files.
        root = os.geteuid()
        ensure_directory(paths.etc, 0o750, uid=root, gid=gid)
        ensure_directory(paths.data, 0o750, uid=uid, gid=gid)
        ensure_directory(paths.providers_dir, 0o755, uid=root, gid=os.getegid())
        ensure_directory(paths.charm_state, 0o700, uid=root, gid=os.getegid())
        self._repair_provider_dirs(root, gid)
        # Shared system directories: create when absent (a test root), never change their mode.
        ensure_directory(paths.garm_binary.parent, None)
        ensure_directory(paths.unit_file.parent, None)

    def _repair_provider_dirs(self, root_uid: int, garm_gid: int) -> None:
        """Each provider's config directory that exists: root:garm 0750 (never through a link)."""
        base = self._paths.provider_dirs
        if base.is_symlink() or not base.is_dir():
            return
        ensure_directory(base, GARM_DIRECTORY, uid=root_uid, gid=garm_gid)
        for entry in sorted(base.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                ensure_directory(entry, GARM_DIRECTORY, uid=root_uid, gid=garm_gid)

    def _install_binary(
        self,
        release: Release,
        tarball: Path | None,
        target: Path,
        proxy: ProxyConfig,
        refusal: VersionCheck | None = None,
    ) -> None:
        """Install from the attached tarball or the pinned download, only when it changed.

        Without a resource, the binary installed from the pinned tarball is kept as it is: no
        download at all, so a machine that lost its way out keeps reconciling.
        """
        installed = self.installed_digests()
        attached = _attached(tarball)
        pinned = release.sha256.get(self._arch, "")
        intact = is_intact(target, BINARY_MODE)
        unchanged = pinned and installed.get(release.resource) == pinned and intact
        if attached is None and unchanged:
            return
        content = attached or tarball_bytes(
            release, None, proxy, arch=self._arch, fetch=self._fetch
        )
        digest = hashlib.sha256(content).hexdigest()
        if installed.get(release.resource) == digest and intact:
            return
        binary = extract_member(release, content)
        if refusal is None:
            write_atomic(target, binary, BINARY_MODE)
        else:
            self._swap_in_unless_refused(target, binary, refusal)
        installed[release.resource] = digest
        write_atomic(self._paths.installed, json.dumps(installed).encode(), 0o600)
        logger.info("installed %s from a tarball with sha256 %s", release.binary, digest)

    def _swap_in_unless_refused(self, target: Path, binary: bytes, refusal: VersionCheck) -> None:
        """Put the new binary beside the installed one, ask its version, then swap or refuse.

        A refused binary never takes the installed one's place: systemd restarts GARM after a
        crash or a reboot from `target`, and must not start it on a database it cannot run.
        """
        candidate = target.with_name(f".{target.name}.new")
        write_atomic(candidate, binary, BINARY_MODE)
        reason = refusal(binary_version(candidate, self._run))
        if reason is not None:
            candidate.unlink(missing_ok=True)
            raise VersionRefused(reason)
        os.replace(candidate, target)


def _attached(tarball: Path | None) -> bytes | None:
    """The attached resource's bytes; None when nothing (or an empty file) is attached."""
    if tarball is None or not tarball.is_file() or tarball.stat().st_size == 0:
        return None
    return tarball.read_bytes()
