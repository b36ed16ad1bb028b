"""The `debug-ssh` relation: a tmate-style SSH relay the runners open a debug session through.

A tmate-ssh-server unit publishes in its unit databag `host`, `port`, `rsa_fingerprint` and
`ed25519_fingerprint`. The charm passes the first valid one (units by name) to every scale
set's runner template as `TMATE_SERVER_*` variables in the runner's `.env`, which a debug step
in a job (a tmate action) reads. When the relation goes, the variables go with the next pass.
Everything in the databag is untrusted: an invalid publication is ignored with a warning naming
the field, and the runners keep the relay they had (the charm remembers the last valid one).
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
_FIELDS: Final = ("host", "port", "rsa_fingerprint", "ed25519_fingerprint")


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


def read_debug_ssh(
    relations: Iterable[ops.Relation], last: DebugSsh | None = None
) -> DebugSsh | None:
    """The relay of the first unit that published a valid one, or None.

    While units publish only invalid relays, `last` (the relay the runners were given before)
    stays: a bad publication must not rewrite every runner template in GARM.
    """
    invalid = False
    for relation in relations:
        if not relation.active:
            continue  # relation-broken: it is going away, and so are its runners' variables
        for unit in sorted(relation.units, key=lambda unit: unit.name):
            data = relation.data[unit]
            problem = unit_data_problem(data)
            if problem is None:
                return parse_unit_data(data)
            if any(key in data for key in _FIELDS):
                invalid = True
                logger.warning(
                    "debug-ssh: relation %s:%d, unit %s: %s; the runners keep the relay they had",
                    relation.name,
                    relation.id,
                    unit.name,
                    problem,
                )
    return last if invalid else None


def parse_unit_data(data: ops.RelationDataContent | dict[str, str]) -> DebugSsh | None:
    """Validate one unit's publication; None when anything is missing or malformed."""
    if unit_data_problem(data) is not None:
        return None
    return DebugSsh(
        data["host"], int(data["port"]), data["rsa_fingerprint"], data["ed25519_fingerprint"]
    )


def unit_data_problem(data: ops.RelationDataContent | dict[str, str]) -> str | None:
    """What is wrong with one unit's publication, naming the field; None when it is valid."""
    port = data.get("port", "")
    checks = {
        "host": bool(_HOST_RE.fullmatch(data.get("host", ""))),
        "port": port.isdigit() and 1 <= int(port) <= 65535,
        "rsa_fingerprint": bool(_FINGERPRINT_RE.fullmatch(data.get("rsa_fingerprint", ""))),
        "ed25519_fingerprint": bool(
            _FINGERPRINT_RE.fullmatch(data.get("ed25519_fingerprint", ""))
        ),
    }
    bad = [field for field, valid in checks.items() if not valid]
    if not bad:
        return None
    return f"{', '.join(bad)} missing or malformed"
