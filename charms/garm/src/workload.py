"""GARM on this machine: binaries, config files, the systemd unit and restart-if-changed.

No ops imports: the charm hands in plain values. Every path hangs off a root directory (``/``
in production, a temporary directory in tests). systemd is driven through charmlibs-systemd,
which runs ``systemctl`` from PATH (tests put a fake one first); every other command goes
through an injectable runner. Either way tests see exactly what would have run.

The service is restarted only when what it would run with differs from what it was last
started with: a fingerprint of the rendered files, the installed binaries and the environment
is written (0600) at each (re)start and compared on the next pass. Comparing with the files
on disk would miss a restart that failed half-way, or a file someone edited by hand.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import os
import platform
import re
import subprocess
import tarfile
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import tomli_w
from charmlibs import systemd

logger = logging.getLogger(__name__)

SERVICE_NAME: Final = "garm"
SYSTEM_USER: Final = "garm"
GARM_RESOURCE: Final = "garm-binary"
PROVIDER_RESOURCE: Final = "garm-provider-openstack"
PROVIDER_BINARY: Final = "garm-provider-openstack"
# garm-provider-openstack speaks GARM's external interface v0.1.0; v0.1.1 is broken in GARM
# for ListInstances (REFERENCE §1.6), so `interface_version` is left out on purpose.
PROXY_VARIABLES: Final = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
JWT_TIME_TO_LIVE: Final = "8760h"
DOWNLOAD_TIMEOUT_SECONDS: Final = 120
COMMAND_TIMEOUT_SECONDS: Final = 300
VERSION_TIMEOUT_SECONDS: Final = 10
# The exit status `timeout(1)` uses, for a command that was killed at its deadline.
TIMED_OUT: Final = 124
# The last GARM release without the PostgreSQL backend and the [proxy] config section.
LAST_RELEASE_WITHOUT_POSTGRESQL: Final = (0, 2, 1)
# Never sent through a proxy, whatever the model says: GARM's own API, on this machine.
LOOPBACK_NO_PROXY: Final = ("127.0.0.1", "localhost", "::1")


@dataclasses.dataclass(frozen=True)
class Release:
    """A release tarball the charm may download when its resource is not attached.

    Attributes:
        resource: the Juju resource that replaces the download.
        version: the pinned release tag.
        url: download URL, with ``{version}`` and ``{arch}`` placeholders.
        binary: the executable the tarball must contain.
        sha256: per architecture, the sha256 of the tarball as published next to it
            (``<asset>.sha256``). Empty means nobody has recorded it from the published
            checksum file yet; the charm then refuses to download and asks for the resource.
    """

    resource: str
    version: str
    url: str
    binary: str
    sha256: Mapping[str, str]

    def asset_url(self, arch: str) -> str:
        """The download URL for one architecture."""
        return self.url.format(version=self.version, arch=arch)


# A hash must come from the release's own `<asset>.sha256` file or from a packager who verified the
# asset against it; never from a download made here. A wrong hash fails safe: the charm refuses the
# download and asks for the resource (Blocked), it never runs an unverified binary.
# GARM v0.2.1: as pinned by the Arch Linux `garm-bin` 0.2.1 package (sha256sums_x86_64/_aarch64).
GARM_RELEASE: Final = Release(
    resource=GARM_RESOURCE,
    version="v0.2.1",
    url="https://github.com/cloudbase/garm/releases/download/{version}/garm-linux-{arch}.tgz",
    binary="garm",
    sha256={
        "amd64": "11176acb8a725f914b9b947891b4837d374fb616195562cc0ad45a7be8b6c746",
        "arm64": "8b91ed21b911f2c77d9065438b1c5e40ebb79b63cf5dc8b7dc326bbe4ac608cc",
    },
)
# No verified hash of garm-provider-openstack v0.1.2 is known yet: without its resource the charm
# stays Blocked asking for it.
PROVIDER_RELEASE: Final = Release(
    resource=PROVIDER_RESOURCE,
    version="v0.1.2",
    url=(
        "https://github.com/cloudbase/garm-provider-openstack/releases/download/"
        "{version}/garm-provider-openstack-linux-{arch}.tgz"
    ),
    binary=PROVIDER_BINARY,
    sha256={"amd64": "", "arm64": ""},
)


class WorkloadError(Exception):
    """Something on the machine failed; the message is safe to show in a status."""


class ResourceError(WorkloadError):
    """A binary could not be installed; names the Juju resource that fixes it."""

    def __init__(self, resource: str, reason: str) -> None:
        super().__init__(f"resource {resource}: {reason}")
        self.resource = resource
        self.reason = reason


class CommandError(WorkloadError):
    """A command failed."""


# Values handed in by the charm ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ProxyConfig:
    """The model's proxy settings (JUJU_CHARM_HTTP(S)_PROXY / JUJU_CHARM_NO_PROXY)."""

    http_proxy: str = ""
    https_proxy: str = ""
    no_proxy: str = ""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> ProxyConfig:
        """Read the proxy Juju gives the charm."""
        return cls(
            http_proxy=environ.get("JUJU_CHARM_HTTP_PROXY", ""),
            https_proxy=environ.get("JUJU_CHARM_HTTPS_PROXY", ""),
            no_proxy=environ.get("JUJU_CHARM_NO_PROXY", ""),
        )

    def as_urllib_proxies(self) -> dict[str, str]:
        """The mapping urllib's ProxyHandler takes."""
        proxies = {"http": self.http_proxy, "https": self.https_proxy, "no": self.no_proxy}
        return {scheme: url for scheme, url in proxies.items() if url}


