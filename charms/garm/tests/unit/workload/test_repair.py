"""Every file the charm manages, drifted on disk, is put right by the next hook.

Drift is what a person, a package or a restore leaves: the right content at the wrong mode,
owner or group, other content, a symlink in the file's place (even to the right content), or a
directory. The next `apply` (or tick install, or binary install) leaves the file as the charm
writes it: a regular root-owned file with its mode, group and content. GARM is restarted only
when what it reads through that path was not what the charm rendered (it may have started with
that: a reboot after the edit); attribute drift alone, and files GARM never reads, restart
nothing.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from doubles.workload_double import this_users_ids
from unit.doubles.fake_systemctl import FakeSystemctl, install_fake_systemctl
from unit.walks.workload import TLS, RecordingRunner, config, no_network, tarball
from workload.config import GarmConfig, PostgresConfig, ProxyConfig
from workload.machine import Workload
from workload.tick import ReconcileTick, TickPaths, TickSchedule

STRANGER = 4242  # a uid and gid no file of the charm's may have
PG_CA = "-----BEGIN CERTIFICATE-----\npg-ca\n-----END CERTIFICATE-----\n"


@pytest.fixture(autouse=True)
def systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSystemctl:
    """A fake systemctl first on PATH: no test reaches the real systemd."""
    return install_fake_systemctl(tmp_path / "fake-systemctl", monkeypatch)


@pytest.fixture
def work(tmp_path: Path) -> Workload:
    """GARM installed under a temporary root, then applied with every optional file."""
    root = tmp_path / "root"
    root.mkdir()
    workload = Workload(
        root, runner=RecordingRunner(), fetcher=no_network, arch="amd64", ids=this_users_ids
    )
    workload.install(
        tarball(tmp_path / "garm.tgz", "garm"),
        tarball(tmp_path / "provider.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )
    workload.apply(full_config())
    workload.write_metrics_token("header.claims.signature")
    return workload


def full_config() -> GarmConfig:
    """A config that renders every file: TLS, a PostgreSQL CA, a provider, a proxy."""
    postgres = PostgresConfig(
        "db.example.com", 5432, "u", "pg-pass", "garm", sslmode="verify-full", ca_cert=PG_CA
    )
    proxy = ProxyConfig(https_proxy="http://proxy.example:3128", no_proxy="10.0.0.0/8")
    return config(tls=TLS, postgres=postgres, proxy=proxy)


@dataclasses.dataclass(frozen=True)
class Managed:
    """One file the charm writes: where, its mode, group garm or not, read by GARM or not.

    "Read by GARM" includes systemd reading the unit and environment to start GARM.
    """

    name: str
    path: Callable[[Workload], Path]
    mode: int
    garm_group: bool
    garm_reads: bool


RENDERED = [
    Managed("config.toml", lambda w: w.paths.config, 0o640, True, True),
    Managed("garm.env", lambda w: w.paths.environment, 0o600, False, True),
    Managed("garm.service", lambda w: w.paths.unit_file, 0o644, False, True),
    Managed("postgresql-ca.pem", lambda w: w.paths.postgresql_ca, 0o640, True, True),
    Managed("server.crt", lambda w: w.paths.tls_certificate, 0o640, True, True),
    Managed("server.key", lambda w: w.paths.tls_private_key, 0o640, True, True),
    Managed("ca.pem", lambda w: w.paths.tls_ca, 0o644, False, False),
    Managed(
        "provider config.toml",
        lambda w: w.paths.provider_config("openstack-small"),
        0o640,
        True,
        True,
    ),
    Managed(
        "clouds.yaml", lambda w: w.paths.provider_clouds("openstack-small"), 0o640, True, True
    ),
]


def drift_mode(path: Path) -> None:
    """World-writable."""
    path.chmod(0o666)


def drift_owner(path: Path) -> None:
    """Owned by another user (who could then rewrite it)."""
    os.chown(path, STRANGER, -1)


def drift_group(path: Path) -> None:
    """In another group."""
    os.chown(path, -1, STRANGER)


def drift_content(path: Path) -> None:
    """Edited by hand, attributes kept."""
    with path.open("ab") as file:
        file.write(b"\n# edited by hand\n")


def drift_symlink_to_same(path: Path) -> None:
    """A symlink to a copy elsewhere with the same content (a writer could change it)."""
    elsewhere = path.parent.parent / f"elsewhere-{path.name}"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)


def drift_symlink_to_other(path: Path) -> None:
    """A symlink to a file with other content."""
    elsewhere = path.parent.parent / f"other-{path.name}"
    elsewhere.write_bytes(b"planted\n")
    path.unlink()
    path.symlink_to(elsewhere)


def drift_directory(path: Path) -> None:
    """A directory in the file's place."""
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("x")


