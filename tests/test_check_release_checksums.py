"""scripts/check_release_checksums.py: pinned hashes against each release's `.sha256`."""

from __future__ import annotations

import importlib.util
import pathlib
from types import ModuleType

from workload.releases import Release

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "check_release_checksums.py"
PINNED = "11176acb8a725f914b9b947891b4837d374fb616195562cc0ad45a7be8b6c746"
OTHER = "8b91ed21b911f2c77d9065438b1c5e40ebb79b63cf5dc8b7dc326bbe4ac608cc"
RELEASE = Release(
    resource="garm-binary",
    version="v0.2.1",
    url="https://example.invalid/{version}/garm-linux-{arch}.tgz",
    binary="garm",
    sha256={"amd64": PINNED, "arm64": ""},
)


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_release_checksums", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_pin_equal_to_the_published_hash_passes_and_an_unpinned_asset_is_skipped():
    """Arrange: the release publishes `<hex>  <name>` for amd64; arm64 has no pin.

    Act: check. Assert: no problem, and only the amd64 `.sha256` was fetched.
    """
    fetched: list[str] = []

    def fetch(url: str) -> str:
        fetched.append(url)
        return f"{PINNED.upper()}  garm-linux-amd64.tgz\n"

    problems = _script().release_problems([RELEASE], fetch)

    assert problems == []
    assert fetched == ["https://example.invalid/v0.2.1/garm-linux-amd64.tgz.sha256"]


def test_a_pin_that_differs_or_cannot_be_read_is_a_problem():
    """Arrange: one release publishing another hash, then one whose `.sha256` is not found.

    Act: check each. Assert: one problem each, naming the asset (and both hashes).
    """
    script = _script()

    def missing(url: str) -> str:
        raise OSError("HTTP Error 404: Not Found")

    differs = script.release_problems([RELEASE], lambda url: OTHER)
    unreadable = script.release_problems([RELEASE], missing)

    assert differs == [
        f"https://example.invalid/v0.2.1/garm-linux-amd64.tgz: pinned {PINNED}, "
        f"the release publishes {OTHER}"
    ]
    assert len(unreadable) == 1
    assert "garm-linux-amd64.tgz.sha256: cannot read the published hash" in unreadable[0]
