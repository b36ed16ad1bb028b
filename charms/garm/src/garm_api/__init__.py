"""The only way into GARM's REST API: typed calls, normalised answers, one error taxonomy.

`client` (`GarmClient`) makes the calls through `transport` (`GarmTransport`, the one exchange
with GARM for every call); `models` reads GARM's answers into frozen domain types that normalise
its wire format; `errors` is everything raised about GARM. Only this package imports the
generated `garm_client`, and only inside calls, so importing it stays cheap in every hook
(docs/adr/0001-garm-api-boundary.md).
"""

from garm_api.client import GarmClient
from garm_api.errors import (
    GarmApiError,
    GarmBadRequest,
    GarmConflict,
    GarmError,
    GarmNotFound,
    GarmNotInitialised,
    GarmNotReady,
    GarmServerError,
    GarmUnauthorized,
    GarmUnreachable,
    GarmUrlsRequired,
    InvalidRequest,
    WireFormatError,
)
from garm_api.models import (
    ControllerInfo,
    Entity,
    EntityKind,
    GithubCredentials,
    GithubEndpoint,
    Instance,
    Provider,
    ScaleSet,
    ScaleSetCreate,
    ScaleSetUpdate,
    Template,
    User,
    normalise_label,
    normalise_labels,
)

__all__ = [
    "ControllerInfo",
    "Entity",
    "EntityKind",
    "GarmApiError",
    "GarmBadRequest",
    "GarmClient",
    "GarmConflict",
    "GarmError",
    "GarmNotFound",
    "GarmNotInitialised",
    "GarmNotReady",
    "GarmServerError",
    "GarmUnauthorized",
    "GarmUnreachable",
    "GarmUrlsRequired",
    "GithubCredentials",
    "GithubEndpoint",
    "Instance",
    "InvalidRequest",
    "Provider",
    "ScaleSet",
    "ScaleSetCreate",
    "ScaleSetUpdate",
    "Template",
    "User",
    "WireFormatError",
    "normalise_label",
    "normalise_labels",
]
