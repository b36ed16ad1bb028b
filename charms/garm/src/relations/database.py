"""The `database` relation (postgresql_client) through dpcharmlibs-interfaces.

The library writes the request and resolves the credentials from the provider's Juju secrets;
this module only turns its answer into a `workload.PostgresConfig`: the endpoint validated
(host name, IPv4, or IPv6 in brackets; port 1-65535) and `sslmode` from the provider's `tls` and
`tls-ca` (`verify-full` with the CA, `require` with TLS alone, `prefer` without).

The library (pydantic models) is imported only when a `database` relation exists: every hook of
a charm on SQLite would pay tens of milliseconds for it, and all its handlers (relation-created
and -changed, secret-changed and -remove) act only on a relation of this endpoint.
"""

from __future__ import annotations

import dataclasses
import enum
import ipaddress
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import ops

from text_numbers import parse_whole_number
from workload.config import PostgresConfig

if TYPE_CHECKING:
    from dpcharmlibs.interfaces import ResourceProviderModel, ResourceRequirerEventHandler

logger = logging.getLogger(__name__)

RELATION_NAME: Final = "database"
DATABASE_NAME: Final = "garm"
DEFAULT_PORT: Final = 5432
MAX_PORT: Final = 65535
MAX_HOST_LENGTH: Final = 253
# DNS labels (RFC 1123), dot-separated; IPv4 literals match too.
_HOST_NAME: Final = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)

# One or more PEM certificates (a chain), nothing else.
_PEM_CERTIFICATE: Final = re.compile(
    r"(?:-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+\n-----END CERTIFICATE-----\s*)+"
)


class InvalidDatabaseError(ValueError):
    """The provider's data cannot be used; the message is safe for a status."""


class DatabaseStatus(enum.Enum):
    """Where the database relation stands."""

    ABSENT = "absent"
    PENDING = "pending"
    READY = "ready"
    INVALID = "invalid"


@dataclasses.dataclass(frozen=True)
class DatabaseState:
    """The relation's status and, when ready, where the database is."""

    status: DatabaseStatus
    postgres: PostgresConfig | None = None
    problem: str = ""


class Database(ops.Object):
    """Requests a `garm` database and reads back its endpoint and credentials."""

    def __init__(self, charm: ops.CharmBase, relation_name: str = RELATION_NAME) -> None:
        super().__init__(charm, relation_name)
        self._relation_name = relation_name
        # Without a relation the library's handlers have nothing to act on; with one, they are
        # registered here, at charm init, as ops needs for every event they observe.
        self.requirer: ResourceRequirerEventHandler[ResourceProviderModel] | None = (
            _requirer(charm, relation_name) if self.model.relations[relation_name] else None
        )

    def observe(self, handler: Callable[[Any], None]) -> None:
        """Send the library's `resource_created` and `endpoints_changed` events to `handler`.

        Those events come from the library's relation-changed handler, so they only exist while
        the relation does; without it there is nothing to observe.
        """
        if self.requirer is not None:
            self.framework.observe(self.requirer.on.resource_created, handler)
            self.framework.observe(self.requirer.on.endpoints_changed, handler)

    def state(self) -> DatabaseState:
        """What the relation provides now."""
        relation = self.model.get_relation(self._relation_name)
        if relation is None or self.requirer is None:
            return DatabaseState(DatabaseStatus.ABSENT)
        # Deferred like the library itself, which loads pydantic anyway: without the relation a
        # hook never pays for it (docs/reference/performance.md).
        from pydantic import ValidationError  # noqa: PLC0415

        try:
            contract = self.requirer.interface.build_model(relation.id, component=relation.app)
        except ValidationError as error:
            # Published, but not in the shape of the contract: waiting would never end.
            return DatabaseState(DatabaseStatus.INVALID, problem=_described(error))
        except (ValueError, ops.ModelError) as error:
            logger.warning("database relation data is not usable yet: %s", type(error).__name__)
            return DatabaseState(DatabaseStatus.PENDING)
        for response in contract.requests:
            try:
                postgres = _postgres_config(response)
            except InvalidDatabaseError as error:
                return DatabaseState(DatabaseStatus.INVALID, problem=str(error))
            if postgres is not None:
                return DatabaseState(DatabaseStatus.READY, postgres)
        return DatabaseState(DatabaseStatus.PENDING)


