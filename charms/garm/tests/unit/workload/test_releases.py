"""Release downloads against local HTTP(S) servers: proxy, TLS, timeouts, deadline, size cap.

And installing once: a binary installed from the pinned tarball is never downloaded again.
"""

from __future__ import annotations

import hashlib
import io
import socket
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from doubles.tls_publication import untrusted_server_context
from doubles.workload_double import this_users_ids
from workload import install
from workload.config import ProxyConfig
from workload.host import CommandResult, ResourceError
from workload.machine import Workload
from workload.releases import Downloader, DownloadError, Release

BODY = b"tarball bytes " * 100
NO_PROXY = ProxyConfig()


def test_download_returns_the_body(httpserver: HTTPServer):
    """Arrange: a server with the asset. Act: download. Assert: the exact body."""
    httpserver.expect_request("/garm.tgz").respond_with_data(BODY)

    assert Downloader()(httpserver.url_for("/garm.tgz"), NO_PROXY) == BODY


def test_download_goes_through_the_models_proxy_only(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: the model's proxy is the local server; the hook's own HTTP_PROXY points nowhere.

    Act: download from a host that does not resolve.
    Assert: the request reached the model's proxy, for that host; the hook's proxy is ignored.
    """
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    seen: list[str] = []

    def proxy(request: Request) -> Response:
        seen.append(request.host)
        return Response(BODY)

    httpserver.expect_request("/asset.tgz").respond_with_handler(proxy)

    body = Downloader()(
        "http://releases.invalid/asset.tgz", ProxyConfig(http_proxy=httpserver.url_for("/"))
    )

    assert body == BODY
    assert seen == ["releases.invalid"]


def test_no_proxy_host_is_fetched_directly(httpserver: HTTPServer):
    """Arrange: the model's proxy points nowhere, NO_PROXY covers the server. Act: download.

    Assert: fetched straight from the server.
    """
    httpserver.expect_request("/garm.tgz").respond_with_data(BODY)
    proxy = ProxyConfig(http_proxy="http://127.0.0.1:9", no_proxy="localhost,127.0.0.1")

    assert Downloader()(httpserver.url_for("/garm.tgz"), proxy) == BODY


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[HTTPServer]:
    """An HTTPS server whose certificate no CA bundle trusts."""
    context = untrusted_server_context(tmp_path)
    server = HTTPServer(host="localhost", ssl_context=context)
    server.start()
    yield server
    server.clear()
    server.stop()


def test_untrusted_certificate_is_refused(https_server: HTTPServer):
    """Arrange: an HTTPS server whose certificate no CA vouches for. Act: download.

    Assert: DownloadError saying TLS verification failed; nothing downloaded.
    """
    https_server.expect_request("/garm.tgz").respond_with_data(BODY)

    with pytest.raises(DownloadError, match="TLS verification failed"):
        Downloader()(https_server.url_for("/garm.tgz"), NO_PROXY)


def test_connect_timeout():
    """Arrange: a listening socket whose accept queue is full, so new handshakes go unanswered.

    Act: download with a 0.3 s connect timeout. Assert: DownloadError at the timeout, no hang.
    """
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        fillers = _fill_accept_queue(port)
        started = time.monotonic()

        with pytest.raises(DownloadError, match="connection timed out"):
            Downloader(connect_timeout=0.3)(f"http://127.0.0.1:{port}/garm.tgz", NO_PROXY)

        for filler in fillers:
            filler.close()
    assert time.monotonic() - started < 5


def _fill_accept_queue(port: int) -> list[socket.socket]:
    """Connect until a handshake goes unanswered: the kernel's accept queue is then full."""
    fillers: list[socket.socket] = []
    for _ in range(8):
        filler = socket.socket()
        filler.settimeout(0.3)
        fillers.append(filler)
        try:
            filler.connect(("127.0.0.1", port))
        except TimeoutError:
            return fillers
    pytest.skip("the kernel kept accepting handshakes; no connect timeout to provoke")


def test_read_timeout(httpserver: HTTPServer):
    """Arrange: a server that answers after 2 s. Act: download with a 0.3 s read timeout.

    Assert: DownloadError saying the read timed out.
    """

    def slow(_: Request) -> Response:
        time.sleep(2)
        return Response(BODY)

    httpserver.expect_request("/garm.tgz").respond_with_handler(slow)

    with pytest.raises(DownloadError, match="read timed out"):
        Downloader(read_timeout=0.3)(httpserver.url_for("/garm.tgz"), NO_PROXY)


def test_overall_deadline(httpserver: HTTPServer):
    """Arrange: a server trickling chunks every 0.2 s (each read is quick enough).

    Act: download with a 0.5 s deadline. Assert: DownloadError naming the deadline.
    """

    def trickle() -> Iterator[bytes]:
        for _ in range(20):
            time.sleep(0.2)
            yield b"x" * 1024

    httpserver.expect_request("/garm.tgz").respond_with_handler(
        lambda _: Response(trickle(), direct_passthrough=True)
    )

    with pytest.raises(DownloadError, match=r"not done within 0\.5s"):
        Downloader(deadline=0.5, read_timeout=5)(httpserver.url_for("/garm.tgz"), NO_PROXY)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_size_cap(httpserver: HTTPServer, declared: bool):
    """Arrange: a 2 KiB answer, with or without Content-Length. Act: download, cap 1 KiB.

    Assert: DownloadError naming the cap.
    """
    body = b"x" * 2048
    if declared:
        httpserver.expect_request("/garm.tgz").respond_with_data(body)
    else:
        httpserver.expect_request("/garm.tgz").respond_with_handler(
            lambda _: Response(iter([body[:1024], body[1024:]]), direct_passthrough=True)
        )

    with pytest.raises(DownloadError, match="larger than 1024 bytes"):
        Downloader(max_bytes=1024)(httpserver.url_for("/garm.tgz"), NO_PROXY)


def test_http_error_status(httpserver: HTTPServer):
    """Arrange: the asset is missing (404). Act: download. Assert: DownloadError with the code."""
    httpserver.expect_request("/garm.tgz").respond_with_data("no", status=404)

    with pytest.raises(DownloadError, match="HTTP 404"):
        Downloader()(httpserver.url_for("/garm.tgz"), NO_PROXY)


def test_failure_text_never_holds_the_proxy_credentials():
    """Arrange: a proxy URL with a password that refuses connections. Act: install.

    Assert: ResourceError without the password or the URL.
    """
    proxy = ProxyConfig(https_proxy="http://user:Pr0xy-Secret@127.0.0.1:9")

    with pytest.raises(DownloadError) as caught:
        Downloader(connect_timeout=1)("https://github.com/x/garm.tgz", proxy)

    assert "Pr0xy-Secret" not in str(caught.value)
    assert "127.0.0.1" not in str(caught.value)


# Install once -----------------------------------------------------------------------------


def _tarball(member: str, content: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo(member)
        info.size = len(content)
        archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _runner(argv: object, *, timeout: float = 0) -> CommandResult:
    return CommandResult(0)


class CountingFetcher:
    """Serves the pinned tarballs, or fails like an offline machine; counts every download."""

    def __init__(self, tarballs: dict[str, bytes]) -> None:
        self.tarballs = tarballs
        self.offline = False
        self.urls: list[str] = []

    def __call__(self, url: str, proxy: ProxyConfig) -> bytes:
        """Record the URL; answer or fail."""
        self.urls.append(url)
        if self.offline:
            raise DownloadError("connection failed")
        return next(body for name, body in self.tarballs.items() if url.endswith(name))


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> CountingFetcher:
    """Both releases pinned to small tarballs a fetcher serves."""
    tarballs: dict[str, bytes] = {}
    for name in ("GARM_RELEASE", "PROVIDER_RELEASE"):
        release: Release = getattr(install, name)
        body = _tarball(release.binary, f"{release.binary} v1".encode())
        tarballs[Path(release.asset_url("amd64")).name] = body
        digest = hashlib.sha256(body).hexdigest()
        monkeypatch.setattr(
            install,
            name,
            Release(
                release.resource, release.version, release.url, release.binary, {"amd64": digest}
            ),
        )
    return CountingFetcher(tarballs)


def test_pinned_download_happens_once_and_offline_keeps_working(
    tmp_path: Path, pinned: CountingFetcher
):
    """Arrange: GARM installed from the pinned downloads; then the machine goes offline.

    Act: install again (every hook does). Assert: no second download, no error, binaries kept.
    """
    work = Workload(tmp_path, runner=_runner, fetcher=pinned, arch="amd64", ids=this_users_ids)
    work.install(None, None, NO_PROXY)
    downloads = len(pinned.urls)
    pinned.offline = True

    work.install(None, None, NO_PROXY)

    assert downloads == 2
    assert len(pinned.urls) == 2
    assert work.is_installed()


def test_a_changed_pin_downloads_again(
    tmp_path: Path, pinned: CountingFetcher, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: installed from the pinned download; the charm is upgraded with a new pin.

    Act: install. Assert: the new tarball is downloaded and installed.
    """
    work = Workload(tmp_path, runner=_runner, fetcher=pinned, arch="amd64", ids=this_users_ids)
    work.install(None, None, NO_PROXY)
    release: Release = install.GARM_RELEASE
    newer = _tarball("garm", b"garm v2")
    pinned.tarballs[Path(release.asset_url("amd64")).name] = newer
    monkeypatch.setattr(
        install,
        "GARM_RELEASE",
        Release(
            release.resource,
            release.version,
            release.url,
            release.binary,
            {"amd64": hashlib.sha256(newer).hexdigest()},
        ),
    )

    work.install(None, None, NO_PROXY)

    assert len(pinned.urls) == 3
    assert work.paths.garm_binary.read_bytes() == b"garm v2"


def test_a_changed_resource_is_installed_without_download(tmp_path: Path, pinned: CountingFetcher):
    """Arrange: installed from the pinned downloads. Act: install with a garm-binary attached.

    Assert: the attached binary is installed; nothing is downloaded for it.
    """
    work = Workload(tmp_path, runner=_runner, fetcher=pinned, arch="amd64", ids=this_users_ids)
    work.install(None, None, NO_PROXY)
    attached = tmp_path / "garm.tgz"
    attached.write_bytes(_tarball("garm", b"garm from the resource"))
    pinned.offline = True

    work.install(attached, None, NO_PROXY)

    assert len(pinned.urls) == 2
    assert work.paths.garm_binary.read_bytes() == b"garm from the resource"


def test_offline_before_the_first_install_names_the_resource(
    tmp_path: Path, pinned: CountingFetcher
):
    """Arrange: a machine that never installed GARM and cannot download. Act: install.

    Assert: ResourceError naming the resource to attach.
    """
    pinned.offline = True
    work = Workload(tmp_path, runner=_runner, fetcher=pinned, arch="amd64", ids=this_users_ids)

    with pytest.raises(ResourceError, match=r"download of v0\.2\.1 failed .*attach it") as caught:
        work.install(None, None, NO_PROXY)

    assert caught.value.resource == "garm-binary"
