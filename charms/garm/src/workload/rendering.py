"""What GARM runs with, rendered: config.toml, provider files, environment file, systemd unit.

Pure functions of the charm's values, except that a kept provider's files are read back from
disk as they were last rendered.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import tomli_w

from workload import sandbox
from workload.config import GarmConfig, OpenStackProvider, ProxyConfig
from workload.host import (
    SYSTEM_USER,
    Paths,
    WorkloadError,
    ensure_directory,
    read_intact,
    read_regular,
    remove_tree,
    write_atomic,
)
from workload.version import garm_version_has_proxy_section

# garm-provider-openstack speaks GARM's external interface v0.1.0; v0.1.1 is broken in GARM
# for ListInstances (garm-behaviour B7), so `interface_version` is left out on purpose.
PROXY_VARIABLES: Final = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
JWT_TIME_TO_LIVE: Final = "8760h"
# Never sent through a proxy, whatever the model says: GARM's own API, on this machine.
LOOPBACK_NO_PROXY: Final = ("127.0.0.1", "localhost", "::1")
# Which Glance images garm-provider-openstack finds by name (garm-behaviour O1/O3). Its default,
# `public`, misses the project's own images (an image builder uploads them `private` or
# `shared`); `all` is the one value that lists them and public ones alike.
IMAGE_VISIBILITY: Final = "all"

# A rendered file: its content, its mode and whether the garm user owns it.
RenderedFile = tuple[bytes, int, bool]
# What GARM reads: root-owned, readable by the garm group only (GARM never writes them).
READ_BY_GARM: Final = 0o640
GARM_DIRECTORY: Final = 0o750


def render_files(config: GarmConfig, paths: Paths) -> dict[Path, RenderedFile]:
    """Every file the service reads: path -> (content, mode, group garm)."""
    proxy = service_proxy(config.proxy, _auth_hosts(config, paths))
    database = _database_environment(config, paths)
    files: dict[Path, RenderedFile] = {
        paths.config: (render_config(config, paths, proxy).encode(), READ_BY_GARM, True),
        paths.environment: (render_environment(proxy, database).encode(), 0o600, False),
        paths.unit_file: (render_unit(paths).encode(), 0o644, False),
    }
    if database:
        ca_cert = config.postgres.ca_cert if config.postgres else ""
        files[paths.postgresql_ca] = (ca_cert.encode(), READ_BY_GARM, True)
    if config.tls is not None:
        files[paths.tls_certificate] = (config.tls.certificate_chain.encode(), READ_BY_GARM, True)
        files[paths.tls_private_key] = (config.tls.private_key.encode(), READ_BY_GARM, True)
        # Public, for every client on this machine; GARM itself never reads it.
        files[paths.tls_ca] = (config.tls.ca.encode(), 0o644, False)
    for provider in config.providers:
        files[paths.provider_config(provider.name)] = (
            render_provider_config(provider, paths).encode(),
            READ_BY_GARM,
            True,
        )
        files[paths.provider_clouds(provider.name)] = (
            render_clouds_yaml(provider).encode(),
            READ_BY_GARM,
            True,
        )
    files.update(_kept_provider_files(config, paths))
    return files


def write_files(
    files: Mapping[Path, RenderedFile], config: GarmConfig, paths: Paths, group: int
) -> frozenset[Path]:
    """Write each rendered file that differs on disk; remove providers GARM no longer runs.

    Args:
        files: what `render_files` returned.
        config: what they were rendered from.
        paths: where they go.
        group: the garm group's gid, given the files GARM reads and their directories.

    Returns:
        The files the service reads whose content on disk was not the rendered one: GARM may
        have started with what was there (a hand edit, then a reboot).
    """
    reread: set[Path] = set()
    for path, (content, mode, garm_reads) in files.items():
        group_id = group if garm_reads else -1
        if _write_if_changed(path, content, mode, group=group_id, paths=paths):
            reread.add(path)
    _remove_stale_providers(config, paths)
    if config.tls is None:
        for path in (paths.tls_certificate, paths.tls_private_key, paths.tls_ca):
            remove_tree(path)
    # Clients on this machine read the CA; GARM and systemd never do.
    return frozenset(reread - {paths.tls_ca})


def _database_environment(config: GarmConfig, paths: Paths) -> dict[str, str]:
    """PGSSLROOTCERT when the database's CA is given (garm-behaviour B23).

    GARM's config has no key for the CA; its PostgreSQL driver reads libpq's variables.
    """
    if config.postgres is None or not config.postgres.ca_cert:
        return {}
    return {"PGSSLROOTCERT": str(paths.postgresql_ca)}


def rendered_provider_names(paths: Paths) -> frozenset[str]:
    """The providers whose files are on disk: what the last apply rendered or kept."""
    base = paths.provider_dirs
    if not base.is_dir():
        return frozenset()
    return frozenset(
        directory.name
        for directory in base.iterdir()
        if paths.provider_config(directory.name).is_file()
    )


def _auth_hosts(config: GarmConfig, paths: Paths) -> list[str]:
    """The OpenStack auth URLs' hosts of every provider GARM runs, kept ones included.

    A kept provider's host is read back from its clouds.yaml, so NO_PROXY (and with it the
    service) stays the same when a provider goes from rendered to kept.
    """
    hosts = [_url_host(provider.auth_url) for provider in config.providers]
    for name in config.kept_only:
        hosts.append(_url_host(_clouds_auth_url(paths.provider_clouds(name), name)))
    return hosts


def _kept_provider_files(config: GarmConfig, paths: Paths) -> dict[Path, RenderedFile]:
    """Each kept provider's files as they are on disk.

    They are "written" unchanged and fingerprinted exactly as when they were rendered, so
    a provider going from rendered to kept never restarts GARM.
    """
    files: dict[Path, RenderedFile] = {}
    for name in config.kept_only:
        for path in (paths.provider_config(name), paths.provider_clouds(name)):
            found = read_regular(path)
            if found is not None:
                files[path] = (found[0], READ_BY_GARM, True)
    return files


def _write_if_changed(path: Path, content: bytes, mode: int, *, group: int, paths: Paths) -> bool:
    """Write unless the file is as written (content, mode, owner, group, not a symlink).

    Returns:
        Whether what a reader of `path` saw (through any link) was not `content`.
    """
    if group != -1 and path.parent != paths.etc:
        # A provider's directory: root's, in the garm group, put right at every hook.
        ensure_directory(path.parent, GARM_DIRECTORY, uid=os.geteuid(), gid=group)
    if read_intact(path, mode, group=group) == content:
        return False
    seen = _read_through(path)
    write_atomic(path, content, mode, group=group)
    return seen != content


def _read_through(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _remove_stale_providers(config: GarmConfig, paths: Paths) -> None:
    """Remove what GARM no longer runs, never following a link (a planted one goes itself)."""
    base = paths.provider_dirs
    if base.is_symlink() or not base.is_dir():
        return
    wanted = set(config.provider_names)
    for entry in sorted(base.iterdir()):
        if entry.name not in wanted or entry.is_symlink():
            remove_tree(entry)


def render_config(config: GarmConfig, paths: Paths, proxy: Mapping[str, str]) -> str:
    """GARM's config.toml, with `proxy` (see `service_proxy`) where the GARM reads [proxy]."""
    document: dict[str, Any] = {
        "logging": {"log_level": config.log_level, "log_format": "text"},
        # /metrics answers only a metrics token GARM issued (garm-behaviour B28): the API port
        # is exposed to runners, and GARM cannot serve metrics on another address.
        "metrics": {"enable": True, "disable_auth": False},
        "jwt_auth": {"secret": config.jwt_secret, "time_to_live": JWT_TIME_TO_LIVE},
        "apiserver": _apiserver_section(config, paths),
        "database": _database_section(config, paths),
        "provider": [_provider_section(name, paths) for name in config.provider_names],
    }
    if proxy and garm_version_has_proxy_section(config.garm_version) is not False:
        document["proxy"] = {key.lower(): value for key, value in proxy.items()}
    if not document["provider"]:
        del document["provider"]
    return tomli_w.dumps(document)