# drift -> whether what a reader sees through the path changed (GARM may run with it)
DRIFTS: list[tuple[Callable[[Path], None], bool]] = [
    (drift_mode, False),
    (drift_owner, False),
    (drift_group, False),
    (drift_content, True),
    (drift_symlink_to_same, False),
    (drift_symlink_to_other, True),
    (drift_directory, True),
]


def assert_as_written(path: Path, content: bytes, mode: int, gid: int | None) -> None:
    """A regular root-owned file with `content`, `mode` and (unless None) group `gid`."""
    status = os.lstat(path)
    assert stat.S_ISREG(status.st_mode), f"{path} is not a regular file"
    assert status.st_uid == os.geteuid(), f"{path} owned by {status.st_uid}"
    assert stat.S_IMODE(status.st_mode) == mode, f"{path} at {stat.S_IMODE(status.st_mode):o}"
    if gid is not None:
        assert status.st_gid == gid, f"{path} in group {status.st_gid}"
    assert path.read_bytes() == content


@pytest.mark.parametrize(
    ("drift", "content_changed"), DRIFTS, ids=lambda d: getattr(d, "__name__", "")
)
@pytest.mark.parametrize("managed", RENDERED, ids=lambda m: m.name)
def test_a_drifted_rendered_file_is_repaired_by_the_next_apply(
    work: Workload,
    systemctl: FakeSystemctl,
    managed: Managed,
    drift: Callable[[Path], None],
    content_changed: bool,
):
    """Arrange: GARM applied with every file; one file drifts. Act: apply the same config.

    Assert: the file is as the charm writes it; GARM restarted once exactly when it reads the
    file and what it would read there had changed, else not at all.
    """
    path = managed.path(work)
    wanted = path.read_bytes()
    restarts = systemctl.restarts()
    drift(path)

    work.apply(full_config())

    gid = this_users_ids("garm")[1] if managed.garm_group else None
    assert_as_written(path, wanted, managed.mode, gid)
    expected = 1 if (managed.garm_reads and content_changed) else 0
    assert systemctl.restarts() - restarts == expected


@pytest.mark.parametrize(
    "drift",
    [drift_mode, drift_owner, drift_symlink_to_same, drift_symlink_to_other, drift_directory],
    ids=lambda d: d.__name__,
)
def test_a_drifted_metrics_token_counts_as_none_and_is_rewritten(
    work: Workload, systemctl: FakeSystemctl, drift: Callable[[Path], None]
):
    """Arrange: a metrics token written; its file drifts. Act: read it; write the new one.

    Assert: a drifted file reads as no token (so the charm fetches and writes one), the write
    leaves it root-only 0600; GARM never restarted (it never reads the token). An edited token
    fails `token_is_current` instead; another group on a 0600 file opens nothing.
    """
    path = work.paths.metrics_token
    restarts = systemctl.restarts()
    drift(path)

    seen = work.metrics_token()
    work.write_metrics_token("header.claims.fresh")
    work.apply(full_config())

    assert seen == ""
    assert_as_written(path, b"header.claims.fresh", 0o600, None)
    assert systemctl.restarts() == restarts


BINARIES = [
    pytest.param(lambda w: w.paths.garm_binary, id="garm"),
    pytest.param(lambda w: w.paths.provider_binary, id="garm-provider-openstack"),
]


