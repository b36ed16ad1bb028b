"""The machine's edges: failed commands' texts, user and group ids, the architecture name.

Written from the survivors of a mutation run of `workload.host` (docs/reference/testing.md).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

import unit.walks.workload as workload_walks
from unit.walks.workload import tarball
from workload import host
from workload.config import ProxyConfig
from workload.host import (
    TIMED_OUT,
    CommandError,
    CommandResult,
    Paths,
    WorkloadError,
    check_command,
    lookup_ids,
    run_command,
)
from workload.machine import Workload

installed = workload_walks.installed
runner = workload_walks.runner

# --- Found by mutation testing (mutmut): exact texts, ids and names ---
# (was test_host_exact.py)

# The workload fixtures of test_workload, shared rather than copied.


def test_a_command_that_fails_answers_its_status_and_both_outputs():
    """Arrange: a command writing to stdout and stderr, exiting 3. Act: run it.

    Assert: its exit status and both outputs come back as a result (never an exception).
    """
    result = run_command(["sh", "-c", "echo out; echo err >&2; exit 3"])

    assert result == CommandResult(3, "out\n", "err\n")


def test_a_command_past_its_timeout_is_killed_and_reported_as_timed_out():
    """Arrange: a command that would run for a minute. Act: run it with a 0.2 s timeout.

    Assert: it comes back within seconds as `timeout`'s exit status, no stdout, and a stderr
    saying after how long.
    """
    result = run_command(["sleep", "60"], timeout=0.2)

    assert result == CommandResult(TIMED_OUT, "", "timed out after 0.2s")


def test_a_failed_command_names_its_first_three_words_and_200_characters_of_stderr():
    """Arrange: a command of five words failing with 300 characters on stderr.

    Act: run it as one that must succeed.
    Assert: the error names the first three words (never later ones, where a value could sit)
    and the first 200 characters of stderr, stripped, word for word.
    """

    def failing(argv: Sequence[str], *, timeout: float = 300) -> CommandResult:
        return CommandResult(1, "", "  " + "e" * 199 + "X" + "y" * 100 + "\n")

    with pytest.raises(CommandError) as raised:
        check_command(failing, ["systemctl", "restart", "garm", "--value", "v"])

    assert str(raised.value) == "systemctl restart garm failed: " + "e" * 199 + "X"


def test_the_ids_of_an_existing_user_and_group():
    """Arrange: root, which every machine has. Act: look up its ids. Assert: (0, 0)."""
    assert lookup_ids("root") == (0, 0)


def test_a_missing_user_or_group_is_a_workload_error_naming_it():
    """Arrange: a name no user or group has. Act: look up its ids.

    Assert: a WorkloadError naming it, shown as such in the status.
    """
    name = f"no-such-user-{os.getpid()}"

    with pytest.raises(WorkloadError) as raised:
        lookup_ids(name)

    assert str(raised.value) == f"the {name} user or group does not exist"


@pytest.mark.parametrize(
    ("machine", "arch"),
    [("x86_64", "amd64"), ("aarch64", "arm64"), ("AArch64", "arm64"), ("S390X", "s390x")],
)
def test_the_architecture_in_the_release_assets_spelling(
    machine: str, arch: str, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: the kernel's machine name. Act: ask for the architecture.

    Assert: the name GARM's release assets use (amd64, arm64), any other name lower-cased.
    """
    monkeypatch.setattr(host.platform, "machine", lambda: machine)

    assert host.machine_arch() == arch