@dataclasses.dataclass(frozen=True)
class PostgresConfig:
    """Where GARM's PostgreSQL database is."""

    hostname: str
    port: int
    username: str
    password: str = dataclasses.field(repr=False)
    database: str
    sslmode: str = "prefer"


@dataclasses.dataclass(frozen=True)
class OpenStackProvider:
    """One OpenStack provider GARM runs (one [[provider]] and its own config files)."""

    name: str
    auth_url: str
    username: str
    password: str = dataclasses.field(repr=False)
    project_name: str
    user_domain_name: str
    project_domain_name: str
    network: str
    region_name: str = ""


@dataclasses.dataclass(frozen=True)
class GarmConfig:
    """Everything config.toml and the provider files are rendered from."""

    jwt_secret: str = dataclasses.field(repr=False)
    db_passphrase: str = dataclasses.field(repr=False)
    port: int = 9997
    log_level: str = "info"
    postgres: PostgresConfig | None = None
    providers: tuple[OpenStackProvider, ...] = ()
    proxy: ProxyConfig = dataclasses.field(default_factory=ProxyConfig)
    # Providers no configurator asks for any more that GARM still needs (its scale sets on them
    # are draining): their files stay on disk as last rendered, their [[provider]] stays.
    kept_providers: tuple[str, ...] = ()
    # What `garm --version` printed: decides whether config.toml may carry a [proxy] section.
    garm_version: str = ""

    @property
    def kept_only(self) -> tuple[str, ...]:
        """The kept providers not rendered from `providers` (a configurator's data wins)."""
        rendered = {provider.name for provider in self.providers}
        return tuple(sorted({name for name in self.kept_providers if name not in rendered}))

    @property
    def provider_names(self) -> tuple[str, ...]:
        """Every provider GARM runs with, sorted, so the order never depends on relations."""
        return tuple(sorted({provider.name for provider in self.providers} | {*self.kept_only}))


@dataclasses.dataclass(frozen=True)
class CommandResult:
    """What a command returned."""

    returncode: int
    stdout: str = ""
    stderr: str = ""


class Runner(Protocol):
    """Runs one command (never through a shell), killing it after `timeout` seconds."""

    def __call__(  # noqa: D102
        self, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS
    ) -> CommandResult: ...


Fetcher = Callable[[str, ProxyConfig], bytes]
# A rendered file: its content, its mode and whether the garm user owns it.
RenderedFile = tuple[bytes, int, bool]


