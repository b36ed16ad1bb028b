"""Charm libraries shared between the charms are identical copies of their owner's file."""

import pathlib

import pytest

CHARMS = pathlib.Path(__file__).resolve().parents[1] / "charms"
LIB = pathlib.Path("lib/charms/garm_configurator/v0/garm_configurator.py")
# (owner, copies): the owner's file is the source of truth.
SHARED_LIBS = [(CHARMS / "garm-configurator" / LIB, [CHARMS / "garm" / LIB])]


@pytest.mark.parametrize(
    ("owner", "copy"),
    [(owner, copy) for owner, copies in SHARED_LIBS for copy in copies],
    ids=lambda path: str(path.relative_to(CHARMS)),
)
def test_lib_copy_matches_its_owner(owner: pathlib.Path, copy: pathlib.Path):
    """Arrange: a shared lib and its copy. Act: read both. Assert: byte-for-byte identical.

    Fix a failure by copying the owner's file over the copy, never the other way round.
    """
    assert copy.read_bytes() == owner.read_bytes(), f"cp {owner} {copy}"