def test_the_layout_on_disk_is_the_one_earlier_revisions_wrote():
    """Arrange: a root. Act: ask `Paths` where each file lives.

    Assert: every path, word for word: an upgraded charm must find what the previous revision
    wrote (a kept provider's files, GARM's database, the fingerprint that spares a restart), and
    the unit file and config.toml name these paths.
    """
    paths = Paths(Path("/r"))

    found = {
        "etc": paths.etc,
        "config": paths.config,
        "environment": paths.environment,
        "postgresql_ca": paths.postgresql_ca,
        "tls_certificate": paths.tls_certificate,
        "tls_private_key": paths.tls_private_key,
        "tls_ca": paths.tls_ca,
        "metrics_token": paths.metrics_token,
        "data": paths.data,
        "sqlite_db": paths.sqlite_db,
        "providers_dir": paths.providers_dir,
        "provider_binary": paths.provider_binary,
        "garm_binary": paths.garm_binary,
        "unit_file": paths.unit_file,
        "charm_state": paths.charm_state,
        "fingerprint": paths.fingerprint,
        "backend": paths.backend,
        "installed": paths.installed,
        "provider_dirs": paths.provider_dirs,
        "provider_dir": paths.provider_dir("p"),
        "provider_config": paths.provider_config("p"),
        "provider_clouds": paths.provider_clouds("p"),
    }

    assert {name: str(path) for name, path in found.items()} == {
        "etc": "/r/etc/garm",
        "config": "/r/etc/garm/config.toml",
        "environment": "/r/etc/garm/garm.env",
        "postgresql_ca": "/r/etc/garm/postgresql-ca.pem",
        "tls_certificate": "/r/etc/garm/server.crt",
        "tls_private_key": "/r/etc/garm/server.key",
        "tls_ca": "/r/etc/garm/ca.pem",
        "metrics_token": "/r/etc/garm/metrics-token",
        "data": "/r/var/lib/garm",
        "sqlite_db": "/r/var/lib/garm/garm.db",
        "providers_dir": "/r/opt/garm/providers.d",
        "provider_binary": "/r/opt/garm/providers.d/garm-provider-openstack",
        "garm_binary": "/r/usr/local/bin/garm",
        "unit_file": "/r/etc/systemd/system/garm.service",
        "charm_state": "/r/var/lib/garm-charm",
        "fingerprint": "/r/var/lib/garm-charm/service-fingerprint",
        "backend": "/r/var/lib/garm-charm/database-backend",
        "installed": "/r/var/lib/garm-charm/installed.json",
        "provider_dirs": "/r/etc/garm/providers",
        "provider_dir": "/r/etc/garm/providers/p",
        "provider_config": "/r/etc/garm/providers/p/config.toml",
        "provider_clouds": "/r/etc/garm/providers/p/clouds.yaml",
    }


def test_a_missing_binary_is_not_installed_and_is_put_back(installed: Workload, tmp_path: Path):
    """Arrange: both binaries installed, then GARM's binary deleted by hand.

    Act: ask whether GARM is installed; install again from the same tarballs.
    Assert: not installed; after the install, the binary is back (executable, root's).
    """
    installed.paths.garm_binary.unlink()

    before = installed.is_installed()
    installed.install(
        tarball(tmp_path / "garm.tgz", "garm"),
        tarball(tmp_path / "provider.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )

    assert (before, installed.is_installed()) == (False, True)
    assert os.access(installed.paths.garm_binary, os.X_OK)


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path: Path):
    """Arrange: a file as written before. Act: a write that fails half-way (content not bytes).

    Assert: the error comes through as raised; the previous file is still there, unchanged
    (the write replaces it only once complete), and nothing else is left in its directory.
    """
    path = tmp_path / "etc" / "config.toml"
    host.write_atomic(path, b"before", 0o640)

    with pytest.raises(TypeError):
        host.write_atomic(path, "not bytes", 0o640)  # type: ignore[arg-type]

    assert (path.read_bytes(), [child.name for child in path.parent.iterdir()]) == (
        b"before",
        ["config.toml"],
    )


SHM = Path("/dev/shm")  # noqa: S108 - a tmpfs on Linux, only as another file system


@pytest.mark.skipif(
    not SHM.is_dir() or SHM.stat().st_dev == Path(tempfile.gettempdir()).stat().st_dev,
    reason="needs a directory on another file system than the temporary directory",
)
def test_a_file_on_another_file_system_than_tmp_is_written(tmp_path: Path):
    """Arrange: a directory on another file system than /tmp (/dev/shm, a tmpfs).

    Act: write a file there. Assert: it is written (the temporary file sits beside it, so the
    final rename never crosses file systems).
    """
    directory = Path(tempfile.mkdtemp(dir=SHM))
    try:
        host.write_atomic(directory / "f", b"content", 0o600)

        assert (directory / "f").read_bytes() == b"content"
    finally:
        host.remove_tree(directory)


def test_a_symlink_in_a_directorys_place_is_refused_and_its_target_left_alone(tmp_path: Path):
    """Arrange: a symlink where a provider's directory goes, pointing at a directory (0755).

    Act: ensure the directory (0750, root's). Assert: a WorkloadError naming the path, and
    the link's target keeps its mode: the charm never changes a directory through a link.
    """
    target = tmp_path / "elsewhere"
    target.mkdir()
    target.chmod(0o755)
    link = tmp_path / "providers"
    link.symlink_to(target)

    with pytest.raises(WorkloadError) as raised:
        host.ensure_directory(link, 0o750, uid=os.geteuid(), gid=os.getegid())

    assert str(raised.value) == f"{link} is not a directory (a symbolic link?)"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