def run_command(argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS) -> CommandResult:
    """Run a command on this machine and capture its output.

    A command still running after `timeout` seconds is killed and reported as exit status
    `TIMED_OUT`, so a stuck command fails its caller instead of hanging the hook.
    """
    try:
        completed = subprocess.run(  # fixed argument lists, never a shell
            list(argv), capture_output=True, text=True, check=False, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return CommandResult(TIMED_OUT, "", f"timed out after {timeout:g}s")
    return CommandResult(completed.returncode, completed.stdout, completed.stderr)


def fetch_url(url: str, proxy: ProxyConfig) -> bytes:
    """Download a URL through the model's proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxy.as_urllib_proxies()))
    with opener.open(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
        return bytes(response.read())


def machine_arch() -> str:
    """This machine's architecture in release-asset spelling."""
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


# Paths --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Paths:
    """Where everything lives, under one root."""

    root: Path

    @property
    def etc(self) -> Path:
        """GARM's configuration directory."""
        return self.root / "etc" / "garm"

    @property
    def config(self) -> Path:
        """GARM's config.toml."""
        return self.etc / "config.toml"

    @property
    def environment(self) -> Path:
        """The service's environment (the model's proxy), read by systemd as root."""
        return self.etc / "garm.env"

    @property
    def data(self) -> Path:
        """GARM's state directory (the only one the service may write)."""
        return self.root / "var" / "lib" / "garm"

    @property
    def sqlite_db(self) -> Path:
        """The SQLite database file."""
        return self.data / "garm.db"

    @property
    def providers_dir(self) -> Path:
        """Where provider executables live."""
        return self.root / "opt" / "garm" / "providers.d"

    @property
    def provider_binary(self) -> Path:
        """The OpenStack provider executable."""
        return self.providers_dir / PROVIDER_BINARY

    @property
    def garm_binary(self) -> Path:
        """The GARM server executable."""
        return self.root / "usr" / "local" / "bin" / "garm"

    @property
    def unit_file(self) -> Path:
        """The systemd unit."""
        return self.root / "etc" / "systemd" / "system" / f"{SERVICE_NAME}.service"

    @property
    def charm_state(self) -> Path:
        """The charm's own bookkeeping (root only)."""
        return self.root / "var" / "lib" / "garm-charm"

    @property
    def fingerprint(self) -> Path:
        """What the running service was started with."""
        return self.charm_state / "service-fingerprint"

    @property
    def backend(self) -> Path:
        """Which database backend GARM's state was last written to."""
        return self.charm_state / "database-backend"

    @property
    def installed(self) -> Path:
        """Which tarballs the installed binaries came from."""
        return self.charm_state / "installed.json"

    @property
    def provider_dirs(self) -> Path:
        """Where each provider's config directory lives."""
        return self.etc / "providers"

    def provider_dir(self, name: str) -> Path:
        """One provider's config directory."""
        return self.provider_dirs / name

    def provider_config(self, name: str) -> Path:
        """One provider's config.toml."""
        return self.provider_dir(name) / "config.toml"

    def provider_clouds(self, name: str) -> Path:
        """One provider's clouds.yaml."""
        return self.provider_dir(name) / "clouds.yaml"


# The workload ---------------------------------------------------------------------------------


class Workload:
    """GARM on this machine."""

    def __init__(
        self,
        root: Path = Path("/"),
        *,
        runner: Runner = run_command,
        fetcher: Fetcher = fetch_url,
        arch: str | None = None,
    ) -> None:
        self.paths = Paths(root)
        self._run = runner
        self._fetch = fetcher
        self._arch = arch or machine_arch()

    # Install ----------------------------------------------------------------------------

    def install(
        self, garm_tarball: Path | None, provider_tarball: Path | None, proxy: ProxyConfig
    ) -> None:
        """Create the user and directories and install both binaries.

        Args:
            garm_tarball: the attached `garm-binary` resource, or None to download.
            provider_tarball: the attached `garm-provider-openstack` resource, or None.
            proxy: the model's proxy, used for downloads.

        Raises:
            ResourceError: a tarball is missing, unverifiable or lacks its binary.
            CommandError: creating the user or setting ownership failed.
        """
        self._ensure_user()
        self._ensure_directories()
        self._install_binary(GARM_RELEASE, garm_tarball, self.paths.garm_binary, proxy)
        self._install_binary(PROVIDER_RELEASE, provider_tarball, self.paths.provider_binary, proxy)

    def is_installed(self) -> bool:
        """Whether both binaries are in place."""
        return self.paths.garm_binary.is_file() and self.paths.provider_binary.is_file()

    def _ensure_user(self) -> None:
        if self._run(["id", "-u", SYSTEM_USER]).returncode == 0:
            return
        self._check(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                str(self.paths.data),
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ]
        )

    def _ensure_directories(self) -> None:
        for path, mode, owned in (
            (self.paths.etc, 0o750, True),
            (self.paths.data, 0o750, True),
            (self.paths.providers_dir, 0o755, False),
            (self.paths.charm_state, 0o700, False),
        ):
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(mode)
            if owned:
                self._chown(path)
        # Shared system directories: create when absent (a test root), never change their mode.
        self.paths.garm_binary.parent.mkdir(parents=True, exist_ok=True)
        self.paths.unit_file.parent.mkdir(parents=True, exist_ok=True)

    def _install_binary(
        self, release: Release, tarball: Path | None, target: Path, proxy: ProxyConfig
    ) -> None:
        content = self._tarball_bytes(release, tarball, proxy)
        digest = hashlib.sha256(content).hexdigest()
        installed = self._installed_digests()
        if installed.get(release.resource) == digest and target.is_file():
            return
        binary = _extract_member(release, content)
        _write_atomic(target, binary, 0o755)
        installed[release.resource] = digest
        _write_atomic(self.paths.installed, json.dumps(installed).encode(), 0o600)
        logger.info("installed %s from a tarball with sha256 %s", release.binary, digest)

    def _tarball_bytes(self, release: Release, tarball: Path | None, proxy: ProxyConfig) -> bytes:
        if tarball is not None and tarball.is_file() and tarball.stat().st_size > 0:
            return tarball.read_bytes()
        expected = release.sha256.get(self._arch, "")
        if not expected:
            raise ResourceError(
                release.resource,
                f"not attached, and no sha256 is pinned for {release.version} on "
                f"{self._arch}: attach the release tarball",
            )
        url = release.asset_url(self._arch)
        try:
            content = self._fetch(url, proxy)
        except OSError as error:
            raise ResourceError(
                release.resource, f"download of {release.version} failed ({error}): attach it"
            ) from None
        actual = hashlib.sha256(content).hexdigest()
        if actual != expected:
            raise ResourceError(
                release.resource,
                f"downloaded {release.version} has sha256 {actual}, expected {expected}",
            )
        return content

    def _installed_digests(self) -> dict[str, str]:
        try:
            loaded: Any = json.loads(self.paths.installed.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(loaded, dict):
            return {}
        entries: dict[Any, Any] = loaded  # pyright: ignore[reportUnknownVariableType]
        return {str(key): str(value) for key, value in entries.items()}

    # Configure and run ------------------------------------------------------------------

    def apply(self, config: GarmConfig) -> bool:
        """Render every file and (re)start GARM if anything it runs with changed.

        Returns:
            True when the service was started or restarted in this call.

        Raises:
            CommandError: systemd refused.
        """
        files = self.render_files(config)
        for path, (content, mode, owned) in files.items():
            self._write_if_changed(path, content, mode, owned=owned)
        self._remove_stale_providers(config)
        wanted = self._fingerprint(files, config.proxy)
        recorded = _read_text(self.paths.fingerprint)
        if recorded == wanted and self.is_running():
            return False
        _systemd("daemon-reload", systemd.daemon_reload)
        _systemd("enable", systemd.service_enable, SERVICE_NAME)
        _systemd("restart", systemd.service_restart, SERVICE_NAME)
        _write_atomic(self.paths.fingerprint, wanted.encode(), 0o600)
        logger.info("GARM (re)started: its configuration or binaries changed")
        return True

    def render_files(self, config: GarmConfig) -> dict[Path, RenderedFile]:
        """Every file the service reads: path -> (content, mode, owned by the garm user)."""
        proxy = service_proxy(config.proxy, self._auth_hosts(config))
        files: dict[Path, RenderedFile] = {
            self.paths.config: (render_config(config, self.paths, proxy).encode(), 0o600, True),
            self.paths.environment: (render_environment(proxy).encode(), 0o600, False),
            self.paths.unit_file: (render_unit(self.paths).encode(), 0o644, False),
        }
        for provider in config.providers:
            files[self.paths.provider_config(provider.name)] = (
                render_provider_config(provider, self.paths).encode(),
                0o600,
                True,
            )
            files[self.paths.provider_clouds(provider.name)] = (
                render_clouds_yaml(provider).encode(),
                0o600,
                True,
            )
        files.update(self._kept_provider_files(config))
        return files

    def rendered_provider_names(self) -> frozenset[str]:
        """The providers whose files are on disk: what the last apply rendered or kept."""
        base = self.paths.provider_dirs
        if not base.is_dir():
            return frozenset()
        return frozenset(
            directory.name
            for directory in base.iterdir()
            if self.paths.provider_config(directory.name).is_file()
        )

    def _auth_hosts(self, config: GarmConfig) -> list[str]:
        """The OpenStack auth URLs' hosts of every provider GARM runs, kept ones included.

        A kept provider's host is read back from its clouds.yaml, so NO_PROXY (and with it the
        service) stays the same when a provider goes from rendered to kept.
        """
        hosts = [_url_host(provider.auth_url) for provider in config.providers]
        for name in config.kept_only:
            hosts.append(_url_host(_clouds_auth_url(self.paths.provider_clouds(name), name)))
        return hosts

    def _kept_provider_files(self, config: GarmConfig) -> dict[Path, RenderedFile]:
        """Each kept provider's files as they are on disk.

        They are "written" unchanged and fingerprinted exactly as when they were rendered, so
        a provider going from rendered to kept never restarts GARM.
        """
        files: dict[Path, RenderedFile] = {}
        for name in config.kept_only:
            for path in (self.paths.provider_config(name), self.paths.provider_clouds(name)):
                if path.is_file():
                    files[path] = (path.read_bytes(), 0o600, True)
        return files

    def is_running(self) -> bool:
        """Whether systemd reports GARM active."""
        try:
            return systemd.service_running(SERVICE_NAME)
        except OSError:  # no systemctl at all: nothing can be running
            return False

    def stop(self) -> None:
        """Stop GARM (a standby unit, or before removal) and forget how it was started.

        Best effort, like removal: a failure is logged, and the forgotten fingerprint makes the
        next `apply` start GARM afresh.
        """
        if self.paths.unit_file.exists():
            _systemd_best_effort("stop", systemd.service_stop, SERVICE_NAME)
        self.paths.fingerprint.unlink(missing_ok=True)

    def remove(self) -> None:
        """Stop and disable GARM and remove its unit file; GARM's data stays on disk.

        Best effort: a remove hook that failed on systemd would leave the unit stuck in error.
        """
        if self.paths.unit_file.exists():
            _systemd_best_effort("disable", systemd.service_disable, "--now", SERVICE_NAME)
            self.paths.unit_file.unlink()
            _systemd_best_effort("daemon-reload", systemd.daemon_reload)
        self.paths.fingerprint.unlink(missing_ok=True)

    def version(self) -> str:
        """GARM's version as `garm --version` prints it (e.g. "v0.2.1"); empty when unknown.

        `--version` and not `version`: v0.2.1 parses flags with Go's `flag` package, ignores a
        `version` argument and starts a server (REFERENCE §1.2). The timeout keeps any surprise
        from hanging the hook.
        """
        if not self.paths.garm_binary.is_file():
            return ""
        try:
            result = self._run(
                [str(self.paths.garm_binary), "--version"], timeout=VERSION_TIMEOUT_SECONDS
            )
        except OSError:  # not executable here, e.g. a binary for another architecture
            return ""
        return parse_garm_version(result.stdout) if result.returncode == 0 else ""

    def recorded_backend(self) -> str:
        """The backend GARM last ran with ("sqlite3", "postgresql"), or "" if it never ran."""
        return _read_text(self.paths.backend).strip()

    def reset_admin_password(self, username: str, password: str) -> None:
        """Set a GARM user's password in its database (`garm admin`, builds after v0.2.1).

        Runs as GARM's user, so files the database opens stay GARM's. The password is on the
        command line for the moment the command runs: `garm admin` takes it no other way.

        Raises:
            CommandError: the command failed; its output is not repeated (it may echo input).
        """
        result = self._run(
            [
                "runuser",
                "-u",
                SYSTEM_USER,
                "--",
                str(self.paths.garm_binary),
                "admin",
                "password-reset",
                username,
                "--new-password",
                password,
                "--config",
                str(self.paths.config),
            ]
        )
        if result.returncode != 0:
            raise CommandError(
                f"garm admin password-reset failed with exit status {result.returncode}"
            )

    def record_backend(self, backend: str) -> None:
        """Remember which backend GARM now keeps its state in."""
        if self.recorded_backend() != backend:
            _write_atomic(self.paths.backend, backend.encode(), 0o600)

    def has_sqlite_state(self) -> bool:
        """Whether a SQLite database with content exists."""
        path = self.paths.sqlite_db
        return path.is_file() and path.stat().st_size > 0

    def _write_if_changed(self, path: Path, content: bytes, mode: int, *, owned: bool) -> None:
        if (
            path.is_file()
            and path.read_bytes() == content
            and (path.stat().st_mode & 0o777) == mode
        ):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        if owned and path.parent != self.paths.etc:
            path.parent.chmod(0o750)
            self._chown(path.parent)
        _write_atomic(path, content, mode)
        if owned:
            self._chown(path)

    def _remove_stale_providers(self, config: GarmConfig) -> None:
        base = self.paths.provider_dirs
        if not base.is_dir():
            return
        wanted = set(config.provider_names)
        for directory in sorted(base.iterdir()):
            if directory.is_dir() and directory.name not in wanted:
                for file in directory.iterdir():
                    file.unlink()
                directory.rmdir()

    def _fingerprint(
        self, files: Mapping[Path, tuple[bytes, int, bool]], proxy: ProxyConfig
    ) -> str:
        digest = hashlib.sha256()
        for path in sorted(files):
            content, mode, _ = files[path]
            digest.update(f"{path}\0{mode:o}\0".encode())
            digest.update(hashlib.sha256(content).digest())
        digest.update(json.dumps(self._installed_digests(), sort_keys=True).encode())
        digest.update(json.dumps(dataclasses.asdict(proxy), sort_keys=True).encode())
        return digest.hexdigest()

    def _chown(self, path: Path) -> None:
        self._check(["chown", f"{SYSTEM_USER}:{SYSTEM_USER}", str(path)])

    def _check(self, argv: Sequence[str]) -> CommandResult:
        result = self._run(argv)
        if result.returncode != 0:
            # stderr of these commands never carries secrets (no secret is ever an argument).
            raise CommandError(f"{' '.join(argv[:3])} failed: {result.stderr.strip()[:200]}")
        return result


# Versions -----------------------------------------------------------------------------------

# What `git describe` appends to a tag for a build some commits past it.
_DESCRIBE_SUFFIX: Final = re.compile(r"-(?P<ahead>\d+)-g[0-9a-f]+$")
_RELEASE: Final = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-(?P<pre>[0-9A-Za-z.-]+))?")
_UNSTAMPED: Final = "unknown"


