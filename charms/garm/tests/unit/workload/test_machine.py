"""workload against a temporary root, a recording command runner and a fake systemctl."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import re
import shutil
import stat
import subprocess
import time
import tomllib
from collections.abc import Sequence
from ipaddress import ip_address
from pathlib import Path

import pytest
import yaml

import unit.walks.workload as workload_walks
from doubles.workload_double import this_users_ids
from unit.doubles.fake_systemctl import FAILURE_OUTPUT, FakeSystemctl
from unit.walks.workload import (
    JWT_SECRET,
    TLS,
    RecordingRunner,
    config,
    no_network,
    provider,
    tarball,
)
from workload import host, install, releases
from workload import version as garm_version
from workload.config import PostgresConfig, ProxyConfig
from workload.host import CommandError, CommandResult, ResourceError, WorkloadError
from workload.machine import Workload
from workload.releases import Release

installed = workload_walks.installed
runner = workload_walks.runner
systemctl = workload_walks.systemctl


def mode(path: Path) -> int:
    """A file's permission bits."""
    return stat.S_IMODE(path.stat().st_mode)


# Install ------------------------------------------------------------------------------------


def test_install_from_resources_creates_layout(installed: Workload, runner: RecordingRunner):
    """Arrange: attached tarballs, user already present. Act: install.

    Assert: binaries executable in place; /etc/garm root:garm 0750, the data directory
    garm:garm 0750 (the lookup's ids), the charm's own state root-only.
    """
    paths = installed.paths
    assert paths.garm_binary.read_bytes() == b"\x7fELF binary"
    assert mode(paths.garm_binary) == 0o755
    assert mode(paths.provider_binary) == 0o755
    assert mode(paths.etc) == 0o750
    assert mode(paths.data) == 0o750
    assert mode(paths.charm_state) == 0o700
    uid, gid = this_users_ids("garm")
    assert (paths.etc.stat().st_gid, paths.data.stat().st_uid) == (gid, uid)
    assert not any(command[0] in ("useradd", "chown") for command in runner.commands)


def test_a_refused_garm_binary_never_takes_the_installed_ones_place(
    installed: Workload, runner: RecordingRunner, tmp_path: Path
):
    """Arrange: GARM installed; a new garm-binary is attached, which the charm refuses.

    Act: install with a refusal that names the version it was asked about.

    Assert: VersionRefused with the charm's reason; the installed binary and its recorded
    tarball are as before (systemd would restart that one); no candidate file is left; the
    version was asked of the new binary, not the installed one; without a refusal it goes in.
    """
    paths = installed.paths
    before, recorded = paths.garm_binary.read_bytes(), paths.installed.read_text()
    new = tarball(tmp_path / "older.tgz", "garm", b"\x7fELF older binary")
    provider_tgz = tmp_path / "provider.tgz"
    asked: list[str] = []

    def refuse(version: str) -> str | None:
        asked.append(version)
        return f"downgrade refused: GARM {version} is older"

    with pytest.raises(host.VersionRefused, match=r"downgrade refused: GARM v0\.2\.1"):
        installed.install(new, provider_tgz, ProxyConfig(), refusal=refuse)
    kept = (paths.garm_binary.read_bytes(), paths.installed.read_text())
    candidates = list(paths.garm_binary.parent.glob(".garm*"))
    version_asked_of = runner.commands[-1][0]
    installed.install(new, provider_tgz, ProxyConfig(), refusal=lambda version: None)

    assert kept == (before, recorded)
    assert candidates == []
    assert asked == ["v0.2.1"]
    assert version_asked_of == str(paths.garm_binary.with_name(".garm.new"))
    assert paths.garm_binary.read_bytes() == b"\x7fELF older binary"