@pytest.mark.parametrize(
    "drift",
    [drift_mode, drift_owner, drift_symlink_to_same, drift_directory],
    ids=lambda d: d.__name__,
)
@pytest.mark.parametrize("binary", BINARIES)
def test_a_drifted_binary_is_installed_again(
    work: Workload,
    tmp_path: Path,
    binary: Callable[[Workload], Path],
    drift: Callable[[Path], None],
):
    """Arrange: both binaries installed; one drifts. Act: install again (every hook does).

    Assert: a regular root-owned 0755 file with the tarball's binary again.
    """
    path = binary(work)
    wanted = path.read_bytes()
    drift(path)

    assert not work.is_installed()
    work.install(
        tarball(tmp_path / "garm.tgz", "garm"),
        tarball(tmp_path / "provider.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )

    assert_as_written(path, wanted, 0o755, None)
    assert work.is_installed()


def test_drifted_directories_are_put_back_by_install(work: Workload, tmp_path: Path):
    """Arrange: GARM's config and data directories loosened and given away. Act: install.

    Assert: root:garm 0750 (config), garm:garm 0750 (data), root-only 0700 (charm state).
    """
    paths = work.paths
    for directory in (paths.etc, paths.data, paths.charm_state):
        directory.chmod(0o777)
        os.chown(directory, STRANGER, STRANGER)

    work.install(
        tarball(tmp_path / "garm.tgz", "garm"),
        tarball(tmp_path / "provider.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )

    uid, gid = this_users_ids("garm")
    expected = {
        paths.etc: (0o750, os.geteuid(), gid),
        paths.data: (0o750, uid, gid),
        paths.charm_state: (0o700, os.geteuid(), None),
    }
    for directory, (mode, owner, group) in expected.items():
        status = os.lstat(directory)
        assert stat.S_IMODE(status.st_mode) == mode, directory
        assert status.st_uid == owner, directory
        if group is not None:
            assert status.st_gid == group, directory


def test_a_drifted_provider_directory_is_put_back_by_the_next_apply(
    work: Workload, systemctl: FakeSystemctl
):
    """Arrange: a provider's directory loosened and given away. Act: apply the same config.

    Assert: root's again, in the garm group, 0750; GARM not restarted (its files are intact).
    """
    directory = work.paths.provider_dir("openstack-small")
    directory.chmod(0o777)
    os.chown(directory, STRANGER, STRANGER)
    restarts = systemctl.restarts()

    work.apply(full_config())

    status = os.lstat(directory)
    assert stat.S_IMODE(status.st_mode) == 0o750
    assert (status.st_uid, status.st_gid) == (os.geteuid(), this_users_ids("garm")[1])
    assert systemctl.restarts() == restarts


@pytest.fixture
def tick(tmp_path: Path) -> tuple[ReconcileTick, TickSchedule]:
    """The leader's reconcile timer, installed under a temporary root."""
    timer = ReconcileTick(TickPaths(tmp_path / "tick-root"))
    schedule = TickSchedule("garm/0", Path("/var/lib/juju/charm"), datetime.timedelta(minutes=5))
    timer.install(schedule)
    return timer, schedule


@pytest.mark.parametrize(
    ("drift", "content_changed"), DRIFTS, ids=lambda d: getattr(d, "__name__", "")
)
@pytest.mark.parametrize("unit", ["service_file", "timer_file"])
def test_a_drifted_tick_unit_is_repaired_by_the_next_install(
    tick: tuple[ReconcileTick, TickSchedule],
    systemctl: FakeSystemctl,
    unit: str,
    drift: Callable[[Path], None],
    content_changed: bool,
):
    """Arrange: the timer installed; one of its unit files drifts. Act: install again.

    Assert: the file is root's 0644 with the rendered unit; systemd reloaded only when the
    unit's content had changed; GARM never restarted.
    """
    timer, schedule = tick
    path: Path = getattr(timer.paths, unit)
    wanted = path.read_bytes()
    reloads = daemon_reloads(systemctl)
    drift(path)

    timer.install(schedule)

    assert_as_written(path, wanted, 0o644, None)
    assert daemon_reloads(systemctl) - reloads == (1 if content_changed else 0)
    assert garm_restarts(systemctl) == 0


def daemon_reloads(systemctl: FakeSystemctl) -> int:
    """How many times systemd was asked to reload its units."""
    return sum(1 for call in systemctl.calls() if "daemon-reload" in call)


def garm_restarts(systemctl: FakeSystemctl) -> int:
    """How many times GARM's own service (not the tick timer) was restarted."""
    return sum(
        1 for call in systemctl.calls() if call[:1] == ["restart"] and "tick" not in " ".join(call)
    )