def parse_garm_version(output: str) -> str:
    """The bare version in what `garm --version` printed; empty when it printed none.

    Both v0.2.1 (Go `flag`) and HEAD (cobra, with a `{{.Version}}` template) print the stamped
    `git describe` string alone on a line, e.g. "v0.2.1" or "v0.2.1-96-gafda4e76", and
    "v0.0.0-unknown" for an unstamped build. The last word of the first line is taken, so a
    "garm version v0.2.1" (cobra's default template) reads the same.
    """
    lines = output.strip().splitlines()
    words = lines[0].split() if lines else []
    if not words or _RELEASE.match(words[-1]) is None:
        return ""
    return words[-1]


def garm_version_supports_postgresql(version: str) -> bool | None:
    """Whether a GARM of this version has the PostgreSQL backend; None when it cannot tell.

    PostgreSQL came after v0.2.1 (docs/reference/garm-behaviour.md); see
    `garm_built_after_v0_2_1` for how a version string is read.

    Args:
        version: what `Workload.version()` returned.
    """
    return garm_built_after_v0_2_1(version)


def garm_version_has_proxy_section(version: str) -> bool | None:
    """Whether a GARM of this version reads a [proxy] section; None when it cannot tell.

    v0.2.1 has none and reaches a proxy only through its environment; the section came after.

    Args:
        version: what `Workload.version()` returned.
    """
    return garm_built_after_v0_2_1(version)


