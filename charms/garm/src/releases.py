"""Release tarballs: the pinned downloads, fetched and verified, or the attached resources.

A download is trusted only through the sha256 pinned here; an attached resource is the
operator's choice and is taken as it is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from workload_config import ProxyConfig
from workload_host import PROVIDER_BINARY, ResourceError

GARM_RESOURCE: Final = "garm-binary"
PROVIDER_RESOURCE: Final = "garm-provider-openstack"
DOWNLOAD_TIMEOUT_SECONDS: Final = 120

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


def fetch_url(url: str, proxy: ProxyConfig) -> bytes:
    """Download a URL through the model's proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxy.as_urllib_proxies()))
    with opener.open(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
        return bytes(response.read())


def extract_member(release: Release, content: bytes) -> bytes:
    """The release's executable out of its tarball.

    Raises:
        ResourceError: not a tarball, or no member of that name.
    """
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
