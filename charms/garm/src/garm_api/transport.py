"""The one way requests reach GARM: one exchange for the direct reads and the generated writes.

Login and the reads of every hook are built here and sent with the standard library's
`http.client`, loaded already by ops, so a converged hook loads nothing of the generated client
(ADR 0001, amendment 2). A write is built by its generated operation and request model, which
validate it and which pyright checks, and then sent by the same exchange (ADR 0001, amendment
3): both kinds of call share the base URL, the connect and read timeouts, how an `https://` GARM
is verified, the bearer token, one attempt with no proxy and no redirect, how an answer maps
onto the error taxonomy (`garm_api.errors`), and one debug log line per call.

Every call has a bounded timeout and no retries: a reconcile pass that cannot reach GARM stops at
once and the next hook tries again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from garm_api.errors import GarmUnreachable, WireFormatError, api_error, outage_reason

if TYPE_CHECKING:
    import http.client
    import ssl

    import urllib3

    from garm_client.api_client import ApiClient
    from garm_client.configuration import Configuration

logger = logging.getLogger(__name__)

T = TypeVar("T")
Api = TypeVar("Api")

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 30.0
# Where GARM serves its API under the base URL; the generated operations' paths start below it.
API_ROOT = "/api/v1"


class GarmTransport:
    """Sends requests to one GARM and reads its answers: the base URL, TLS, token, timeouts."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        ca_cert: str = "",
    ) -> None:
        """Bind the transport to GARM at `base_url`.

        Args:
            base_url: GARM's address, `http://` or `https://`, with or without a path.
            token: the bearer token sent with every request, if any.
            connect_timeout: seconds to wait for a connection.
            read_timeout: seconds to wait for an answer.
            ca_cert: PEM CA(s) an `https://` GARM's certificate must chain to; empty trusts the
                system's CAs. The certificate and host name are always verified.
        """
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._ca_cert = ca_cert
        self._tls: ssl.SSLContext | None = None
        self._configuration: Configuration | None = None

    def request(
        self,
        operation: str,
        method: str,
        path: str,
        parse: Callable[[object], T],
        *,
        query: Mapping[str, str] | None = None,
        body: Mapping[str, str] | None = None,
    ) -> T:
        """Send a request built here: login and the reads of every hook.

        The request is the one the generated operation would build: same method, path (below
        `API_ROOT`) and query names, JSON headers, bearer token.

        Args:
            operation: the call's name in errors and in the log.
            method: the HTTP method.
            path: the operation's path below `API_ROOT`.
            parse: reads the decoded JSON answer (None for an empty body).
            query: the query parameters.
            body: a JSON object to send.

        Returns:
            What `parse` made of the answer.
        """
        from urllib.parse import urlencode  # noqa: PLC0415 - deferred: `import garm_api` stays light

        target = API_ROOT + path + (f"?{urlencode(query)}" if query else "")
        _, payload = self._round_trip(operation, method, target, {}, body)
        return _parsed(operation, parse, payload)

    def send(
        self,
        operation: str,
        api: Callable[[ApiClient], Api],
        call: Callable[[Api], urllib3.HTTPResponse],
        parse: Callable[[object], T],
    ) -> T:
        """Send a request a generated operation builds: the writes, and reads no hook repeats.

        Args:
            operation: the call's name in errors and in the log.
            api: the generated API class that defines the operation.
            call: calls the operation's `*_without_preload_content` form on an instance of
                `api`, so GARM's answer is read here, never by the generated response models.
            parse: reads the decoded JSON answer (None for an empty body).

        Returns:
            What `parse` made of the answer.
        """
        from garm_api.generated import TransportApiClient  # noqa: PLC0415 - loads garm_client

        def exchange(
            method: str, target: str, headers: Mapping[str, str], body: object
        ) -> tuple[int, bytes]:
            return self._round_trip(operation, method, target, headers, body)

        api_client = TransportApiClient(self._generated_configuration(), exchange)
        answer = call(api(api_client))
        # urllib3 hands back None for an empty body, as GARM sends to most deletes.
        return _parsed(operation, parse, answer.data or b"")

    def _generated_configuration(self) -> Configuration:
        """The generated client's settings: only where its operations' paths start.

        The generated client never opens a connection itself (`TransportApiClient`), so its TLS,
        proxy, retry and authentication settings are left unset and unused.
        """
        if self._configuration is None:
            from garm_client.configuration import Configuration  # noqa: PLC0415

            self._configuration = Configuration(host=API_ROOT)
        return self._configuration

    def _round_trip(
        self,
        operation: str,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: object,
    ) -> tuple[int, bytes]:
        """Send one request to `target` (the path below the base URL); return a 2xx answer.

        Raises:
            GarmUnreachable: no answer (refused, reset, cut short, timed out, TLS failure) or a
                redirect, which is never GARM's answer and must never read as an empty one.
            GarmApiError: GARM answered 4xx or 5xx (a subclass by status).
        """
        import http.client  # noqa: PLC0415 - deferred: `import garm_api` stays light

        sent = dict(headers)
        sent.setdefault("Accept", "application/json")
        payload = None
        if body is not None:
            sent.setdefault("Content-Type", "application/json")
            payload = json.dumps(body).encode()
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        try:
            status, answer = self._exchange(method, target, sent, payload)
        except (http.client.HTTPException, OSError) as error:
            reason = outage_reason(error)
            logger.debug("GARM %s: %s %s: no answer (%s)", operation, method, target, reason)
            raise GarmUnreachable(operation, reason) from None
        logger.debug("GARM %s: %s %s: HTTP %d", operation, method, target, status)
        if 300 <= status < 400:
            raise GarmUnreachable(operation, f"HTTP {status}: a redirect, not followed")
        if status >= 400:
            raise api_error(operation, status, answer)
        return status, answer

    def _exchange(
        self, method: str, target: str, headers: Mapping[str, str], payload: bytes | None
    ) -> tuple[int, bytes]:
        """One connection, one request, the whole answer; the connection is always closed."""
        from urllib.parse import urlsplit  # noqa: PLC0415

        base = urlsplit(self.base_url)
        connection = self._connection(base.scheme, base.netloc)
        try:
            connection.connect()
            if connection.sock is not None:
                # The connect timeout bounded the connection; the answer gets the read timeout.
                connection.sock.settimeout(self._read_timeout)
            connection.request(method, base.path + target, body=payload, headers=dict(headers))
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def _connection(self, scheme: str, netloc: str) -> http.client.HTTPConnection:
        import http.client  # noqa: PLC0415

        if scheme == "https":
            return http.client.HTTPSConnection(
                netloc, timeout=self._connect_timeout, context=self._tls_context()
            )
        return http.client.HTTPConnection(netloc, timeout=self._connect_timeout)

    def _tls_context(self) -> ssl.SSLContext:
        """How an `https://` GARM is verified, for every call alike.

        Its certificate and host name, against `ca_cert` when given (the certificates relation's
        CA, and only it), else against the system's CAs. Built once per transport.
        """
        if self._tls is None:
            import ssl  # noqa: PLC0415

            self._tls = ssl.create_default_context(cadata=self._ca_cert or None)
        return self._tls


def _parsed(operation: str, parse: Callable[[object], T], payload: bytes) -> T:
    """Decode a 2xx answer (None when empty) and parse it; a bad body names the call."""
    try:
        return parse(_decoded(payload))
    except WireFormatError as error:
        if error.operation:
            raise
        raise WireFormatError(error.problem, operation=operation) from None


def _decoded(payload: bytes) -> object:
    if not payload.strip():
        return None
    try:
        return json.loads(payload)
    except ValueError:
        raise WireFormatError("answer is not JSON") from None