def garm_built_after_v0_2_1(version: str) -> bool | None:
    """Whether a GARM of this version is newer than the v0.2.1 release; None when unknown.

    A release after v0.2.1 is; v0.2.1, its pre-releases and anything older are not; a
    `git describe` build past v0.2.1 (e.g. "v0.2.1-96-gafda4e76") is taken to be, which holds
    for GARM's main branch but not for the first commits after the tag. An unstamped build
    ("v0.0.0-unknown") or an unreadable string gives None.
    """
    text = version.strip().removesuffix("-dirty")
    ahead = 0
    describe = _DESCRIBE_SUFFIX.search(text)
    if describe is not None:
        ahead = int(describe.group("ahead"))
        text = text[: describe.start()]
    release = _RELEASE.fullmatch(text)
    if release is None or release.group("pre") == _UNSTAMPED:
        return None
    numbers = (int(release.group(1)), int(release.group(2)), int(release.group(3)))
    if numbers != LAST_RELEASE_WITHOUT_POSTGRESQL:
        return numbers > LAST_RELEASE_WITHOUT_POSTGRESQL
    return ahead > 0 and release.group("pre") is None


# Rendering ----------------------------------------------------------------------------------


def render_config(config: GarmConfig, paths: Paths, proxy: Mapping[str, str]) -> str:
    """GARM's config.toml, with `proxy` (see `service_proxy`) where the GARM reads [proxy]."""
    document: dict[str, Any] = {
        "logging": {"log_level": config.log_level, "log_format": "text"},
        "metrics": {"enable": True, "disable_auth": True},
        "jwt_auth": {"secret": config.jwt_secret, "time_to_live": JWT_TIME_TO_LIVE},
        # An IP literal: GARM rejects host names here.
        "apiserver": {"bind": "0.0.0.0", "port": config.port, "use_tls": False},  # noqa: S104
        "database": _database_section(config, paths),
        "provider": [_provider_section(name, paths) for name in config.provider_names],
    }
    if proxy and garm_version_has_proxy_section(config.garm_version) is not False:
        document["proxy"] = {key.lower(): value for key, value in proxy.items()}
    if not document["provider"]:
        del document["provider"]
    return tomli_w.dumps(document)


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
            "credentials": {"clouds": str(paths.provider_clouds(provider.name))},
        }
    )


