"""The plain values the charm hands the workload: proxy, database, providers, GARM's config.

No ops imports and no behaviour beyond reading these values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


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

    def requests_proxies(self, url: str) -> dict[str, str]:
        """The proxies `requests` should use for `url`: none when NO_PROXY covers its host."""
        from requests.utils import should_bypass_proxies  # noqa: PLC0415 - only callers that fetch

        if self.no_proxy and should_bypass_proxies(url, no_proxy=self.no_proxy):
            return {}
        proxies = {"http": self.http_proxy, "https": self.https_proxy}
        return {scheme: address for scheme, address in proxies.items() if address}


@dataclasses.dataclass(frozen=True)
class PostgresConfig:
    """Where GARM's PostgreSQL database is."""

    hostname: str
    port: int
    username: str
    password: str = dataclasses.field(repr=False)
    database: str
    sslmode: str = "prefer"
    # The provider's CA (PEM) when it serves TLS: GARM verifies the server against it.
    ca_cert: str = ""


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
class TlsFiles:
    """The certificate GARM serves its API with (the `certificates` relation's), all PEM."""

    # The server certificate, then any intermediates: what GARM sends in its handshake.
    certificate_chain: str
    private_key: str = dataclasses.field(repr=False)
    # The CA that signed it: clients of this machine (the scrape, the charm) verify with it.
    ca: str


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
    # None serves plain HTTP; a certificate makes GARM serve HTTPS only, on the same port.
    tls: TlsFiles | None = None

    @property
    def kept_only(self) -> tuple[str, ...]:
        """The kept providers not rendered from `providers` (a configurator's data wins)."""
        rendered = {provider.name for provider in self.providers}
        return tuple(sorted({name for name in self.kept_providers if name not in rendered}))

    @property
    def provider_names(self) -> tuple[str, ...]:
        """Every provider GARM runs with, sorted, so the order never depends on relations."""
        return tuple(sorted({provider.name for provider in self.providers} | {*self.kept_only}))
