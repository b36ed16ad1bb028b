"""The debug-ssh relay's publication: what is accepted, what is ignored."""

from __future__ import annotations

import pytest

from relations.debug_ssh import DebugSsh, parse_unit_data

VALID = {
    "host": "tmate.internal",
    "port": "10022",
    "rsa_fingerprint": "SHA256:" + "a" * 43,
    "ed25519_fingerprint": "SHA256:" + "B" * 42 + "/",
}


def test_a_valid_publication_becomes_the_runners_variables():
    """Arrange: a complete publication. Act: parse. Assert: the four TMATE_SERVER_* entries."""
    relay = parse_unit_data(VALID)

    assert relay == DebugSsh(
        "tmate.internal", 10022, VALID["rsa_fingerprint"], VALID["ed25519_fingerprint"]
    )
    assert relay is not None
    assert relay.env_entries()["TMATE_SERVER_PORT"] == "10022"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("host", ""),
        ("host", "evil host"),
        ("host", "a\nTMATE_SERVER_HOST=x"),
        ("port", "0"),
        ("port", "65536"),
        ("port", "22a"),
        ("rsa_fingerprint", "MD5:aa:bb"),
        ("ed25519_fingerprint", "SHA256:short"),
        ("ed25519_fingerprint", "SHA256:" + "a" * 43 + "\nX=1"),
    ],
)
def test_a_malformed_field_makes_the_publication_ignored(key: str, value: str):
    """Arrange: one field missing or malformed (e.g. a newline that would add a variable).

    Act: parse. Assert: None, so nothing reaches the runners.
    """
    assert parse_unit_data({**VALID, key: value}) is None