def _requirer(
    charm: ops.CharmBase, relation_name: str
) -> ResourceRequirerEventHandler[ResourceProviderModel]:
    from dpcharmlibs.interfaces import (  # noqa: PLC0415 - only hooks with the relation pay
        RequirerCommonModel,
        ResourceProviderModel,
        ResourceRequirerEventHandler,
    )

    class Requirer(ResourceRequirerEventHandler[ResourceProviderModel]):
        """The library's requirer, whose handlers log a malformed answer instead of raising.

        Its handlers validate the provider's databag and raise on anything malformed, which
        would fail every hook of the relation; `Database.state` reports it as a status instead.
        """

        def _on_relation_changed_event(self, event: ops.RelationChangedEvent) -> None:
            try:
                super()._on_relation_changed_event(event)
            except ValueError as error:
                logger.warning("database relation: %s; not acted on", _described(error))

        def _on_secret_changed_event(self, event: ops.SecretChangedEvent) -> None:
            try:
                super()._on_secret_changed_event(event)
            except ValueError as error:
                logger.warning("database relation: %s; not acted on", _described(error))

    return Requirer(
        charm,
        relation_name,
        [RequirerCommonModel(resource=DATABASE_NAME)],
        response_model=ResourceProviderModel,
    )


def _described(error: ValueError) -> str:
    """What is wrong, by field and never by value (a secret may be among them)."""
    from pydantic import ValidationError  # noqa: PLC0415 - only with the relation, as above

    if isinstance(error, ValidationError):
        fields = [".".join(str(part) for part in item["loc"]) for item in error.errors()]
        return f"the provider's {', '.join(fields[:3]) or 'data'} is malformed"
    return "the provider's answer matches no request of garm"


def _postgres_config(response: ResourceProviderModel) -> PostgresConfig | None:
    """The database GARM should use; None until the provider shared everything.

    Raises:
        InvalidDatabaseError: the endpoint is not a host and port GARM can use.
    """
    if response.resource != DATABASE_NAME:
        return None
    username = response.username
    password = response.password
    endpoints = response.endpoints
    if not (username and password and endpoints):
        return None
    host, port = parse_endpoint(endpoints.split(",")[0])
    ca_cert = str(response.tls_ca or "").strip() if _is_true(response.tls) else ""
    if ca_cert and not _PEM_CERTIFICATE.fullmatch(ca_cert):
        # GARM would only fail to connect, long after this hook, with sslmode verify-full.
        raise InvalidDatabaseError("the provider's tls-ca is not a PEM certificate")
    return PostgresConfig(
        hostname=host,
        port=port,
        username=str(username),
        password=str(password),
        database=DATABASE_NAME,
        sslmode=_sslmode(tls=_is_true(response.tls), ca_cert=ca_cert),
        ca_cert=ca_cert,
    )


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    """A `host[:port]` endpoint as host and port; an IPv6 address must be in brackets.

    Raises:
        InvalidDatabaseError: not a host name or address, or a port outside 1-65535; the
            message never echoes the value.
    """
    text = endpoint.strip()
    if text.startswith("["):
        address, closed, rest = text[1:].partition("]")
        if not closed or not _is_ipv6(address) or (rest and not rest.startswith(":")):
            raise InvalidDatabaseError("the endpoint's IPv6 address is malformed")
        return address, _port(rest[1:]) if rest else DEFAULT_PORT
    if text.count(":") > 1:
        raise InvalidDatabaseError("the endpoint's IPv6 address must be in brackets")
    host, _, port = text.partition(":")
    if not _HOST_NAME.fullmatch(host) or len(host) > MAX_HOST_LENGTH:
        raise InvalidDatabaseError("the endpoint's host is not a host name or IPv4 address")
    return host, _port(port) if ":" in text else DEFAULT_PORT


def _port(text: str) -> int:
    try:
        return parse_whole_number(text, minimum=1, maximum=MAX_PORT)
    except ValueError:
        raise InvalidDatabaseError("the endpoint's port is not 1-65535") from None


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _is_true(value: object) -> bool:
    return value is True or str(value).strip().lower() == "true"


def _sslmode(*, tls: bool, ca_cert: str) -> str:
    """`verify-full` with the provider's CA, `require` with TLS alone, else `prefer`."""
    if tls and ca_cert:
        return "verify-full"
    return "require" if tls else "prefer"