def _apiserver_section(config: GarmConfig, paths: Paths) -> dict[str, Any]:
    """Plain HTTP, or HTTPS only, on the same port, with the relation's certificate.

    GARM serves one or the other, never both (garm-behaviour B27).
    """
    # An IP literal: GARM rejects host names here.
    section: dict[str, Any] = {"bind": "0.0.0.0", "port": config.port}  # noqa: S104
    section["use_tls"] = config.tls is not None
    if config.tls is not None:
        section["tls"] = {
            "certificate": str(paths.tls_certificate),
            "key": str(paths.tls_private_key),
        }
    return section


def _database_section(config: GarmConfig, paths: Paths) -> dict[str, Any]:
    if config.postgres is None:
        return {
            "backend": "sqlite3",
            "passphrase": config.db_passphrase,
            "sqlite3": {"db_file": str(paths.sqlite_db)},
        }
    postgres = config.postgres
    return {
        "backend": "postgresql",
        "passphrase": config.db_passphrase,
        "postgresql": {
            "hostname": postgres.hostname,
            "port": postgres.port,
            "username": postgres.username,
            "password": postgres.password,
            "database": postgres.database,
            "sslmode": postgres.sslmode,
        },
    }


def _provider_section(name: str, paths: Paths) -> dict[str, Any]:
    """Only the name shapes the entry, so a kept provider's entry stays as it was rendered."""
    return {
        "name": name,
        "provider_type": "external",
        "description": f"OpenStack provider {name}",
        "external": {
            "provider_executable": str(paths.provider_binary),
            "config_file": str(paths.provider_config(name)),
            "environment_variables": list(PROXY_VARIABLES),
        },
    }


