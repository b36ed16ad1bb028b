"""The `debug-ssh` relation: a tmate-style SSH relay the runners open a debug session through.

A tmate-ssh-server unit publishes in its unit databag `host`, `port`, `rsa_fingerprint` and
`ed25519_fingerprint`. The charm passes the first valid one (units by name) to every scale
set's runner template as `TMATE_SERVER_*` variables in the runner's `.env`, which a debug step
in a job (a tmate action) reads. When the relation goes, the variables go with the next pass.
Everything in the databag is untrusted: an invalid publication is ignored with a warning naming
the field, and the runners keep the relay they had. The last valid relay is kept in the peer
relation's application data, where a new leader finds it. A host that is a loopback,
link-local, unspecified or cloud-metadata address (or name) is invalid: every runner would send
its debug session, and the job's secrets on screen, to a service on its own machine or to the
cloud's instance metadata. The checks are literal: the charm resolves no name.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import logging
import re
from collections.abc import Iterable
from typing import Final, cast

import ops

from text_numbers import parse_whole_number

logger = logging.getLogger(__name__)

RELATION: Final = "debug-ssh"

_HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.:-]{0,251}[A-Za-z0-9])?")
_FINGERPRINT_RE = re.compile(r"SHA256:[A-Za-z0-9+/]{43}=?")
_FIELDS: Final = ("host", "port", "rsa_fingerprint", "ed25519_fingerprint")
MAX_PORT: Final = 65535
# Names of this machine or of a cloud's instance metadata service, as the runner would resolve
# them; a name below `localhost` is loopback too (RFC 6761).
_LOCAL_NAMES: Final = frozenset(
    {
        "localhost",
        "metadata",
        "metadata.google.internal",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
# Metadata services at addresses no other rule covers (AWS over IPv6, Alibaba Cloud).
_METADATA_ADDRESSES: Final = frozenset(
    {ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")}
)
# The shorthand IPv4 forms inet_aton reads (127.1, 2130706433, 0x7f.0.0.1): not names.
_NUMERIC_HOST_RE = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}\.?", re.I)


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
        data["host"],
        parse_whole_number(data["port"], minimum=1, maximum=MAX_PORT),
        data["rsa_fingerprint"],
        data["ed25519_fingerprint"],
    )


def unit_data_problem(data: ops.RelationDataContent | dict[str, str]) -> str | None:
    """What is wrong with one unit's publication, naming the field; None when it is valid."""
    port = data.get("port", "")
    host = data.get("host", "")
    if _HOST_RE.fullmatch(host) and not _reachable_elsewhere(host):
        return "host is a loopback, link-local or cloud-metadata address; refused"
    checks = {
        "host": bool(_HOST_RE.fullmatch(host)),
        "port": _is_port(port),
        "rsa_fingerprint": bool(_FINGERPRINT_RE.fullmatch(data.get("rsa_fingerprint", ""))),
        "ed25519_fingerprint": bool(
            _FINGERPRINT_RE.fullmatch(data.get("ed25519_fingerprint", ""))
        ),
    }
    bad = [field for field, valid in checks.items() if not valid]
    if not bad:
        return None
    return f"{', '.join(bad)} missing or malformed"


def _is_port(text: str) -> bool:
    try:
        parse_whole_number(text, minimum=1, maximum=MAX_PORT)
    except ValueError:
        return False
    return True


def _reachable_elsewhere(host: str) -> bool:
    """Whether `host` may name a relay off the runner (no loopback, link-local or metadata)."""
    name = host.lower().rstrip(".")
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return False
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return not _NUMERIC_HOST_RE.fullmatch(name)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not (
        address.is_loopback
        or address.is_link_local
        or address.is_unspecified
        or address.is_multicast
        or address in _METADATA_ADDRESSES
    )


def kept_relay(kept_text: str) -> DebugSsh | None:
    """The relay the leader kept in the peer application data (`kept_value`); None for none.

    Checked again as it is read: the value a previous charm version, or an operator, left there
    is no more trusted than a unit's publication.
    """
    try:
        kept = json.loads(kept_text or "{}")
    except ValueError:
        return None
    if not isinstance(kept, dict) or not kept:
        return None
    fields = cast("dict[str, object]", kept)
    return parse_unit_data({key: str(value) for key, value in fields.items()})


def kept_value(relay: DebugSsh | None) -> str:
    """`relay` (or "no relay": `{}`) as the peer application data keeps it for a later leader."""
    kept = {**dataclasses.asdict(relay), "port": str(relay.port)} if relay is not None else {}
    return json.dumps(kept, sort_keys=True)
