"""Which files GARM's group may read, with a garm group that is not the test's own.

The other workload tests map `garm` to the test's own user and group, so a file put in the
garm group looks the same as one left alone. Here the garm group is a second group id (any, as
root; else one the user is in), so a file given to the wrong group, or left in the test's own,
shows. Written from the survivors of a mutation run of `workload.rendering`
(docs/reference/testing.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from unit.walks.workload import TLS, RecordingRunner, config, provider, tarball
from workload.config import PostgresConfig, ProxyConfig
from workload.machine import Workload


def _second_group() -> int | None:
    """A group other than the test's own it may give files: any as root, else one it is in."""
    if os.geteuid() == 0:
        return 1 if os.getgid() != 1 else 2  # `daemon` or `bin` on Debian and Ubuntu
    others = sorted(set(os.getgroups()) - {os.getgid()})
    return others[0] if others else None


SECOND_GROUP = _second_group()
GARM_GID = SECOND_GROUP if SECOND_GROUP is not None else -1
PROVIDER = "openstack-small"
POSTGRES = PostgresConfig("10.1.2.3", 5432, "relation_id_7", "pg-pass", "garm", ca_cert="CA\n")

pytestmark = pytest.mark.skipif(
    SECOND_GROUP is None, reason="needs root, or a user in a second group"
)


def garm_ids(name: str) -> tuple[int, int]:
    """The test's own uid, and a garm group that is not the test's group."""
    return os.getuid(), GARM_GID


@pytest.fixture
def workload(tmp_path: Path) -> Workload:
    """A workload whose garm group is `GARM_GID`, both binaries installed."""
    root = tmp_path / "root"
    root.mkdir()
    runner = RecordingRunner()
    work = Workload(root, runner=runner, fetcher=_no_network, arch="amd64", ids=garm_ids)
    work.install(
        tarball(tmp_path / "garm.tgz", "garm"),
        tarball(tmp_path / "provider.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )
    return work


def _no_network(url: str, proxy: ProxyConfig) -> bytes:
    raise AssertionError(f"unexpected download of {url}")


def group(path: Path) -> int:
    """A file's group id, not following a link."""
    return path.lstat().st_gid


def mode(path: Path) -> int:
    """A file's permission bits."""
    return stat.S_IMODE(path.lstat().st_mode)


def test_only_what_garm_reads_is_in_the_garm_group(workload: Workload):
    """Arrange: a garm group other than root's. Act: apply with TLS, a PostgreSQL CA, a provider.

    Assert: config.toml, the PostgreSQL CA, the certificate, the key and the provider's files
    are in the garm group, and the provider's directory too (0750); the EnvironmentFile, the
    unit file and the public CA stay in root's group (GARM never reads them: systemd does, or
    clients on the machine).
    """
    paths = workload.paths

    workload.apply(config(tls=TLS, postgres=POSTGRES))

    read_by_garm = (
        paths.config,
        paths.postgresql_ca,
        paths.tls_certificate,
        paths.tls_private_key,
        paths.provider_config(PROVIDER),
        paths.provider_clouds(PROVIDER),
    )
    assert {path.name: group(path) for path in read_by_garm} == {
        path.name: GARM_GID for path in read_by_garm
    }
    not_read_by_garm = (paths.environment, paths.unit_file, paths.tls_ca)
    assert [group(path) for path in not_read_by_garm] == [os.getgid()] * 3
    assert (group(paths.provider_dir(PROVIDER)), mode(paths.provider_dir(PROVIDER))) == (
        GARM_GID,
        0o750,
    )


def test_a_file_moved_out_of_the_garm_group_is_put_back(workload: Workload):
    """Arrange: applied once; then config.toml and a provider file moved to root's group.

    Act: apply the same config again.
    Assert: both are back in the garm group (GARM could not read them otherwise), their content
    unchanged.
    """
    paths = workload.paths
    workload.apply(config())
    drifted = (paths.config, paths.provider_clouds(PROVIDER))
    contents = [path.read_bytes() for path in drifted]
    for path in drifted:
        os.chown(path, -1, os.getgid())

    workload.apply(config())

    assert [group(path) for path in drifted] == [GARM_GID, GARM_GID]
    assert [path.read_bytes() for path in drifted] == contents


def test_directories_of_files_garm_does_not_read_are_left_alone(workload: Workload):
    """Arrange: applied once with TLS; the unit file's directory set to 0755 in root's group.

    Act: apply again.
    Assert: that directory keeps 0755 and root's group (only a provider's directory is made
    0750 in the garm group); /etc/garm is unchanged by the apply.
    """
    paths = workload.paths
    workload.apply(config(tls=TLS))
    paths.unit_file.parent.chmod(0o755)
    etc_before = (group(paths.etc), mode(paths.etc))

    workload.apply(config(tls=TLS))

    assert (group(paths.unit_file.parent), mode(paths.unit_file.parent)) == (os.getgid(), 0o755)
    assert (group(paths.etc), mode(paths.etc)) == etc_before


def test_a_kept_providers_files_stay_in_the_garm_group(workload: Workload):
    """Arrange: provider `z` rendered, then its files and directory moved to root's group.

    Act: apply with `z` kept (its configurator is gone).
    Assert: `z`'s files and directory are back in the garm group, content unchanged: GARM
    still runs `z`'s scale sets and must read them.
    """
    paths = workload.paths
    workload.apply(config(providers=(provider("z"),)))
    files = (paths.provider_config("z"), paths.provider_clouds("z"))
    contents = [path.read_bytes() for path in files]
    for path in (*files, paths.provider_dir("z")):
        os.chown(path, -1, os.getgid())

    workload.apply(config(providers=(provider("a"),), kept_providers=("z",)))

    assert [group(path) for path in (*files, paths.provider_dir("z"))] == [GARM_GID] * 3
    assert [path.read_bytes() for path in files] == contents


def test_files_as_written_are_not_written_again(workload: Workload):
    """Arrange: applied once with TLS and a PostgreSQL CA. Act: apply the same config again.

    Assert: every file is the very file the first apply wrote (same inode): a file in its
    mode and group is left alone, not replaced at every hook.
    """
    wanted = config(tls=TLS, postgres=POSTGRES)
    workload.apply(wanted)
    files = list(workload.render_files(wanted))
    inodes = [path.lstat().st_ino for path in files]

    workload.apply(wanted)

    assert [path.lstat().st_ino for path in files] == inodes


def test_a_file_whose_mode_drifted_is_put_back(workload: Workload):
    """Arrange: applied once; then a provider's config.toml made world-readable (0644).

    Act: apply the same config again.
    Assert: it is 0640 again, in the garm group, content unchanged.
    """
    path = workload.paths.provider_config(PROVIDER)
    workload.apply(config())
    content = path.read_bytes()
    path.chmod(0o644)

    workload.apply(config())

    assert (mode(path), group(path), path.read_bytes()) == (0o640, GARM_GID, content)
