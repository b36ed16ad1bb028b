"""The workload on a temporary root with a recording command runner."""

from __future__ import annotations

import dataclasses
import io
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from doubles.workload_double import this_users_ids
from unit.doubles.fake_systemctl import FakeSystemctl, install_fake_systemctl
from workload import host
from workload.config import GarmConfig, OpenStackProvider, ProxyConfig, TlsFiles
from workload.host import CommandResult
from workload.machine import Workload

JWT_SECRET = "jwt-" + "Zq8#vT2m" * 6
PASSPHRASE = "Xk3vQ9-rT7wLp2_Zm8Yc4NbH6sJd1FgA"


class RecordingRunner:
    """Records every non-systemd command (systemctl goes to the fake on PATH)."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []
        self.timeouts: list[float] = []
        self.user_exists = True

    def __call__(
        self, argv: Sequence[str], *, timeout: float = host.COMMAND_TIMEOUT_SECONDS
    ) -> CommandResult:
        """Record the command and answer like the real one would."""
        command = list(argv)
        self.commands.append(command)
        self.timeouts.append(timeout)
        if command[:2] == ["id", "-u"]:
            return CommandResult(0 if self.user_exists else 1)
        if command[-1:] == ["--version"]:
            return CommandResult(0, "v0.2.1\n")
        return CommandResult(0)


def tarball(path: Path, member: str, content: bytes = b"\x7fELF binary") -> Path:
    """Write a .tgz holding one file."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo(member)
        info.size = len(content)
        archive.addfile(info, io.BytesIO(content))
    path.write_bytes(buffer.getvalue())
    return path


def provider(name: str = "openstack-small") -> OpenStackProvider:
    """An OpenStack provider as the configurator relation would describe it."""
    return OpenStackProvider(
        name=name,
        auth_url="https://keystone.example:5000/v3",
        username="runners",
        password='os-Secret: with "quotes"',
        project_name="ci",
        user_domain_name="Default",
        project_domain_name="Default",
        network="runners-net",
        region_name="RegionOne",
    )


def config(**changes: object) -> GarmConfig:
    """A typical GarmConfig."""
    base = GarmConfig(
        jwt_secret=JWT_SECRET,
        db_passphrase=PASSPHRASE,
        port=9997,
        log_level="info",
        providers=(provider(),),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSystemctl:
    """A fake systemctl first on PATH, for every test: none may reach the real systemd."""
    return install_fake_systemctl(tmp_path / "fake-systemctl", monkeypatch)


@pytest.fixture
def runner() -> RecordingRunner:
    """A fresh recording runner."""
    return RecordingRunner()


@pytest.fixture
def installed(tmp_path: Path, runner: RecordingRunner) -> Workload:
    """A workload rooted in a temp dir with both binaries installed from attached resources."""
    root = tmp_path / "root"
    root.mkdir()
    work = Workload(root, runner=runner, fetcher=no_network, arch="amd64", ids=this_users_ids)
    work.install(
        tarball(tmp_path / "garm.tgz", "garm"),
        tarball(tmp_path / "provider.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )
    return work


def no_network(url: str, proxy: ProxyConfig) -> bytes:
    """A fetcher for workloads that must not download: any call fails the test."""
    raise AssertionError(f"unexpected download of {url}")


TLS = TlsFiles(
    certificate_chain="-----BEGIN CERTIFICATE-----\nserver\n-----END CERTIFICATE-----\n",
    private_key="-----BEGIN RSA PRIVATE KEY-----\nkey\n-----END RSA PRIVATE KEY-----\n",
    ca="-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n",
)
