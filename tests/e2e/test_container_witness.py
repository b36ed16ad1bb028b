"""The e2e container's witness notices what a container must never do to the machine.

`HostWitness` is what `booted()` checks after every container: here it watches a temporary
directory standing for `/tmp` and files standing for the root's, and each test does to them
what systemd booted on the machine's own root, or a leaking container, would do. No container
is booted, no root needed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from e2e.container import HostWitness


def witness_of(tmp_path: Path) -> tuple[HostWitness, Path, Path]:
    """A witness of `tmp_path/tmp` (as /tmp), `tmp_path/etc/garm` and `tmp_path/passwd`."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    garm_etc = tmp_path / "etc" / "garm"
    return HostWitness.take(tmp, (str(garm_etc),), (str(passwd),)), garm_etc, passwd


def test_an_untouched_machine_passes_and_the_sentinel_goes(tmp_path: Path):
    """Arrange: a witness. Act: check with nothing changed.

    Assert: no problem; the sentinel is gone.
    """
    witness, _, _ = witness_of(tmp_path)

    problems = witness.check()

    assert problems == []
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_cleaned_tmp_is_named(tmp_path: Path):
    """Arrange: a witness. Act: /tmp emptied, as a boot's tmpfiles --remove does.

    Assert: the check names the emptied directory.
    """
    witness, _, _ = witness_of(tmp_path)
    for entry in (tmp_path / "tmp").iterdir():
        shutil.rmtree(entry)

    problems = witness.check()

    assert problems == [f"{tmp_path / 'tmp'} was cleaned: {witness.sentinel}/kept is gone"]


def test_a_charm_path_or_a_garm_user_on_the_machine_is_named(tmp_path: Path):
    """Arrange: a witness. Act: the charm's directory appears, a garm user is added.

    Assert: the check names both.
    """
    witness, garm_etc, passwd = witness_of(tmp_path)
    garm_etc.mkdir(parents=True)
    with passwd.open("a") as users:
        users.write("garm:x:999:995::/var/lib/garm:/usr/sbin/nologin\n")

    problems = witness.check()

    assert problems == [
        f"{garm_etc} was absent, is directory ",
        f"{passwd} was absent, is garm",
    ]
