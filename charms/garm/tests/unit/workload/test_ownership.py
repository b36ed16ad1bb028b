"""/etc/garm and the provider directories are root:garm after an upgrade too (issue #20).

An earlier version, or a hand, may have left them (or a file in them) to `garm` or open to all:
GARM could then rewrite its own configuration. Every install repairs them, not only creation.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import unit.walks.workload as workload_walks
from doubles.workload_double import this_users_ids
from unit.walks.workload import RecordingRunner, config, tarball
from workload.config import ProxyConfig
from workload.machine import Workload

systemctl = workload_walks.systemctl

# Every test here: a fake systemctl on PATH, never the real systemd.
# A uid and gid no file of the test's would have: the `garm` of an earlier install.
OLD_OWNER = 4242
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")


def upgrade(root: Path, tmp_path: Path) -> Workload:
    """The new version's install over `root`."""
    work = Workload(
        root, runner=RecordingRunner(), fetcher=_no_network, arch="amd64", ids=this_users_ids
    )
    work.install(
        tarball(tmp_path / "garm.tgz", "garm"),
        tarball(tmp_path / "provider.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )
    return work


def _no_network(url: str, proxy: ProxyConfig) -> bytes:
    raise AssertionError(f"unexpected download of {url}")


@pytest.fixture
def served(tmp_path: Path) -> Workload:
    """A machine the previous version installed and rendered one provider on."""
    root = tmp_path / "root"
    root.mkdir()
    work = upgrade(root, tmp_path)
    work.apply(config())
    return work


def provider_directories(work: Workload) -> list[Path]:
    """/etc/garm, its providers directory and each provider's directory."""
    base = work.paths.provider_dirs
    return [work.paths.etc, base, *sorted(p for p in base.iterdir() if p.is_dir())]


def test_directories_left_open_are_closed_again(served: Workload, tmp_path: Path):
    """Arrange: /etc/garm and the provider directories left 0777 by an earlier install.

    Act: the upgrade's install. Assert: each is 0750 again.
    """
    for directory in provider_directories(served):
        directory.chmod(0o777)

    upgrade(served.paths.root, tmp_path)

    assert {str(d): stat.S_IMODE(d.stat().st_mode) for d in provider_directories(served)} == {
        str(d): 0o750 for d in provider_directories(served)
    }


@needs_root
def test_directories_left_to_garm_are_root_garm_again(served: Workload, tmp_path: Path):
    """Arrange: /etc/garm, the provider directories and the binaries' directory left to garm.

    (An earlier install's `garm` user owns them.)
    Act: the upgrade's install.
    Assert: each is owned by root and the garm group (the lookup's ids).
    """
    uid, gid = this_users_ids("garm")
    directories = [*provider_directories(served), served.paths.providers_dir]
    for directory in directories:
        os.chown(directory, OLD_OWNER, OLD_OWNER)

    upgrade(served.paths.root, tmp_path)

    owners = {str(d): (d.stat().st_uid, d.stat().st_gid) for d in directories}
    assert owners == {
        **{str(d): (uid, gid) for d in provider_directories(served)},
        str(served.paths.providers_dir): this_users_ids("root"),
    }


@needs_root
def test_a_config_file_left_to_garm_is_rewritten_as_roots(served: Workload):
    """Arrange: config.toml and a provider's files, unchanged, but owned by an earlier `garm`.

    Act: apply the same config. Assert: each is the charm's (root's) again, same content.
    """
    name = config().providers[0].name
    files = [served.paths.config, served.paths.provider_config(name)]
    contents = [path.read_bytes() for path in files]
    for path in files:
        os.chown(path, OLD_OWNER, this_users_ids("garm")[1])

    served.apply(config())

    assert [path.stat().st_uid for path in files] == [os.geteuid()] * len(files)
    assert [path.read_bytes() for path in files] == contents
