"""The `debug-ssh` relation: a tmate-style SSH relay the runners open a debug session through.

A tmate-ssh-server unit publishes in its unit databag `host`, `port`, `rsa_fingerprint` and
`ed25519_fingerprint`. The charm passes the first valid one (units by name) to every scale
set's runner template as `TMATE_SERVER_*` variables in the runner's `.env`, which a debug step
in a job (a tmate action) reads. When the relation goes, the variables go with the next pass.
Everything in the databag is untrusted: an invalid publication is ignored with a warning.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable
from typing import Final

import ops

logger = logging.getLogger(__name__)

RELATION: Final = "debug-ssh"

_HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.:-]{0,251}[A-Za-z0-9])?")
_FINGERPRINT_RE = re.compile(r"SHA256:[A-Za-z0-9+/]{43}=?")


@dataclasses.dataclass(frozen=True)
class DebugSsh:
    """Where runners reach the SSH relay, and how they recognise it.

    Attributes:
        host: the relay's host name or IP address.
        port: its TCP port.
        rsa_fingerprint: its RSA host key fingerprint (`SHA256:...`).
        ed25519_fingerprint: its Ed25519 host key fingerprint (`SHA256:...`).
    """

    host: str
    port: int
    rsa_fingerprint: str
    ed25519_fingerprint: str

    def env_entries(self) -> dict[str, str]:
        """The runner `.env` entries a tmate debug step reads."""
        return {
            "TMATE_SERVER_HOST": self.host,
            "TMATE_SERVER_PORT": str(self.port),
            "TMATE_SERVER_RSA_FINGERPRINT": self.rsa_fingerprint,
            "TMATE_SERVER_ED25519_FINGERPRINT": self.ed25519_fingerprint,
        }


def read_debug_ssh(relations: Iterable[ops.Relation]) -> DebugSsh | None:
    """The relay of the first unit that published a valid one, or None."""
    for relation in relations:
        if not relation.active:
            continue  # relation-broken: it is going away, and so are its runners' variables
        for unit in sorted(relation.units, key=lambda unit: unit.name):
            found = parse_unit_data(relation.data[unit])
            if found is not None:
                return found
            logger.warning("debug-ssh: %s published no valid relay; ignored", unit.name)
    return None


def parse_unit_data(data: ops.RelationDataContent | dict[str, str]) -> DebugSsh | None:
    """Validate one unit's publication; None when anything is missing or malformed."""
    host = data.get("host", "")
    port = data.get("port", "")
    rsa = data.get("rsa_fingerprint", "")
    ed25519 = data.get("ed25519_fingerprint", "")
    valid = (
        _HOST_RE.fullmatch(host)
        and port.isdigit()
        and 1 <= int(port) <= 65535
        and _FINGERPRINT_RE.fullmatch(rsa)
        and _FINGERPRINT_RE.fullmatch(ed25519)
    )
    if not valid:
        return None
    return DebugSsh(host, int(port), rsa, ed25519)
