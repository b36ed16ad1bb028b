"""A file the charm writes on a full disk or a read-only mount: an error naming it, no crash."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from workload import host
from workload.host import HostWriteError, WorkloadError, ensure_directory, write_atomic


def full_disk(monkeypatch: pytest.MonkeyPatch, code: int = errno.ENOSPC) -> None:
    """Every write(2) the workload makes fails as on a full disk (or with `code`)."""

    def refuse(descriptor: int, data: object) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(host.os, "write", refuse)


def test_a_full_disk_names_the_file_and_the_space_to_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: a file written before; then the disk is full. Act: write_atomic 5000 bytes.

    Assert: HostWriteError (a WorkloadError and an OSError) naming the path and 5 KiB; the old
    content intact, no temporary file left behind.
    """
    target = tmp_path / "etc" / "config.toml"
    write_atomic(target, b"old", 0o600)
    full_disk(monkeypatch)

    with pytest.raises(HostWriteError) as raised:
        write_atomic(target, b"x" * 5000, 0o600)

    assert str(raised.value) == f"disk full writing {target}: free at least 5 KiB there"
    assert isinstance(raised.value, WorkloadError)
    assert isinstance(raised.value, OSError)
    assert raised.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old"
    assert sorted(path.name for path in target.parent.iterdir()) == ["config.toml"]


def test_any_other_write_failure_names_the_file_and_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: a read-only file system. Act: write_atomic. Assert: the path and the reason."""
    full_disk(monkeypatch, errno.EROFS)
    target = tmp_path / "lease"

    with pytest.raises(HostWriteError, match=f"cannot write {target}: Read-only file system"):
        write_atomic(target, b"1\n", 0o600)


def test_a_directory_that_cannot_be_made_is_a_host_write_error(tmp_path: Path):
    """Arrange: a file where a parent directory must go. Act: ensure_directory.

    Assert: HostWriteError naming the directory (never a bare OSError reaching the hook).
    """
    (tmp_path / "var").write_text("")

    with pytest.raises(HostWriteError, match="cannot write"):
        ensure_directory(tmp_path / "var" / "lib" / "garm", 0o750)


@pytest.mark.parametrize(
    ("count", "text"),
    [(0, "1 B"), (11, "11 B"), (1024, "1 KiB"), (1025, "2 KiB"), (3 * 1024**2, "3 MiB")],
)
def test_sizes_are_rounded_up(count: int, text: str):
    """Arrange: a byte count. Act: size_text. Assert: what a person reads, never less."""
    assert host.size_text(count) == text