def render_clouds_yaml(provider: OpenStackProvider) -> str:
    """The clouds.yaml garm-provider-openstack reads (gophercloud clientconfig format).

    Every scalar is a JSON string, which YAML reads as a double-quoted string, so no value
    can break the document.
    """
    auth = {
        "auth_url": provider.auth_url,
        "username": provider.username,
        "password": provider.password,
        "project_name": provider.project_name,
        "user_domain_name": provider.user_domain_name,
        "project_domain_name": provider.project_domain_name,
    }
    lines = ["clouds:", f"  {json.dumps(provider.name)}:", "    auth:"]
    lines += [f"      {key}: {json.dumps(value)}" for key, value in auth.items()]
    if provider.region_name:
        lines.append(f"    region_name: {json.dumps(provider.region_name)}")
    lines.append('    identity_api_version: "3"')
    return "\n".join(lines) + "\n"


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


def render_environment(proxy: Mapping[str, str]) -> str:
    """The service's EnvironmentFile: the model's proxy in both spellings programs read.

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
    """The hardened systemd unit."""
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
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths={paths.data}
PrivateTmp=yes
ProtectHome=yes

[Install]
WantedBy=multi-user.target
"""


# Helpers ------------------------------------------------------------------------------------


def _systemd(verb: str, action: Callable[..., bool], *args: str) -> None:
    """Run one charmlibs-systemd call; its failure becomes a short CommandError.

    SystemdError carries systemctl's whole stdout and stderr: too long for a status and not
    ours to vouch for, so only the command is named; the journal has the details.
    """
    try:
        action(*args)
    except (systemd.SystemdError, OSError):
        command = " ".join((verb, *args))
        raise CommandError(
            f"systemctl {command} failed (see journalctl -u {SERVICE_NAME})"
        ) from None


def _systemd_best_effort(verb: str, action: Callable[..., bool], *args: str) -> None:
    try:
        _systemd(verb, action, *args)
    except CommandError as error:
        logger.warning("%s", error)


def _extract_member(release: Release, content: bytes) -> bytes:
    try:
        with tarfile.open(fileobj=io.BytesIO(content), mode="r:*") as archive:
            for member in archive.getmembers():
                if member.isfile() and Path(member.name).name == release.binary:
                    extracted = archive.extractfile(member)
                    if extracted is not None:
                        return extracted.read()
    except tarfile.TarError:
        raise ResourceError(release.resource, "is not a readable tarball") from None
    raise ResourceError(release.resource, f"tarball has no '{release.binary}' executable")


def _write_atomic(path: Path, content: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(descriptor, content)
    finally:
        os.close(descriptor)
    os.chmod(temporary, mode)  # the umask may have narrowed os.open's mode
    temporary.replace(path)


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
