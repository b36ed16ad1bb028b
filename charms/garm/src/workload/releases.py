"""Release tarballs: the pinned downloads, fetched and verified, or the attached resources.

A download is trusted only through the sha256 pinned here; an attached resource is the
operator's choice and is taken as it is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import time
from collections.abc import Callable, Mapping
from http import HTTPStatus
from pathlib import Path
from typing import Any, Final

from text_numbers import is_whole_number
from workload.config import ProxyConfig
from workload.host import PROVIDER_BINARY, ResourceError

GARM_RESOURCE: Final = "garm-binary"
PROVIDER_RESOURCE: Final = "garm-provider-openstack"
CONNECT_TIMEOUT_SECONDS: Final = 15.0
# Between two reads, not for the whole body: the deadline below bounds that.
READ_TIMEOUT_SECONDS: Final = 60.0
DOWNLOAD_DEADLINE_SECONDS: Final = 600.0
# GARM's release tarballs are about 20 MiB; the cap stops a wrong or hostile answer filling /var.
MAX_DOWNLOAD_BYTES: Final = 256 * 1024 * 1024
CHUNK_BYTES: Final = 64 * 1024
SYSTEM_CA_BUNDLE: Final = Path("/etc/ssl/certs/ca-certificates.crt")

Fetcher = Callable[[str, ProxyConfig], bytes]


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
# No verified hash of any garm-provider-openstack release tarball is known yet: without its
# resource the charm stays Blocked asking for it. v0.1.2 stays the pin: it is the release the
# tests run (garm-behaviour O1-O5); v0.1.3-v0.1.5 only update dependencies (ADR 0027).
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


def tarball_bytes(
    release: Release, tarball: Path | None, proxy: ProxyConfig, *, arch: str, fetch: Fetcher
) -> bytes:
    """The attached resource's bytes, or the pinned release downloaded and verified.

    Raises:
        ResourceError: nothing attached and the download is impossible, failed or mismatched.
    """
    if tarball is not None and tarball.is_file() and tarball.stat().st_size > 0:
        return tarball.read_bytes()
    expected = release.sha256.get(arch, "")
    if not expected:
        raise ResourceError(
            release.resource,
            f"not attached, and no sha256 is pinned for {release.version} on "
            f"{arch}: attach the release tarball",
        )
    url = release.asset_url(arch)
    try:
        content = fetch(url, proxy)
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


class DownloadError(OSError):
    """A download failed; the message says how, never a URL or a proxy's credentials."""


class Downloader:
    """Downloads one URL with `requests`, bounded in every way a download can go wrong.

    Streamed, through the model's proxy only, TLS verified against the system's CAs, with
    connect and read timeouts, an overall deadline and a size cap.

    The hook's own environment (other proxy variables, .netrc, CA overrides) is ignored: the
    model's proxy settings are the only ones that apply.
    """

    def __init__(
        self,
        *,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
        read_timeout: float = READ_TIMEOUT_SECONDS,
        deadline: float = DOWNLOAD_DEADLINE_SECONDS,
        max_bytes: int = MAX_DOWNLOAD_BYTES,
        ca_bundle: Path = SYSTEM_CA_BUNDLE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._timeouts = (connect_timeout, read_timeout)
        self._deadline = deadline
        self._max_bytes = max_bytes
        self._ca_bundle = ca_bundle
        self._clock = clock

    def __call__(self, url: str, proxy: ProxyConfig) -> bytes:
        """The body at `url`.

        Raises:
            DownloadError: refused, unreachable, not verified, too slow or too large.
        """
        import requests  # noqa: PLC0415 - only a hook that downloads pays for the import

        session = requests.Session()
        session.trust_env = False
        verify: str | bool = str(self._ca_bundle) if self._ca_bundle.is_file() else True
        try:
            with session.get(
                url,
                stream=True,
                timeout=self._timeouts,
                proxies=proxy.requests_proxies(url),
                verify=verify,
                allow_redirects=True,
            ) as response:
                if response.status_code != HTTPStatus.OK:
                    raise DownloadError(f"HTTP {response.status_code}")
                return self._body(response)
        except requests.RequestException as error:
            raise DownloadError(_describe(error)) from None
        finally:
            session.close()

    def _body(self, response: Any) -> bytes:
        declared = str(response.headers.get("Content-Length", ""))
        # A server's header is untrusted: "²".isdigit() is true and int("²") raises.
        if is_whole_number(declared) and (len(declared) > 20 or int(declared) > self._max_bytes):
            raise DownloadError(f"larger than {self._max_bytes} bytes")
        ends = self._clock() + self._deadline
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_content(CHUNK_BYTES):
            size += len(chunk)
            if size > self._max_bytes:
                raise DownloadError(f"larger than {self._max_bytes} bytes")
            if self._clock() > ends:
                raise DownloadError(f"not done within {self._deadline:g}s")
            chunks.append(chunk)
        return b"".join(chunks)


def _describe(error: BaseException) -> str:
    """A short, secret-free reason: requests' messages carry URLs, a proxy's included."""
    import requests  # noqa: PLC0415

    reasons: tuple[tuple[type[BaseException], str], ...] = (
        (requests.exceptions.SSLError, "TLS verification failed"),
        (requests.exceptions.ProxyError, "the proxy refused or failed"),
        (requests.exceptions.ConnectTimeout, "connection timed out"),
        (requests.exceptions.ReadTimeout, "read timed out"),
        (requests.exceptions.ConnectionError, "connection failed"),
        (requests.exceptions.TooManyRedirects, "too many redirects"),
    )
    for kind, reason in reasons:
        if isinstance(error, kind):
            return reason
    return type(error).__name__


fetch_url: Final = Downloader()


def extract_member(release: Release, content: bytes) -> bytes:
    """The release's executable out of its tarball.

    Raises:
        ResourceError: not a tarball, or no member of that name.
    """
    # Deferred: only an install or an upgrade unpacks a release, never a converged hook.
    import tarfile  # noqa: PLC0415

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