def test_install_creates_system_user_when_missing(tmp_path: Path, runner: RecordingRunner):
    """Arrange: no garm user. Act: install. Assert: a system user without a login shell."""
    runner.user_exists = False
    work = Workload(tmp_path, runner=runner, fetcher=no_network, arch="amd64", ids=this_users_ids)

    work.install(
        tarball(tmp_path / "g.tgz", "garm"),
        tarball(tmp_path / "p.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )

    useradd = next(command for command in runner.commands if command[0] == "useradd")
    assert "--system" in useradd
    assert useradd[-1] == "garm"
    assert "/usr/sbin/nologin" in useradd


def test_tarball_without_binary_names_resource(tmp_path: Path, runner: RecordingRunner):
    """Arrange: a garm-binary tarball holding something else. Act: install.

    Assert: ResourceError naming the resource and the missing executable.
    """
    work = Workload(tmp_path, runner=runner, fetcher=no_network, arch="amd64", ids=this_users_ids)

    with pytest.raises(ResourceError) as caught:
        work.install(tarball(tmp_path / "g.tgz", "README.md"), None, ProxyConfig())

    assert caught.value.resource == "garm-binary"
    assert "'garm'" in str(caught.value)


def test_no_resource_and_no_pinned_hash_refuses_download(tmp_path: Path, runner: RecordingRunner):
    """Arrange: GARM attached; the provider not attached and no hash pinned for it.

    Act: install. Assert: ResourceError naming the provider resource; nothing was downloaded.
    """
    work = Workload(tmp_path, runner=runner, fetcher=no_network, arch="amd64", ids=this_users_ids)

    with pytest.raises(ResourceError, match="attach the release tarball") as caught:
        work.install(tarball(tmp_path / "g.tgz", "garm"), None, ProxyConfig())

    assert caught.value.resource == "garm-provider-openstack"


def test_failed_download_names_the_resource(tmp_path: Path, runner: RecordingRunner):
    """Arrange: nothing attached; the pinned GARM release cannot be fetched (no route).

    Act: install. Assert: ResourceError naming garm-binary and asking to attach it.
    """

    def unreachable(url: str, proxy: ProxyConfig) -> bytes:
        raise OSError("Network is unreachable")

    work = Workload(tmp_path, runner=runner, fetcher=unreachable, arch="amd64", ids=this_users_ids)

    with pytest.raises(ResourceError, match=r"download of v0\.2\.1 failed .*attach it") as caught:
        work.install(None, None, ProxyConfig())

    assert caught.value.resource == "garm-binary"
    assert not work.paths.garm_binary.exists()


@pytest.mark.parametrize("release", [releases.GARM_RELEASE, releases.PROVIDER_RELEASE])
def test_pinned_hashes_are_sha256_or_absent(release: Release):
    """Arrange: the pinned release table. Act: read every hash.

    Assert: each is empty (not pinned) or 64 lowercase hex digits, for both architectures.
    """
    assert set(release.sha256) == {"amd64", "arm64"}
    for digest in release.sha256.values():
        assert digest == "" or re.fullmatch(r"[0-9a-f]{64}", digest)


def test_download_verifies_pinned_sha256_through_proxy(
    tmp_path: Path, runner: RecordingRunner, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: pinned hashes for both releases, a fetcher serving the tarballs.

    Act: install without resources. Assert: both fetched through the model's proxy, installed.
    """
    garm = tarball(tmp_path / "g.tgz", "garm").read_bytes()
    prov = tarball(tmp_path / "p.tgz", "garm-provider-openstack").read_bytes()
    _pin(monkeypatch, "GARM_RELEASE", garm)
    _pin(monkeypatch, "PROVIDER_RELEASE", prov)
    fetched: list[tuple[str, ProxyConfig]] = []

    def fetcher(url: str, proxy: ProxyConfig) -> bytes:
        fetched.append((url, proxy))
        return garm if "/garm/" in url else prov

    proxy = ProxyConfig(https_proxy="http://squid.internal:3128")
    work = Workload(
        tmp_path / "root", runner=runner, fetcher=fetcher, arch="amd64", ids=this_users_ids
    )

    work.install(None, None, proxy)

    assert [url for url, _ in fetched] == [
        "https://github.com/cloudbase/garm/releases/download/v0.2.1/garm-linux-amd64.tgz",
        "https://github.com/cloudbase/garm-provider-openstack/releases/download/v0.1.2/"
        "garm-provider-openstack-linux-amd64.tgz",
    ]
    assert all(used == proxy for _, used in fetched)
    assert work.is_installed()


def test_download_with_wrong_sha256_is_refused(
    tmp_path: Path, runner: RecordingRunner, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: a pinned hash that the served tarball does not match. Act: install.

    Assert: ResourceError naming the resource and both hashes; nothing installed.
    """
    _pin(monkeypatch, "GARM_RELEASE", b"the real release")
    served = tarball(tmp_path / "g.tgz", "garm").read_bytes()
    work = Workload(
        tmp_path / "root",
        runner=runner,
        fetcher=lambda *_: served,
        arch="amd64",
        ids=this_users_ids,
    )

    with pytest.raises(ResourceError, match="expected") as caught:
        work.install(None, None, ProxyConfig())

    assert caught.value.resource == "garm-binary"
    assert not work.paths.garm_binary.exists()


def _pin(monkeypatch: pytest.MonkeyPatch, name: str, content: bytes) -> None:
    release: Release = getattr(releases, name)
    pinned = Release(
        resource=release.resource,
        version=release.version,
        url=release.url,
        binary=release.binary,
        sha256={"amd64": hashlib.sha256(content).hexdigest()},
    )
    monkeypatch.setattr(install, name, pinned)


# Render -------------------------------------------------------------------------------------


def test_rendered_config_has_every_key_garm_requires(installed: Workload):
    """Arrange: an installed workload. Act: apply a config with one provider and a proxy.

    Assert: config.toml parses and carries what GARM validates at start (garm-behaviour B6).
    """
    installed.apply(
        config(
            proxy=ProxyConfig("http://p:3128", "http://p:3128", "10.0.0.0/8"),
            garm_version="v0.2.1-96-gafda4e76",
        )
    )

    document = tomllib.loads(installed.paths.config.read_text())

    assert document["jwt_auth"] == {"secret": JWT_SECRET, "time_to_live": "8760h"}
    assert ip_address(document["apiserver"]["bind"]) is not None
    assert document["apiserver"]["port"] == 9997
    assert len(document["database"]["passphrase"]) == 32
    assert document["database"]["backend"] == "sqlite3"
    db_file = Path(document["database"]["sqlite3"]["db_file"])
    assert db_file.is_absolute()
    assert db_file.parent.is_dir()
    assert document["logging"]["log_level"] == "info"
    # /metrics answers only a metrics token (garm-behaviour B28).
    assert document["metrics"] == {"enable": True, "disable_auth": False}
    assert document["proxy"] == {
        "http_proxy": "http://p:3128",
        "https_proxy": "http://p:3128",
        "no_proxy": "10.0.0.0/8,127.0.0.1,localhost,::1,keystone.example",
    }
    (section,) = document["provider"]
    assert section["name"] == "openstack-small"
    assert section["provider_type"] == "external"
    external = section["external"]
    assert "interface_version" not in external
    assert Path(external["provider_executable"]).is_absolute()
    assert Path(external["provider_executable"]).is_file()
    assert Path(external["config_file"]).is_file()
    assert {"HTTP_PROXY", "https_proxy", "NO_PROXY"} <= set(external["environment_variables"])


def test_proxy_reaches_garm_through_its_environment(installed: Workload):
    """Arrange: a model proxy. Act: apply for v0.2.1.

    Assert: the unit reads a 0600 environment file carrying the proxy in both spellings, with
    loopback and Keystone exempt; config.toml has no [proxy] section, which v0.2.1 cannot read.
    """
    proxy = ProxyConfig("http://p:3128", "http://user:pw@p:3128", "10.0.0.0/8")

    installed.apply(config(proxy=proxy, garm_version="v0.2.1"))

    environment = installed.paths.environment
    assert f"EnvironmentFile={environment}" in installed.paths.unit_file.read_text()
    assert "pw@" not in installed.paths.unit_file.read_text()
    assert environment.stat().st_mode & 0o777 == 0o600
    variables = dict(
        line.split("=", 1) for line in environment.read_text().splitlines() if "=" in line
    )
    no_proxy = '"10.0.0.0/8,127.0.0.1,localhost,::1,keystone.example"'
    assert variables == {
        "HTTP_PROXY": '"http://p:3128"',
        "http_proxy": '"http://p:3128"',
        "HTTPS_PROXY": '"http://user:pw@p:3128"',
        "https_proxy": '"http://user:pw@p:3128"',
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }
    assert "proxy" not in tomllib.loads(installed.paths.config.read_text())


def test_no_proxy_leaves_the_environment_empty(installed: Workload):
    """Arrange: no model proxy. Act: apply. Assert: the environment file sets nothing."""
    installed.apply(config(garm_version="v0.2.1-96-gafda4e76"))

    lines = installed.paths.environment.read_text().splitlines()

    assert [line for line in lines if not line.startswith("#")] == []
    assert "proxy" not in tomllib.loads(installed.paths.config.read_text())


def test_a_control_character_in_the_proxy_is_refused(
    installed: Workload, systemctl: FakeSystemctl
):
    """Arrange: a proxy value with a newline (it could add a variable). Act: apply.

    Assert: a WorkloadError naming the setting; GARM is not started.
    """
    with pytest.raises(WorkloadError, match="HTTPS_PROXY"):
        installed.apply(config(proxy=ProxyConfig(https_proxy="http://p:3128\nLD_PRELOAD=x")))

    assert systemctl.restarts() == 0


def test_rendered_postgresql_section(installed: Workload):
    """Arrange: a PostgreSQL backend. Act: apply. Assert: postgresql section, no sqlite."""
    postgres = PostgresConfig("10.1.2.3", 5432, "relation_id_7", "pg-pass", "garm")

    installed.apply(config(postgres=postgres))

    database = tomllib.loads(installed.paths.config.read_text())["database"]
    assert database["backend"] == "postgresql"
    assert "sqlite3" not in database
    assert database["postgresql"] == {
        "hostname": "10.1.2.3",
        "port": 5432,
        "username": "relation_id_7",
        "password": "pg-pass",
        "database": "garm",
        "sslmode": "prefer",
    }
    assert not installed.paths.postgresql_ca.exists()
    assert "PGSSLROOTCERT" not in installed.paths.environment.read_text()


def test_postgresql_ca_is_written_and_named_in_the_environment(installed: Workload):
    """Arrange: a PostgreSQL provider serving TLS with its CA. Act: apply.

    Assert: sslmode verify-full in config.toml; the CA in its own private file, named by
    PGSSLROOTCERT in the service's environment (GARM's config has no key for it).
    """
    ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    postgres = PostgresConfig(
        "db.example.com", 5432, "u", "pg-pass", "garm", sslmode="verify-full", ca_cert=ca
    )

    installed.apply(config(postgres=postgres))

    database = tomllib.loads(installed.paths.config.read_text())["database"]
    assert database["postgresql"]["sslmode"] == "verify-full"
    assert installed.paths.postgresql_ca.read_text() == ca
    assert mode(installed.paths.postgresql_ca) == 0o640
    assert (
        f'PGSSLROOTCERT="{installed.paths.postgresql_ca}"'
        in installed.paths.environment.read_text().splitlines()
    )


def test_secret_files_are_read_only_for_garm(installed: Workload):
    """Arrange: an installed workload. Act: apply.

    Assert: what GARM reads is 0640 in the garm group (root owns it, GARM cannot change it),
    provider directories 0750; the environment file and the fingerprint are root-only 0600.
    """
    installed.apply(config())

    paths = installed.paths
    _, gid = this_users_ids("garm")
    for path in (
        paths.config,
        paths.provider_config("openstack-small"),
        paths.provider_clouds("openstack-small"),
    ):
        assert mode(path) == 0o640, path
        assert path.stat().st_gid == gid, path
    assert mode(paths.provider_dir("openstack-small")) == 0o750
    assert mode(paths.environment) == 0o600
    assert mode(paths.fingerprint) == 0o600
    assert mode(paths.unit_file) == 0o644


def test_tls_serves_https_with_the_files_it_writes(installed: Workload):
    """Arrange: an installed workload. Act: apply with a certificate.

    Assert: config.toml turns on TLS with the certificate and key paths (garm-behaviour B27);
    the chain and key are 0640 in the garm group, the CA world-readable for the scrape.
    """
    installed.apply(config(tls=TLS))

    paths = installed.paths
    document = tomllib.loads(paths.config.read_text())
    assert document["apiserver"]["use_tls"] is True
    assert document["apiserver"]["tls"] == {
        "certificate": str(paths.tls_certificate),
        "key": str(paths.tls_private_key),
    }
    _, gid = this_users_ids("garm")
    assert paths.tls_certificate.read_text() == TLS.certificate_chain
    assert paths.tls_private_key.read_text() == TLS.private_key
    assert paths.tls_ca.read_text() == TLS.ca
    for path in (paths.tls_certificate, paths.tls_private_key):
        assert mode(path) == 0o640, path
        assert path.stat().st_gid == gid, path
    assert mode(paths.tls_ca) == 0o644


def test_tls_on_renewal_and_off_restart_once_each(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: GARM running on plain HTTP.

    Act: apply a certificate, apply it again, a renewed one, then none.
    Assert: one restart per change and none for the repeat; without a certificate GARM is back
    on HTTP and the certificate, key and CA files are gone.
    """
    installed.apply(config())
    installed.apply(config(tls=TLS))
    installed.apply(config(tls=TLS))
    restarts_with_tls = systemctl.restarts()
    renewed = dataclasses.replace(
        TLS, certificate_chain=TLS.certificate_chain.replace("server", "v2")
    )
    installed.apply(config(tls=renewed))
    restarts_after_renewal = systemctl.restarts()
    installed.apply(config())

    paths = installed.paths
    assert (restarts_with_tls, restarts_after_renewal, systemctl.restarts()) == (2, 3, 4)
    document = tomllib.loads(paths.config.read_text())
    assert document["apiserver"]["use_tls"] is False
    assert "tls" not in document["apiserver"]
    for path in (paths.tls_certificate, paths.tls_private_key, paths.tls_ca):
        assert not path.exists(), path


def test_the_metrics_token_is_root_only_and_never_restarts_garm(
    installed: Workload, systemctl: FakeSystemctl
):
    """Arrange: GARM running. Act: write a metrics token, read it back, remove the unit.

    Assert: 0600, the same token back, no restart for it; removal deletes it.
    """
    installed.apply(config())
    installed.write_metrics_token("header.claims.signature")

    assert installed.metrics_token() == "header.claims.signature"
    assert mode(installed.paths.metrics_token) == 0o600
    installed.apply(config())
    assert systemctl.restarts() == 1
    installed.remove()
    assert not installed.paths.metrics_token.exists()


def test_a_planted_symlink_is_replaced_never_followed(installed: Workload, tmp_path: Path):
    """Arrange: config.toml and a provider's clouds.yaml are symlinks to files outside.

    Act: apply. Assert: the links are replaced by the rendered files; their targets untouched.
    """
    outside = tmp_path / "outside"
    outside.write_text("keep me")
    outside.chmod(0o604)
    paths = installed.paths
    paths.provider_dir("openstack-small").mkdir(parents=True)
    for path in (paths.config, paths.provider_clouds("openstack-small")):
        path.symlink_to(outside)

    installed.apply(config())

    assert outside.read_text() == "keep me"
    assert mode(outside) == 0o604
    for path in (paths.config, paths.provider_clouds("openstack-small")):
        assert not path.is_symlink()
        assert mode(path) == 0o640


def test_stale_provider_symlink_is_removed_without_following_it(
    installed: Workload, tmp_path: Path
):
    """Arrange: stale provider entries: a symlink to a directory, a directory with a link.

    (Both point outside /etc/garm.)

    Act: apply without those providers. Assert: both entries gone, everything outside intact.
    """
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "file").write_text("keep me")
    base = installed.paths.provider_dirs
    base.mkdir(parents=True, exist_ok=True)
    (base / "openstack-linked").symlink_to(outside)
    stale = base / "openstack-stale"
    stale.mkdir()
    (stale / "clouds.yaml").symlink_to(outside / "file")

    installed.apply(config())

    assert sorted(entry.name for entry in base.iterdir()) == ["openstack-small"]
    assert (outside / "file").read_text() == "keep me"


def test_provider_files_point_at_each_other(installed: Workload):
    """Arrange: one provider. Act: apply.

    Assert: the provider's config names its cloud and clouds.yaml, which holds the credentials,
    and looks images up among all the project sees (its private ones too, not only public).
    """
    installed.apply(config())

    paths = installed.paths
    provider_config = tomllib.loads(paths.provider_config("openstack-small").read_text())
    assert provider_config == {
        "cloud": "openstack-small",
        "network_id": "runners-net",
        "image_visibility": "all",
        "credentials": {"clouds": str(paths.provider_clouds("openstack-small"))},
    }
    clouds = yaml.safe_load(paths.provider_clouds("openstack-small").read_text())
    assert clouds == {
        "clouds": {
            "openstack-small": {
                "auth": {
                    "auth_url": "https://keystone.example:5000/v3",
                    "username": "runners",
                    "password": 'os-Secret: with "quotes"',
                    "project_name": "ci",
                    "user_domain_name": "Default",
                    "project_domain_name": "Default",
                },
                "region_name": "RegionOne",
                "identity_api_version": "3",
            }
        }
    }


@pytest.mark.parametrize(
    "password",
    ["pässwörd-Ünïcode-密码", "a: b # not a comment", "'\"\\\n\ttabs", "- [list, {map}]", "null"],
)
def test_clouds_yaml_keeps_any_password(installed: Workload, password: str):
    """Arrange: an OpenStack password with non-ASCII or YAML syntax. Act: apply.

    Assert: clouds.yaml reads back exactly that password.
    """
    installed.apply(config(providers=(dataclasses.replace(provider(), password=password),)))

    clouds = yaml.safe_load(installed.paths.provider_clouds("openstack-small").read_text())
    assert clouds["clouds"]["openstack-small"]["auth"]["password"] == password


def test_unit_file_is_hardened(installed: Workload):
    """Arrange: an installed workload. Act: apply. Assert: the unit's hardening directives."""
    installed.apply(config())

    unit = installed.paths.unit_file.read_text()
    for line in (
        "User=garm",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        f"ReadWritePaths={installed.paths.data}",
        "PrivateTmp=yes",
        "ProtectHome=yes",
        "CapabilityBoundingSet=",
        "UMask=0077",
        # What GARM and its external provider need: outbound network, exec of the provider.
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK",
        "SystemCallFilter=@system-service",
        "SystemCallErrorNumber=EPERM",
        "Restart=on-failure",
        "RestartSec=5s",
        f"ExecStart={installed.paths.garm_binary} --config {installed.paths.config}",
    ):
        assert line in unit.splitlines()


SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
EXPOSURE = re.compile(r"Overall exposure level for garm\.service: (?P<score>\d+\.\d+)")


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed here")
def test_unit_scores_at_most_2_in_systemd_analyze_security(installed: Workload):
    """Arrange: the rendered unit. Act: systemd-analyze security --offline=yes on the file.

    Assert: an overall exposure of at most 2.0, and nothing the provider needs taken away
    (no PrivateNetwork, no IP deny-list).
    """
    installed.apply(config())
    assert SYSTEMD_ANALYZE is not None

    result = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=yes", str(installed.paths.unit_file)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )

    if "--offline" in result.stderr and result.returncode != 0:
        pytest.skip(f"this systemd-analyze has no --offline: {result.stderr.strip()[:80]}")
    found = EXPOSURE.search(result.stdout)
    assert found is not None, result.stdout + result.stderr
    assert float(found.group("score")) <= 2.0, result.stdout
    unit = installed.paths.unit_file.read_text()
    assert "PrivateNetwork" not in unit
    assert "IPAddressDeny" not in unit


def test_removed_provider_files_go(installed: Workload):
    """Arrange: two providers applied. Act: apply with one. Assert: the other's files are gone."""
    installed.apply(config(providers=(provider("a"), provider("b"))))

    installed.apply(config(providers=(provider("a"),)))

    assert installed.paths.provider_config("a").exists()
    assert not installed.paths.provider_dir("b").exists()


def provider_sections(work: Workload) -> list[str]:
    """The provider names GARM's config.toml declares, in their order."""
    document = tomllib.loads(work.paths.config.read_text())
    return [section["name"] for section in document.get("provider", [])]


def provider_files(work: Workload, name: str) -> dict[Path, bytes]:
    """A provider's files on disk and their content."""
    return {
        path: path.read_bytes()
        for path in (work.paths.provider_config(name), work.paths.provider_clouds(name))
    }


def test_kept_provider_stays_as_rendered_without_a_restart(
    installed: Workload, systemctl: FakeSystemctl
):
    """Arrange: providers `z` and `a` rendered (in that order), GARM started once.

    Act: apply with only `a` rendered and `z` kept (its configurator is gone).
    Assert: `z`'s files and config.toml are byte for byte what was rendered, mode 0600; both
    entries stay, sorted by name; GARM is not restarted.
    """
    installed.apply(config(providers=(provider("z"), provider("a"))))
    rendered = provider_files(installed, "z")
    toml = installed.paths.config.read_bytes()

    installed.apply(config(providers=(provider("a"),), kept_providers=("z",)))

    assert provider_files(installed, "z") == rendered
    assert all(mode(path) == 0o640 for path in rendered)
    assert installed.paths.config.read_bytes() == toml
    assert provider_sections(installed) == ["a", "z"]
    assert installed.rendered_provider_names() == {"a", "z"}
    assert systemctl.restarts() == 1


def test_a_kept_providers_keystone_stays_exempt_from_the_proxy(
    installed: Workload, systemctl: FakeSystemctl
):
    """Arrange: a model proxy; providers `a` and `z` on different Keystones, rendered.

    Act: keep `z` (its configurator is gone), then release it.
    Assert: while kept, the environment is byte for byte the same and GARM is not restarted;
    once released, `z`'s Keystone leaves NO_PROXY with exactly one restart.
    """
    proxy = ProxyConfig(https_proxy="http://squid:3128")
    other = dataclasses.replace(provider("z"), auth_url="https://keystone-z.example:5000/v3")
    installed.apply(config(providers=(provider("a"), other), proxy=proxy))
    environment = installed.paths.environment.read_bytes()

    installed.apply(config(providers=(provider("a"),), kept_providers=("z",), proxy=proxy))
    kept = installed.paths.environment.read_bytes()
    installed.apply(config(providers=(provider("a"),), proxy=proxy))

    assert kept == environment
    assert b"keystone-z.example" in kept
    assert b"keystone-z.example" not in installed.paths.environment.read_bytes()
    assert systemctl.restarts() == 2


def test_released_provider_goes_with_exactly_one_restart(
    installed: Workload, systemctl: FakeSystemctl
):
    """Arrange: `a` rendered and `z` kept.

    Act: apply without `z` (no scale set uses it any more), then apply the same again.
    Assert: `z`'s directory and config.toml entry are gone; one restart for it, none after.
    """
    installed.apply(config(providers=(provider("a"), provider("z"))))
    installed.apply(config(providers=(provider("a"),), kept_providers=("z",)))

    installed.apply(config(providers=(provider("a"),)))
    installed.apply(config(providers=(provider("a"),)))

    assert not installed.paths.provider_dir("z").exists()
    assert provider_sections(installed) == ["a"]
    assert installed.rendered_provider_names() == {"a"}
    assert systemctl.restarts() == 2


def test_rendered_provider_wins_over_a_kept_one(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: `z` rendered with one password.

    Act: apply `z` again from new data (its configurator came back) while also listed as kept.
    Assert: `z`'s clouds.yaml holds the new password; one config.toml entry; one restart more.
    """
    installed.apply(config(providers=(provider("z"),)))
    renewed = dataclasses.replace(provider("z"), password="new-Cloud-pa55word")

    installed.apply(config(providers=(renewed,), kept_providers=("z",)))

    assert "new-Cloud-pa55word" in installed.paths.provider_clouds("z").read_text()
    assert provider_sections(installed) == ["z"]
    assert systemctl.restarts() == 2


def test_only_complete_provider_directories_count_as_rendered(installed: Workload):
    """Arrange: `a` rendered; a stray directory without a config.toml beside it.

    Act: list the rendered providers, then apply keeping nothing.
    Assert: only `a` is listed; the stray directory is removed.
    """
    installed.apply(config(providers=(provider("a"),)))
    installed.paths.provider_dir("stray").mkdir()

    listed = installed.rendered_provider_names()
    installed.apply(config(providers=(provider("a"),)))

    assert listed == {"a"}
    assert not installed.paths.provider_dir("stray").exists()


# Restart only when something changed ------------------------------------------------------------


def test_first_apply_starts_the_service(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: installed, never started. Act: apply.

    Assert: systemctl got daemon-reload, enable and one restart, in that order; GARM is active.
    """
    started = installed.apply(config())

    assert started is True
    assert systemctl.calls() == [["daemon-reload"], ["enable", "garm"], ["restart", "garm"]]
    assert systemctl.active


def test_no_restart_when_nothing_changed(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: applied once. Act: apply the same config again.

    Assert: systemctl was only asked whether GARM is active; no restart.
    """
    installed.apply(config())
    before = len(systemctl.calls())

    started = installed.apply(config())

    assert started is False
    assert systemctl.calls()[before:] == [["--quiet", "is-active", "garm"]]
    assert systemctl.restarts() == 1


@pytest.mark.parametrize(
    "change",
    [
        {"log_level": "debug"},
        {"port": 9998},
        {"proxy": ProxyConfig(https_proxy="http://squid:3128")},
        {"providers": (provider("other"),)},
        {"postgres": PostgresConfig("db", 5432, "u", "p", "garm")},
    ],
    ids=["log-level", "port", "proxy", "provider", "database"],
)
def test_exactly_one_restart_per_change(
    installed: Workload, systemctl: FakeSystemctl, change: dict[str, object]
):
    """Arrange: applied once. Act: apply a changed config twice.

    Assert: exactly one more restart (the change), none for the repeat.
    """
    installed.apply(config())

    installed.apply(config(**change))
    installed.apply(config(**change))

    assert systemctl.restarts() == 2


def test_restart_when_the_service_died(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: applied; the service stopped behind the charm's back. Act: apply.

    Assert: started again even though no file changed.
    """
    installed.apply(config())
    systemctl.active = False

    installed.apply(config())

    assert systemctl.restarts() == 2
    assert systemctl.active


def test_hand_edited_file_is_put_back_and_restarted(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: applied; someone edits config.toml by hand. Act: apply.

    Assert: the file is rendered again, and GARM restarted once (it may have started with the
    edit: a reboot in between).
    """
    installed.apply(config())
    wanted = installed.paths.config.read_text()
    installed.paths.config.write_text("# edited\n")

    installed.apply(config())

    assert installed.paths.config.read_text() == wanted
    assert systemctl.restarts() == 2


@pytest.mark.parametrize("member", ["garm", "garm-provider-openstack"])
def test_new_binary_restarts(
    tmp_path: Path, installed: Workload, systemctl: FakeSystemctl, member: str
):
    """Arrange: applied; a new build of one binary is attached. Act: install, apply twice.

    Assert: the new binary is in place and GARM restarted exactly once more.
    """
    installed.apply(config())
    contents = {"garm": b"\x7fELF binary", "garm-provider-openstack": b"\x7fELF binary"}
    contents[member] = b"new build"
    tarballs = {
        name: tarball(tmp_path / f"{name}-2.tgz", name, data) for name, data in contents.items()
    }

    installed.install(tarballs["garm"], tarballs["garm-provider-openstack"], ProxyConfig())
    installed.apply(config())
    installed.apply(config())

    target = installed.paths.garm_binary if member == "garm" else installed.paths.provider_binary
    assert target.read_bytes() == b"new build"
    assert systemctl.restarts() == 2


@pytest.mark.parametrize("verb", ["daemon-reload", "enable", "restart"])
def test_failed_start_is_retried_on_the_next_apply(
    installed: Workload, systemctl: FakeSystemctl, verb: str
):
    """Arrange: applied; systemctl will fail `verb`. Act: apply a change; heal; apply twice.

    Assert: the first apply raises CommandError; the next one restarts GARM (the failed pass
    left no record of a start), and the one after that does nothing.
    """
    installed.apply(config())
    systemctl.fail(verb)

    with pytest.raises(CommandError):
        installed.apply(config(log_level="debug"))
    systemctl.heal(verb)
    retried = installed.apply(config(log_level="debug"))
    repeated = installed.apply(config(log_level="debug"))

    assert retried is True
    assert repeated is False
    assert systemctl.calls()[-2] == ["restart", "garm"]
    assert systemctl.active


def test_systemctl_failure_message_is_short_and_keeps_its_output_out(
    installed: Workload, systemctl: FakeSystemctl
):
    """Arrange: systemctl fails restarts, printing its own output. Act: apply.

    Assert: the CommandError names the command and the journal, never systemctl's output.
    """
    systemctl.fail("restart")

    with pytest.raises(CommandError) as caught:
        installed.apply(config())

    assert str(caught.value) == "systemctl restart garm failed (see journalctl -u garm)"
    assert FAILURE_OUTPUT not in str(caught.value)


def test_no_systemctl_at_all_is_a_command_error(
    installed: Workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: PATH without any systemctl. Act: apply. Assert: CommandError, not OSError."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))

    with pytest.raises(CommandError, match="daemon-reload"):
        installed.apply(config())

    assert not installed.is_running()


# Stop, remove, version ----------------------------------------------------------------------


def test_remove_stops_service_and_removes_unit(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: running. Act: remove.

    Assert: systemctl disabled and stopped GARM, then reloaded; unit file gone, data kept.
    """
    installed.apply(config())
    installed.paths.sqlite_db.write_bytes(b"SQLite format 3")
    before = len(systemctl.calls())

    installed.remove()

    assert systemctl.calls()[before:] == [["disable", "--now", "garm"], ["daemon-reload"]]
    assert not systemctl.active
    assert not installed.paths.unit_file.exists()
    assert not installed.paths.fingerprint.exists()
    assert installed.has_sqlite_state()


def test_remove_deletes_every_credential_file_and_keeps_the_data(installed: Workload):
    """Arrange: running on PostgreSQL with a CA and one provider; a SQLite file from before.

    Act: remove. Assert: config.toml, the environment file, the CA and the provider files are
    gone; GARM's data directory and database stay.
    """
    postgres = PostgresConfig("db", 5432, "u", "pg-pass", "garm", "verify-full", ca_cert="CA")
    installed.apply(config(postgres=postgres))
    installed.paths.sqlite_db.write_bytes(b"SQLite format 3")

    installed.remove()

    paths = installed.paths
    for path in (paths.config, paths.environment, paths.postgresql_ca, paths.provider_dirs):
        assert not path.exists(), path
    assert paths.sqlite_db.read_bytes() == b"SQLite format 3"


def test_remove_goes_on_when_systemd_refuses(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: running; systemctl fails `disable`. Act: remove.

    Assert: no error (a remove hook must not get stuck); the unit file is gone all the same.
    """
    installed.apply(config())
    systemctl.fail("disable")

    installed.remove()

    assert not installed.paths.unit_file.exists()
    assert systemctl.calls()[-1] == ["daemon-reload"]


def test_stop_then_apply_starts_again(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: running. Act: stop, then apply. Assert: stopped, then started once more."""
    installed.apply(config())

    installed.stop()
    stopped = not systemctl.active
    installed.apply(config())

    assert stopped
    assert ["disable", "--now", "garm"] in systemctl.calls()
    assert systemctl.restarts() == 2
    assert systemctl.calls()[-3:] == [["daemon-reload"], ["enable", "garm"], ["restart", "garm"]]


def test_stop_disables_so_a_reboot_starts_no_second_garm(
    installed: Workload, systemctl: FakeSystemctl
):
    """Arrange: running (enabled at boot). Act: stop, as a standby unit does.

    Assert: systemctl stopped and disabled GARM in one call; GARM is not running.
    """
    installed.apply(config())
    before = len(systemctl.calls())

    stopped = installed.stop()

    assert systemctl.calls()[before:] == [
        ["disable", "--now", "garm"],
        ["--quiet", "is-active", "garm"],
    ]
    assert not systemctl.active
    assert stopped


def test_a_failed_stop_is_not_reported_as_stopped(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: GARM running; `systemctl disable --now` fails.

    Act: stop. Assert: GARM still runs and the stop says so (False): a former leader must not
    tell the new one it stopped (ADR 0019).
    """
    installed.apply(config())
    systemctl.fail("disable")

    stopped = installed.stop()

    assert systemctl.active
    assert not stopped


def test_stop_before_any_apply_leaves_systemd_alone(installed: Workload, systemctl: FakeSystemctl):
    """Arrange: installed, no unit file yet. Act: stop.

    Assert: systemctl was only asked whether GARM runs; it is seen stopped.
    """
    stopped = installed.stop()

    assert systemctl.calls() == [["--quiet", "is-active", "garm"]]
    assert stopped


def test_version_runs_garm_dash_dash_version(installed: Workload, runner: RecordingRunner):
    """Arrange: installed. Act: ask the version.

    Assert: `garm --version` ran with the short timeout; its output, stripped, is the answer.
    """
    version = installed.version()

    assert version == "v0.2.1"
    assert runner.commands[-1] == [str(installed.paths.garm_binary), "--version"]
    assert runner.timeouts[-1] == garm_version.VERSION_TIMEOUT_SECONDS


# Go's `flag` parsing as in v0.2.1: `--version` prints, anything else would run the server.
V021_LIKE = """#!/bin/sh
case "$1" in --version|-version) echo v0.2.1 ;; *) exec sleep 30 ;; esac
"""
HEAD_LIKE = """#!/bin/sh
case "$1" in --version|version) echo v0.2.1-96-gafda4e76 ;; *) exec sleep 30 ;; esac
"""


@pytest.mark.parametrize(
    ("script", "expected"),
    [(V021_LIKE, "v0.2.1"), (HEAD_LIKE, "v0.2.1-96-gafda4e76")],
    ids=["v0.2.1", "head"],
)
def test_version_of_a_real_executable(tmp_path: Path, script: str, expected: str):
    """Arrange: an installed garm that answers like v0.2.1 or HEAD; the real command runner.

    Act: ask the version. Assert: the bare version, and no server was started (no hang).
    """
    work = _installed_with_garm(tmp_path, script.encode())

    assert work.version() == expected


def test_version_that_hangs_is_cut_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Arrange: a garm that never exits; a short version timeout. Act: ask the version.

    Assert: empty (unknown), returned at the deadline instead of hanging the hook.
    """
    monkeypatch.setattr(garm_version, "VERSION_TIMEOUT_SECONDS", 0.2)
    work = _installed_with_garm(tmp_path, b"#!/bin/sh\nexec sleep 30\n")
    started = time.monotonic()

    version = work.version()

    assert version == ""
    assert time.monotonic() - started < 10


def test_version_of_a_binary_that_cannot_run_is_unknown(tmp_path: Path):
    """Arrange: a garm binary this machine cannot execute. Act: ask the version.

    Assert: empty, no exception (a wrong-architecture binary must not crash the hook).
    """
    work = _installed_with_garm(tmp_path, b"\x7fELF but not really")

    assert work.version() == ""


def _installed_with_garm(tmp_path: Path, content: bytes) -> Workload:
    root = tmp_path / "root"
    root.mkdir()
    Workload(
        root, runner=RecordingRunner(), fetcher=no_network, arch="amd64", ids=this_users_ids
    ).install(
        tarball(tmp_path / "garm.tgz", "garm", content),
        tarball(tmp_path / "provider.tgz", "garm-provider-openstack"),
        ProxyConfig(),
    )
    return Workload(root, fetcher=no_network, arch="amd64", ids=this_users_ids)


def test_run_command_reports_a_timeout_as_a_failure():
    """Arrange: a command that outlives its timeout. Act: run it.

    Assert: a failed CommandResult saying it timed out, not an exception.
    """
    result = host.run_command(["sleep", "30"], timeout=0.2)

    assert result.returncode == host.TIMED_OUT
    assert "timed out" in result.stderr


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("v0.2.1\n", "v0.2.1"),
        ("v0.2.1-96-gafda4e76\n", "v0.2.1-96-gafda4e76"),
        ("v0.0.0-unknown\n", "v0.0.0-unknown"),
        ("garm version v0.3.0\n", "v0.3.0"),
        ("  v0.2.1  \n\n", "v0.2.1"),
        ("", ""),
        ("Fetching config: open /etc/garm/config.toml\n", ""),
    ],
)
def test_parse_garm_version(output: str, expected: str):
    """Arrange: what `garm --version` might print. Act: parse. Assert: the bare version."""
    assert garm_version.parse_garm_version(output) == expected


@pytest.mark.parametrize(
    ("version", "supported"),
    [
        ("v0.2.1", False),
        ("0.2.1", False),
        ("v0.2.1-dirty", False),
        ("v0.2.0", False),
        ("v0.1.5", False),
        ("v0.2.0-12-g0123abc", False),
        ("v0.2.1-rc1", False),
        ("v0.2.1-rc1-4-g0123abc", False),
        ("v0.2.1-96-gafda4e76", True),
        ("v0.2.1-96-gafda4e76-dirty", True),
        ("v0.2.2", True),
        ("v0.2.2-rc1", True),
        ("v0.3.0", True),
        ("v1.0.0", True),
        ("v0.0.0-unknown", None),
        ("", None),
        ("garbage", None),
        ("v0.2", None),
    ],
)
def test_garm_version_supports_postgresql(version: str, supported: bool | None):
    """Arrange: a version as `garm --version` prints it. Act: ask about PostgreSQL and [proxy].

    Assert: only builds past v0.2.1 have it; unknown builds give None.
    """
    assert garm_version.garm_version_supports_postgresql(version) is supported
    assert garm_version.garm_version_has_proxy_section(version) is supported


def test_proxy_from_juju_environment():
    """Arrange: Juju's proxy variables. Act: read them. Assert: mapped."""
    proxy = ProxyConfig.from_environment(
        {"JUJU_CHARM_HTTPS_PROXY": "http://squid:3128", "JUJU_CHARM_NO_PROXY": "127.0.0.1"}
    )

    assert proxy == ProxyConfig("", "http://squid:3128", "127.0.0.1")


def test_backend_marker_is_private_and_remembered(installed: Workload):
    """Arrange: GARM never ran. Act: record sqlite3, then postgresql.

    Assert: empty before, the last backend after, in a 0600 file.
    """
    assert installed.recorded_backend() == ""

    installed.record_backend("sqlite3")
    installed.record_backend("postgresql")

    assert installed.recorded_backend() == "postgresql"
    assert mode(installed.paths.backend) == 0o600


def test_admin_password_reset_runs_garm_admin_as_garm(
    installed: Workload, runner: RecordingRunner
):
    """Arrange: installed. Act: reset the admin password.

    Assert: `garm admin password-reset` ran as the garm user with GARM's config.
    """
    installed.reset_admin_password("admin", "new-Password-1")

    assert runner.commands[-1] == [
        "runuser",
        "-u",
        "garm",
        "--",
        str(installed.paths.garm_binary),
        "admin",
        "password-reset",
        "admin",
        "--new-password",
        "new-Password-1",
        "--config",
        str(installed.paths.config),
    ]


def test_a_failed_password_reset_never_repeats_its_output(tmp_path: Path):
    """Arrange: a `garm admin` that fails and echoes its input. Act: reset the password.

    Assert: CommandError with the exit status and without the password.
    """

    def echoing(argv: Sequence[str], *, timeout: float = 0) -> CommandResult:
        return CommandResult(2, " ".join(argv), " ".join(argv))

    work = Workload(tmp_path, runner=echoing, fetcher=no_network, arch="amd64")

    with pytest.raises(CommandError) as caught:
        work.reset_admin_password("admin", "secret-Password-2")

    assert "exit status 2" in str(caught.value)
    assert "secret-Password-2" not in str(caught.value)


def test_a_restored_backup_is_never_pruned_after(installed: Workload):
    """Arrange: GARM's database, three backups of it an hour apart; b0 restored (GARM stopped).

    Act: a fourth backup, then prune to 2. Assert: b0 (the last restore's) stays beyond the
    count with the two newest; b1 goes.
    """
    installed.paths.data.mkdir(parents=True, exist_ok=True)
    installed.paths.sqlite_db.write_bytes(b"")
    start = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
    for n in range(3):
        installed.create_backup(
            f"b{n}", passphrase_secret="", now=start + datetime.timedelta(hours=n)
        )
    installed.restore_backup(installed.read_backup("b0"))
    installed.create_backup("b3", passphrase_secret="", now=start + datetime.timedelta(hours=3))

    removed = installed.prune_backups(2, just_made="b3")

    assert removed == ["b1"]
    assert sorted(p.name for p in (installed.paths.charm_state / "backups").iterdir()) == [
        "b0",
        "b2",
        "b3",
    ]
