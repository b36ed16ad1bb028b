"""The generated client's `ApiClient`, sending what its operations build through the transport.

Imported only by `GarmTransport.send`, on a hook's first write: importing it loads the generated
`ApiClient` (with pydantic, urllib3 and dateutil), never an API class or a model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import urllib3

from garm_client.api_client import ApiClient
from garm_client.configuration import Configuration
from garm_client.rest import RESTResponse

# (method, target below the base URL, headers, JSON body or None) -> (2xx status, body).
Exchange = Callable[[str, str, Mapping[str, str], object], tuple[int, bytes]]


class TransportApiClient(ApiClient):
    """An `ApiClient` whose requests go through `GarmTransport`'s exchange, never urllib3's pool.

    `call_api` is where every generated operation hands over the request it built (method, path
    with its parameters, headers, the request model as JSON). From there the transport sends it
    as it sends the reads, so both kinds of call trust the same servers, wait as long and map
    GARM's answers alike.
    """

    def __init__(self, configuration: Configuration, exchange: Exchange) -> None:
        """Bind the client to one call's exchange (which names the call in errors and logs)."""
        # The generated constructor is unannotated; `configuration` is the only argument used.
        super().__init__(configuration)  # pyright: ignore[reportUnknownMemberType]
        self._exchange = exchange

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Mapping[str, str] | None = None,
        body: object = None,
        post_params: object = None,
        _request_timeout: object = None,
    ) -> RESTResponse:
        """Send the operation's request through the transport; return GARM's 2xx answer.

        `post_params` (forms) and `_request_timeout` are not used: GARM's API takes JSON, and the
        transport's timeouts apply to every call.
        """
        status, payload = self._exchange(method, url, header_params or {}, body)
        # The generated operation hands this back unread (`*_without_preload_content`).
        return RESTResponse(urllib3.HTTPResponse(body=payload, status=status))