def render_provider_config(provider: OpenStackProvider, paths: Paths) -> str:
    """garm-provider-openstack's config.toml: which cloud, where its credentials are."""
    return tomli_w.dumps(
        {
            "cloud": provider.name,
            # A name or an id: the provider resolves either (GetNetwork in its client package).
            "network_id": provider.network,
            "image_visibility": IMAGE_VISIBILITY,
            "credentials": {"clouds": str(paths.provider_clouds(provider.name))},
        }
    )


def render_clouds_yaml(provider: OpenStackProvider) -> str:
    """The clouds.yaml garm-provider-openstack reads (gophercloud clientconfig format).

    Written by a YAML library, so no value (quotes, colons, non-ASCII) can break the document.
    """
    import yaml  # noqa: PLC0415 - only hooks that render a provider pay for it

    auth = {
        "auth_url": provider.auth_url,
        "username": provider.username,
        "password": provider.password,
        "project_name": provider.project_name,
        "user_domain_name": provider.user_domain_name,
        "project_domain_name": provider.project_domain_name,
    }
    cloud: dict[str, Any] = {"auth": auth}
    if provider.region_name:
        cloud["region_name"] = provider.region_name
    cloud["identity_api_version"] = "3"
    document = {"clouds": {provider.name: cloud}}
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False, default_flow_style=False)


def service_proxy(proxy: ProxyConfig, auth_hosts: Sequence[str]) -> dict[str, str]:
    """The proxy variables GARM runs with; empty when the model has no proxy.

    NO_PROXY always covers loopback and `auth_hosts` (the OpenStack auth URLs' hosts):
    Keystone sits on the cloud's own network, and the provider inherits these variables.
    """
    if not proxy.http_proxy and not proxy.https_proxy:
        return {}
    no_proxy = [host.strip() for host in proxy.no_proxy.split(",") if host.strip()]
    no_proxy += [*LOOPBACK_NO_PROXY, *auth_hosts]
    variables = {
        "HTTP_PROXY": proxy.http_proxy,
        "HTTPS_PROXY": proxy.https_proxy,
        "NO_PROXY": ",".join(dict.fromkeys(host for host in no_proxy if host)),
    }
    return {name: value for name, value in variables.items() if value}


def render_environment(proxy: Mapping[str, str], database: Mapping[str, str] | None = None) -> str:
    """The service's EnvironmentFile: the model's proxy, and the database driver's variables.

    The proxy goes in both spellings programs read, `database` as given.

    GARM v0.2.1 reaches a proxy only through its environment; a file (0600, read by systemd as
    root) keeps a proxy password out of the world-readable unit and `systemctl show`.

    Raises:
        WorkloadError: a value holds a control character, which could smuggle in a variable.
    """
    lines = ["# Managed by the garm charm: the model's proxy settings."]
    for name, value in proxy.items():
        if any(ord(char) < 0x20 or ord(char) == 0x7F for char in value):
            raise WorkloadError(f"the model's {name} setting holds a control character")
        quoted = value.replace("\\", "\\\\").replace('"', '\\"')
        lines += [f'{name}="{quoted}"', f'{name.lower()}="{quoted}"']
    lines += [f'{name}="{value}"' for name, value in (database or {}).items()]
    return "\n".join(lines) + "\n"


def _clouds_auth_url(path: Path, cloud: str) -> str:
    """The auth URL in a clouds.yaml the charm rendered; empty when unreadable."""
    import yaml  # noqa: PLC0415 - only when a provider is kept, not in every hook

    try:
        document: Any = yaml.safe_load(path.read_text())
        return str(document["clouds"][cloud]["auth"]["auth_url"])
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return ""


def _url_host(url: str) -> str:
    try:
        return urllib.parse.urlsplit(url).hostname or ""
    except ValueError:
        return ""


def render_unit(paths: Paths) -> str:
    """The hardened systemd unit (`systemd-analyze security` exposure at most 2.0).

    What GARM and the provider it runs still need: writing the data directory (SQLite, its WAL
    and blob files), reading root:garm configuration (the garm group stays mapped under
    PrivateUsers), running the provider executable (execve is in @system-service), and the
    network (IPv4, IPv6, local and netlink sockets; no IP allow-list: GitHub, Keystone and the
    runners can be anywhere). Denied system calls fail with EPERM instead of killing GARM.
    """
    return f"""\
[Unit]
Description=GARM, the GitHub Actions Runner Manager (managed by the garm charm)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User={SYSTEM_USER}
Group={SYSTEM_USER}
EnvironmentFile={paths.environment}
ExecStart={paths.garm_binary} --config {paths.config}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=5s
UMask=0077
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths={paths.data}
PrivateTmp=yes
PrivateDevices=yes
PrivateUsers=yes
PrivateIPC=yes
ProtectHome=yes
{sandbox.PROTECT_KERNEL}
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK
{sandbox.RESTRICT}
CapabilityBoundingSet=
AmbientCapabilities=
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @mount @swap @reboot @raw-io @module
SystemCallFilter=~@obsolete @debug @cpu-emulation @clock
SystemCallErrorNumber=EPERM
DevicePolicy=closed
KeyringMode=private

[Install]
WantedBy=multi-user.target
"""
