"""The `database` relation (postgresql_client) through dpcharmlibs-interfaces.

The library writes the request and resolves the credentials from the provider's Juju secrets;
this module only turns its answer into a `workload.PostgresConfig`.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from typing import Final

import ops
from dpcharmlibs.interfaces import (
    RequirerCommonModel,
    ResourceProviderModel,
    ResourceRequirerEventHandler,
)

from workload import PostgresConfig

logger = logging.getLogger(__name__)

RELATION_NAME: Final = "database"
DATABASE_NAME: Final = "garm"
DEFAULT_PORT: Final = 5432


class DatabaseStatus(enum.Enum):
    """Where the database relation stands."""

    ABSENT = "absent"
    PENDING = "pending"
    READY = "ready"


@dataclasses.dataclass(frozen=True)
class DatabaseState:
    """The relation's status and, when ready, where the database is."""

    status: DatabaseStatus
    postgres: PostgresConfig | None = None


class Database(ops.Object):
    """Requests a `garm` database and reads back its endpoint and credentials."""

    def __init__(self, charm: ops.CharmBase, relation_name: str = RELATION_NAME) -> None:
        super().__init__(charm, relation_name)
        self._relation_name = relation_name
        self.requirer = ResourceRequirerEventHandler(
            charm,
            relation_name,
            [RequirerCommonModel(resource=DATABASE_NAME)],
            response_model=ResourceProviderModel,
        )

    def state(self) -> DatabaseState:
        """What the relation provides now."""
        relation = self.model.get_relation(self._relation_name)
        if relation is None:
            return DatabaseState(DatabaseStatus.ABSENT)
        try:
            contract = self.requirer.interface.build_model(relation.id, component=relation.app)
        except (ValueError, ops.ModelError) as error:
            logger.warning("database relation data is not usable yet: %s", type(error).__name__)
            return DatabaseState(DatabaseStatus.PENDING)
        for response in contract.requests:
            postgres = _postgres_config(response)
            if postgres is not None:
                return DatabaseState(DatabaseStatus.READY, postgres)
        return DatabaseState(DatabaseStatus.PENDING)


def _postgres_config(response: ResourceProviderModel) -> PostgresConfig | None:
    if response.resource != DATABASE_NAME:
        return None
    username = response.username
    password = response.password
    endpoints = response.endpoints
    if not (username and password and endpoints):
        return None
    host, _, port = endpoints.split(",")[0].strip().rpartition(":")
    if not host:
        host, port = port, ""
    return PostgresConfig(
        hostname=host.strip("[]"),
        port=int(port) if port.isdigit() else DEFAULT_PORT,
        username=str(username),
        password=str(password),
        database=DATABASE_NAME,
        sslmode="prefer",
    )
