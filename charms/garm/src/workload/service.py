"""GARM's systemd service: restart only when what it runs with changed; stop, disable, remove.

systemd is driven through `workload.systemctl` (charmlibs-systemd, which runs ``systemctl`` from
PATH; tests put a fake one first).

The service is restarted only when what it would run with differs from what it was last
started with: a fingerprint of the rendered files, the installed binaries and the environment
is written (0600) at each (re)start and compared on the next pass. Comparing with the files
on disk would miss a restart that failed half-way, or a file someone edited by hand.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path

from workload import systemctl
from workload.config import ProxyConfig
from workload.host import SERVICE_NAME, CommandError, Paths, read_text, write_atomic
from workload.rendering import RenderedFile

logger = logging.getLogger(__name__)


def restart_if_changed(
    paths: Paths,
    files: Mapping[Path, RenderedFile],
    proxy: ProxyConfig,
    installed: Mapping[str, str],
    *,
    repaired: bool = False,
) -> bool:
    """(Re)start GARM when its files, binaries or environment differ from its last start.

    Args:
        paths: where the fingerprint is kept.
        files: what the service runs with.
        proxy: the model's proxy.
        installed: the installed binaries' tarball digests.
        repaired: a file the service reads had other content on disk (now repaired); GARM
            may have started with it, so it starts again.

    Returns:
        True when the service was started or restarted in this call.

    Raises:
        CommandError: systemd refused.
    """
    wanted = fingerprint(files, proxy, installed)
    if read_text(paths.fingerprint) == wanted and is_running() and not repaired:
        return False
    _systemd("daemon-reload")
    _systemd("enable", SERVICE_NAME)
    _systemd("restart", SERVICE_NAME)
    write_atomic(paths.fingerprint, wanted.encode(), 0o600)
    logger.info("GARM (re)started: its configuration or binaries changed")
    return True


def restart() -> None:
    """Restart GARM as it runs (the same files and binaries), e.g. so its workers start again.

    Raises:
        CommandError: systemd refused.
    """
    _systemd("restart", SERVICE_NAME)
    logger.info("GARM restarted")


def fingerprint(
    files: Mapping[Path, RenderedFile], proxy: ProxyConfig, installed: Mapping[str, str]
) -> str:
    """What the service runs with, as one digest: files, binaries' tarballs, the proxy."""
    digest = hashlib.sha256()
    for path in sorted(files):
        content, mode, _ = files[path]
        digest.update(f"{path}\0{mode:o}\0".encode())
        digest.update(hashlib.sha256(content).digest())
    digest.update(json.dumps(dict(installed), sort_keys=True).encode())
    digest.update(json.dumps(dataclasses.asdict(proxy), sort_keys=True).encode())
    return digest.hexdigest()


def is_running() -> bool:
    """Whether systemd reports GARM active."""
    return systemctl.running(SERVICE_NAME)


def stop(paths: Paths) -> bool:
    """Stop and disable GARM and forget how it was started; best effort, a failure is logged.

    Disabled as well as stopped: a standby unit must not start a second GARM when its machine
    reboots. The next `restart_if_changed` enables it again.

    Returns:
        Whether GARM is seen stopped afterwards (systemd no longer reports it active): only
        then may a former leader tell the new one it stopped (ADR 0019).
    """
    if paths.unit_file.exists():
        _systemd_best_effort("disable", "--now", SERVICE_NAME)
    paths.fingerprint.unlink(missing_ok=True)
    return not is_running()


def remove(paths: Paths) -> None:
    """Stop and disable GARM and remove its unit file; best effort, a failure is logged."""
    if paths.unit_file.exists():
        _systemd_best_effort("disable", "--now", SERVICE_NAME)
        paths.unit_file.unlink()
        _systemd_best_effort("daemon-reload")
    paths.fingerprint.unlink(missing_ok=True)


def _systemd(verb: systemctl.Verb, *args: str) -> None:
    """Run one systemctl command; its failure becomes a short CommandError."""
    systemctl.call(verb, *args, error=CommandError, journal=SERVICE_NAME)


def _systemd_best_effort(verb: systemctl.Verb, *args: str) -> None:
    try:
        _systemd(verb, *args)
    except CommandError as error:
        logger.warning("%s", error)
