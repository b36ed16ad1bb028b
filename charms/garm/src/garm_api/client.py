"""The only way into GARM's REST API: typed calls, normalised answers, one error taxonomy.

`garm_client` (generated) is imported only when the first write is made: login and the reads of
every hook go over the standard library's `http.client` (ADR 0001, amendments), so importing this
module, and a hook that finds nothing to change, stay cheap. Every call has a bounded timeout and
no retries: a reconcile pass that cannot reach GARM stops at once and the next hook tries again.

Errors form two families that never overlap:

- `GarmApiError`: GARM answered and refused (400, 401, 404, 409, 5xx...). Each carries the HTTP
  status, GARM's `error` title and `details`.
- `GarmUnreachable`: no answer at all (refused, reset, timed out, TLS failure). A handler meant
  for refusals (`except GarmApiError`) can never swallow an outage.
- `WireFormatError`: GARM answered 2xx with a body that is not what its API documents; it names
  the call. Like the other two it is a `GarmError`, so `except GarmError` handles every answer.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

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
    api_error,
    outage_reason,
)
from garm_api.models import (
    ControllerInfo,
    Entity,
    EntityKind,
    GithubCredentials,
    GithubEndpoint,
    Instance,
    JsonObject,
    Provider,
    ScaleSet,
    ScaleSetCreate,
    ScaleSetUpdate,
    Template,
    User,
    normalise_label,
    normalise_labels,
    parse_list,
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

logger = logging.getLogger(__name__)

_C = TypeVar("_C")

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 30.0


def _names_wire_errors(cls: type[_C]) -> type[_C]:
    """Make every public method name, in a `WireFormatError` its parsing raised, the call made.

    The name is the one the HTTP errors use (`_call`'s operation), so a status reads the same
    whether GARM failed a call or answered it with an unreadable body.
    """
    for name, member in list(vars(cls).items()):
        if callable(member) and not name.startswith("_"):
            setattr(cls, name, _naming_wire_errors(name.replace("_", " "), member))
    return cls


def _naming_wire_errors(fallback: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def named(client: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(client, *args, **kwargs)
        except WireFormatError as error:
            if error.operation:
                raise
            operation = str(getattr(client, "_last_operation", "") or fallback)
            raise WireFormatError(error.problem, operation=operation) from None

    return named


@_names_wire_errors
class GarmClient:
    """A GARM API client bound to one base URL and, after `login`, one admin token."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        ca_cert: str = "",
    ) -> None:
        """Bind the client to GARM at `base_url`.

        Args:
            base_url: GARM's address, `http://` or `https://`.
            token: a bearer token to start with.
            connect_timeout: seconds to wait for a connection.
            read_timeout: seconds to wait for an answer.
            ca_cert: PEM CA(s) an `https://` GARM's certificate must chain to; empty trusts the
                system's CAs. The certificate is always verified.
        """
        self.base_url = base_url.rstrip("/")
        self._ca_cert = ca_cert
        self._token = token
        self._timeout = (connect_timeout, read_timeout)
        self._api_client: Any = None
        self._last_operation = ""

    @property
    def token(self) -> str | None:
        """The bearer token in use, if any."""
        return self._token

    # Bootstrap and controller ---------------------------------------------------------------

    def first_run(self, username: str, email: str, password: str, full_name: str = "") -> User:
        """Create the admin user (GARM's first-run). A second call raises `GarmConflict`."""
        models = self._models()
        body = models.NewUserParams(
            username=username, email=email, password=password, full_name=full_name or None
        )
        return User.from_wire(self._object("first-run", self._apis().first_run, body=body))

    def login(self, username: str, password: str) -> str:
        """Log in, keep the token for later calls and return it."""
        body = {"username": username, "password": password}
        answer = self._direct_object("login", "POST", "/auth/login", body=body)
        token = answer.get("token")
        if not isinstance(token, str) or not token:
            raise WireFormatError("answered without a token", operation="login")
        self._token = token
        if self._api_client is not None:
            self._api_client.configuration.api_key["Bearer"] = token
        return token

    def controller_info(self) -> ControllerInfo:
        """Return the controller settings (409 gates until first-run and URLs are done)."""
        return ControllerInfo.from_wire(
            self._direct_object("controller-info", "GET", "/controller-info")
        )

    def update_controller(
        self,
        *,
        metadata_url: str | None = None,
        callback_url: str | None = None,
        webhook_url: str | None = None,
        agent_url: str | None = None,
        ca_cert_bundle: bytes | None = None,
    ) -> ControllerInfo:
        """Set the controller URLs runners and GitHub use to reach GARM.

        `ca_cert_bundle` (PEM) is what runners trust GARM's certificate with; empty bytes clear
        it, None leaves it as it is (garm-behaviour B29).
        """
        bundle: dict[str, Any] = {}
        if ca_cert_bundle:
            bundle["ca_cert_bundle"] = _b64(ca_cert_bundle)
        elif ca_cert_bundle is not None:
            bundle["clear_ca_cert_bundle"] = True
        body = self._models().UpdateControllerParams(
            metadata_url=metadata_url,
            callback_url=callback_url,
            webhook_url=webhook_url,
            agent_url=agent_url,
            **bundle,
        )
        return ControllerInfo.from_wire(
            self._object("update controller", self._apis().update_controller, body=body)
        )

    def metrics_token(self) -> str:
        """Return a token for GARM's `/metrics` endpoint."""
        answer = self._object("metrics-token", self._apis().get_metrics_token)
        token = answer.get("token")
        if not isinstance(token, str):
            raise WireFormatError("answered without a token", operation="metrics-token")
        return token

    def list_providers(self) -> list[Provider]:
        """Return the providers GARM was started with."""
        return parse_list(self._direct("list providers", "GET", "/providers"), Provider.from_wire)

    # GitHub endpoints and credentials -------------------------------------------------------

    def list_github_endpoints(self) -> list[GithubEndpoint]:
        """Return the GitHub endpoints."""
        answer = self._direct("list github endpoints", "GET", "/github/endpoints")
        return parse_list(answer, GithubEndpoint.from_wire)

    def create_github_endpoint(
        self,
        name: str,
        *,
        base_url: str,
        api_base_url: str,
        upload_base_url: str,
        description: str = "",
        ca_cert_bundle: bytes = b"",
    ) -> GithubEndpoint:
        """Create a GitHub Enterprise Server endpoint."""
        body = self._models().CreateGithubEndpointParams(
            name=name,
            description=description,
            base_url=base_url,
            api_base_url=api_base_url,
            upload_base_url=upload_base_url,
            ca_cert_bundle=_b64(ca_cert_bundle) if ca_cert_bundle else None,
        )
        answer = self._object(
            "create github endpoint", self._apis().create_github_endpoint, body=body
        )
        return GithubEndpoint.from_wire(answer)

    def list_github_credentials(self) -> list[GithubCredentials]:
        """Return all GitHub credentials (GARM answers `null` when there are none)."""
        answer = self._direct("list github credentials", "GET", "/github/credentials")
        return parse_list(answer, GithubCredentials.from_wire)

    def create_github_app_credentials(
        self,
        name: str,
        *,
        endpoint: str,
        app_id: int,
        installation_id: int,
        private_key_pem: bytes,
        description: str = "",
    ) -> GithubCredentials:
        """Create GitHub App credentials. The key must be PKCS#1 (garm-behaviour B9)."""
        _require_pkcs1(private_key_pem)
        models = self._models()
        body = models.CreateGithubCredentialsParams(
            name=name,
            description=description,
            endpoint=endpoint,
            auth_type="app",
            app=models.GithubApp(
                app_id=app_id,
                installation_id=installation_id,
                private_key_bytes=_b64(private_key_pem),
            ),
        )
        answer = self._object(
            "create github credentials", self._apis().create_credentials, body=body
        )
        return GithubCredentials.from_wire(answer)

    def update_github_app_credentials(
        self,
        credentials_id: int,
        *,
        app_id: int,
        installation_id: int,
        private_key_pem: bytes,
        description: str | None = None,
    ) -> GithubCredentials:
        """Replace the App settings of existing App credentials."""
        _require_pkcs1(private_key_pem)
        models = self._models()
        body = models.UpdateGithubCredentialsParams(
            description=description,
            app=models.GithubApp(
                app_id=app_id,
                installation_id=installation_id,
                private_key_bytes=_b64(private_key_pem),
            ),
        )
        answer = self._object(
            "update github credentials",
            self._apis().update_credentials,
            id=credentials_id,
            body=body,
        )
        return GithubCredentials.from_wire(answer)

    def delete_github_credentials(self, credentials_id: int) -> None:
        """Delete credentials (GARM answers 204, also for an unknown id)."""
        self._call("delete github credentials", self._apis().delete_credentials, id=credentials_id)

    # Repositories and organizations ---------------------------------------------------------

    def list_entities(self, kind: EntityKind) -> list[Entity]:
        """Return every repository or every organization."""
        path = {
            EntityKind.REPOSITORY: "/repositories",
            EntityKind.ORGANIZATION: "/organizations",
            EntityKind.ENTERPRISE: "/enterprises",
        }[kind]
        answer = self._direct(f"list {kind}", "GET", path)
        return parse_list(answer, lambda data: Entity.from_wire(kind, data))

    def create_repository(
        self, owner: str, name: str, *, credentials_name: str, webhook_secret: str
    ) -> Entity:
        """Register a repository. GARM requires a webhook secret even for scale sets only."""
        body = self._models().CreateRepoParams(
            owner=owner,
            name=name,
            credentials_name=credentials_name,
            webhook_secret=webhook_secret,
            forge_type="github",
        )
        answer = self._object("create repository", self._apis().create_repo, body=body)
        return Entity.from_wire(EntityKind.REPOSITORY, answer)

    def create_organization(
        self, name: str, *, credentials_name: str, webhook_secret: str
    ) -> Entity:
        """Register an organization. GARM requires a webhook secret even for scale sets only."""
        body = self._models().CreateOrgParams(
            name=name,
            credentials_name=credentials_name,
            webhook_secret=webhook_secret,
            forge_type="github",
        )
        answer = self._object("create organization", self._apis().create_org, body=body)
        return Entity.from_wire(EntityKind.ORGANIZATION, answer)

    def update_entity_credentials(
        self, kind: EntityKind, entity_id: str, credentials_name: str
    ) -> Entity:
        """Point a repository or organization at other credentials."""
        body = self._models().UpdateEntityParams(credentials_name=credentials_name)
        apis = self._apis()
        if kind is EntityKind.REPOSITORY:
            answer = self._object(
                "update repository", apis.update_repo, repo_id=entity_id, body=body
            )
        elif kind is EntityKind.ORGANIZATION:
            answer = self._object(
                "update organization", apis.update_org, org_id=entity_id, body=body
            )
        else:
            answer = self._object(
                "update enterprise", apis.update_enterprise, enterprise_id=entity_id, body=body
            )
        return Entity.from_wire(kind, answer)

    def delete_entity(self, kind: EntityKind, entity_id: str) -> None:
        """Delete a repository or organization (refused with 400 while it has scale sets)."""
        apis = self._apis()
        if kind is EntityKind.REPOSITORY:
            self._call("delete repository", apis.delete_repo, repo_id=entity_id)
        elif kind is EntityKind.ORGANIZATION:
            self._call("delete organization", apis.delete_org, org_id=entity_id)
        else:
            self._call("delete enterprise", apis.delete_enterprise, enterprise_id=entity_id)

    # Templates ------------------------------------------------------------------------------

    def list_templates(self, os_type: str | None = None) -> list[Template]:
        """Return templates without their bodies (`data` is None in lists)."""
        query = {"osType": os_type} if os_type is not None else {}
        answer = self._direct("list templates", "GET", "/templates", query=query)
        return parse_list(answer, Template.from_wire)

    def get_template(self, template_id: int) -> Template:
        """Return one template with its body."""
        path = f"/templates/{template_id}"
        answer = self._direct_object("get template", "GET", path)
        return Template.from_wire(answer)

    def create_template(
        self, name: str, *, data: bytes, os_type: str = "linux", description: str = ""
    ) -> Template:
        """Create a GitHub runner install template."""
        body = self._models().CreateTemplateParams(
            name=name,
            description=description,
            os_type=os_type,
            forge_type="github",
            data=_b64(data),
        )
        return Template.from_wire(
            self._object("create template", self._apis().create_template, body=body)
        )

    def update_template(
        self, template_id: int, *, data: bytes, description: str | None = None
    ) -> Template:
        """Replace a template's body."""
        body = self._models().UpdateTemplateParams(description=description, data=_b64(data))
        answer = self._object(
            "update template", self._apis().update_template, template_id=template_id, body=body
        )
        return Template.from_wire(answer)

    def delete_template(self, template_id: int) -> None:
        """Delete a template (200 also for an unknown id; 400 while in use)."""
        self._call("delete template", self._apis().delete_template, template_id=template_id)

    # Scale sets -----------------------------------------------------------------------------

    def list_scalesets(self) -> list[ScaleSet]:
        """Return every scale set (without `template_name` or instances)."""
        return parse_list(self._direct("list scale sets", "GET", "/scalesets"), ScaleSet.from_wire)

    def get_scaleset(self, scaleset_id: int) -> ScaleSet:
        """Return one scale set with its `extra_specs` and `template_name`."""
        answer = self._object(
            "get scale set", self._apis().get_scale_set, scaleset_id=str(scaleset_id)
        )
        return ScaleSet.from_wire(answer)

    def create_scaleset(
        self, kind: EntityKind, entity_id: str, params: ScaleSetCreate
    ) -> ScaleSet:
        """Create a scale set under a repository or organization.

        Raises:
            InvalidRequest: before any call, for what GARM would only refuse after touching
                GitHub (it then answers 500 with no details).
        """
        problems = params.validate()
        if problems:
            raise InvalidRequest(f"scale set {params.name!r}: " + "; ".join(problems))
        body = self._models().CreateScaleSetParams(
            name=params.name,
            provider_name=params.provider_name,
            image=params.image,
            flavor=params.flavor,
            os_type=params.os_type,
            os_arch=params.os_arch,
            labels=list(params.labels),
            min_idle_runners=params.min_idle_runners,
            max_runners=params.max_runners,
            enabled=params.enabled,
            github_runner_group=params.runner_group or None,
            runner_bootstrap_timeout=params.runner_bootstrap_timeout,
            extra_specs=dict(params.extra_specs) if params.extra_specs is not None else None,
            template_id=params.template_id,
        )
        apis = self._apis()
        operation, id_name = {
            EntityKind.REPOSITORY: (apis.create_repo_scale_set, "repo_id"),
            EntityKind.ORGANIZATION: (apis.create_org_scale_set, "org_id"),
            EntityKind.ENTERPRISE: (apis.create_enterprise_scale_set, "enterprise_id"),
        }[kind]
        answer = self._object("create scale set", operation, body=body, **{id_name: entity_id})
        return ScaleSet.from_wire(answer)

    def update_scaleset(self, scaleset_id: int, params: ScaleSetUpdate) -> ScaleSet:
        """Change a scale set's mutable fields (labels and provider are fixed at creation)."""
        problems = params.validate()
        if problems:
            raise InvalidRequest(f"scale set {scaleset_id}: " + "; ".join(problems))
        body = self._models().UpdateScaleSetParams(
            name=params.name,
            enabled=params.enabled,
            min_idle_runners=params.min_idle_runners,
            max_runners=params.max_runners,
            image=params.image,
            flavor=params.flavor,
            os_type=params.os_type,
            os_arch=params.os_arch,
            runner_group=params.runner_group,
            runner_bootstrap_timeout=params.runner_bootstrap_timeout,
            extra_specs=dict(params.extra_specs) if params.extra_specs is not None else None,
            template_id=params.template_id,
            extended_state=params.extended_state,
        )
        answer = self._object(
            "update scale set",
            self._apis().update_scale_set,
            scaleset_id=str(scaleset_id),
            body=body,
        )
        return ScaleSet.from_wire(answer)

    def delete_scaleset(self, scaleset_id: int) -> None:
        """Ask GARM to delete a scale set.

        GARM answers 200 also when it kept the scale set (garm-behaviour B15) and for unknown ids:
        callers must list again to know whether it is gone.
        """
        self._call("delete scale set", self._apis().delete_scale_set, scaleset_id=str(scaleset_id))

    # Instances ------------------------------------------------------------------------------

    def list_scaleset_instances(self, scaleset_id: int) -> list[Instance]:
        """Return one scale set's instances (`[]` also for an unknown scale set)."""
        answer = self._call(
            "list scale set instances",
            self._apis().list_scale_set_instances,
            scaleset_id=str(scaleset_id),
        )
        return parse_list(answer, Instance.from_wire)

    def list_instances(self) -> list[Instance]:
        """Return every instance GARM knows, pools and scale sets alike."""
        return parse_list(self._direct("list instances", "GET", "/instances"), Instance.from_wire)

    def delete_instance(self, name: str, *, force: bool = True) -> None:
        """Remove a runner, ignoring provider and GitHub errors when `force` (kills its job).

        GARM refuses (400) unless the instance is running, error, pending_delete or
        pending_force_delete; removal then completes asynchronously (garm-behaviour B18).
        """
        self._call(
            "delete instance",
            self._apis().delete_instance,
            instance_name=name,
            force_remove=force or None,
            bypass_gh_unauthorized=force or None,
        )

    # Plumbing -------------------------------------------------------------------------------

    def _object(self, operation: str, method: Callable[..., Any], **kwargs: Any) -> JsonObject:
        return _json_object(operation, self._call(operation, method, **kwargs))

    def _call(self, operation: str, method: Callable[..., Any], **kwargs: Any) -> Any:
        """Send one request through a generated operation; return its decoded body or raise."""
        import urllib3  # noqa: PLC0415 - deferred: hooks that make no write never pay for it

        from garm_client.exceptions import ApiException  # noqa: PLC0415

        self._last_operation = operation
        arguments = {name: value for name, value in kwargs.items() if value is not None}
        try:
            response = method(**arguments, _request_timeout=self._timeout)
            status = int(response.status)
            payload = bytes(response.data or b"")
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise GarmUnreachable(operation, outage_reason(error)) from None
        except ApiException:
            # The generated client turns TLS failures into ApiException(status=0).
            raise GarmUnreachable(operation, "TLS failure") from None
        return _decoded(operation, status, payload)

    def _direct_object(
        self, operation: str, http_method: str, path: str, *, body: JsonObject | None = None
    ) -> JsonObject:
        return _json_object(operation, self._direct(operation, http_method, path, body=body))

    def _direct(
        self,
        operation: str,
        http_method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: JsonObject | None = None,
    ) -> Any:
        """Send one request with the standard library's `http.client`; return its decoded body.

        For login and the reads of every hook: the generated client's import (urllib3,
        pydantic, dateutil, multiprocessing) cost a fresh process more than its requests did,
        while `http.client` is loaded already by ops (ADR 0001, amendment 2). The request is the
        one the generated operation builds: same method, path and query names, JSON headers,
        bearer auth; one attempt with the same connect and read timeouts, no proxy, no redirect.
        """
        import http.client  # noqa: PLC0415 - deferred: `import garm_api` stays light

        self._last_operation = operation
        try:
            status, payload = self._exchange(http_method, path, query, body)
        except (http.client.HTTPException, OSError) as error:
            raise GarmUnreachable(operation, outage_reason(error)) from None
        if 300 <= status < 400:
            # As the generated client (no redirect allowed): never GARM's answer, and an empty
            # body must not read as an empty list.
            raise GarmUnreachable(operation, f"HTTP {status}: a redirect, not followed")
        return _decoded(operation, status, payload)

    def _exchange(
        self,
        http_method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: JsonObject | None,
    ) -> tuple[int, bytes]:
        import http.client  # noqa: PLC0415
        from urllib.parse import urlencode, urlsplit  # noqa: PLC0415

        base = urlsplit(self.base_url)
        connect_timeout, read_timeout = self._timeout
        connection = (
            http.client.HTTPSConnection(
                base.netloc, timeout=connect_timeout, context=self._tls_context()
            )
            if base.scheme == "https"
            else http.client.HTTPConnection(base.netloc, timeout=connect_timeout)
        )
        headers = {"Accept": "application/json"}
        payload = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            payload = json.dumps(body).encode()
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        target = f"{base.path}/api/v1{path}" + (f"?{urlencode(query)}" if query else "")
        try:
            connection.connect()
            if connection.sock is not None:
                connection.sock.settimeout(read_timeout)
            connection.request(http_method, target, body=payload, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def _tls_context(self) -> Any:
        """How an `https://` GARM is verified: as the generated client verifies it.

        The certificate and host name, against `ca_cert` when given (the certificates
        relation's CA, and only it), else the system's CAs: both transports must trust the same
        servers.
        """
        import ssl  # noqa: PLC0415

        return ssl.create_default_context(cadata=self._ca_cert or None)

    def _apis(self) -> Any:
        return _ApiFacade(self._generated_client())

    def _generated_client(self) -> Any:
        if self._api_client is None:
            self._api_client = self._new_api_client()
        return self._api_client

    def _new_api_client(self) -> Any:
        import urllib3  # noqa: PLC0415

        import garm_client  # noqa: PLC0415

        configuration = garm_client.Configuration(host=f"{self.base_url}/api/v1")
        # One attempt per call: the next reconcile retries, and an outage must show at once.
        configuration.retries = urllib3.Retry(total=0, redirect=0, raise_on_status=False)
        configuration.api_key_prefix["Bearer"] = "Bearer"
        if self._ca_cert:
            configuration.ca_cert_data = self._ca_cert
        if self._token:
            configuration.api_key["Bearer"] = self._token
        return garm_client.ApiClient(configuration)

    @staticmethod
    def _models() -> Any:
        import garm_client.models  # noqa: PLC0415

        return garm_client.models


class _ApiFacade:
    """Loads only the generated API class that defines the operation asked for.

    Each generated class is a module full of pydantic-validated methods, so trying them in turn
    loaded most of the client on every call; a call now loads its own class and no other. A
    converged hook (login and reads) loads none of them (`GarmClient._direct`).
    """

    # operation -> the generated API module that defines `<operation>_without_preload_content`.
    # Writes, and reads no converged hook makes. Login and the reads of every hook are not
    # here: they skip the generated classes (`GarmClient._direct`).
    _MODULES: Mapping[str, str] = {
        "update_controller": "controller_api",
        "create_credentials": "credentials_api",
        "delete_credentials": "credentials_api",
        "update_credentials": "credentials_api",
        "create_github_endpoint": "endpoints_api",
        "delete_enterprise": "enterprises_api",
        "update_enterprise": "enterprises_api",
        "first_run": "first_run_api",
        "delete_instance": "instances_api",
        "list_scale_set_instances": "instances_api",
        "get_metrics_token": "metrics_token_api",
        "create_org": "organizations_api",
        "delete_org": "organizations_api",
        "update_org": "organizations_api",
        "create_repo": "repositories_api",
        "delete_repo": "repositories_api",
        "update_repo": "repositories_api",
        "create_enterprise_scale_set": "scalesets_api",
        "create_org_scale_set": "scalesets_api",
        "create_repo_scale_set": "scalesets_api",
        "delete_scale_set": "scalesets_api",
        "get_scale_set": "scalesets_api",
        "update_scale_set": "scalesets_api",
        "create_template": "templates_api",
        "delete_template": "templates_api",
        "update_template": "templates_api",
    }

    def __init__(self, api_client: Any) -> None:
        self._api_client = api_client

    def __getattr__(self, name: str) -> Callable[..., Any]:
        import importlib  # noqa: PLC0415

        module_name = self._MODULES.get(name)
        if module_name is None:
            raise AttributeError(name)
        module = importlib.import_module(f"garm_client.api.{module_name}")
        api_class = getattr(module, _class_name(module_name))
        return getattr(api_class(self._api_client), f"{name}_without_preload_content")


def _class_name(module_name: str) -> str:
    """`controller_info_api` -> `ControllerInfoApi`, the generator's naming rule."""
    return "".join(part.capitalize() for part in module_name.split("_"))


def _decoded(operation: str, status: int, payload: bytes) -> Any:
    """GARM's answer as JSON (None when empty), or the error its status means."""
    if status >= 400:
        raise api_error(operation, status, payload)
    if not payload.strip():
        return None
    try:
        return json.loads(payload)
    except ValueError:
        raise WireFormatError("answer is not JSON", operation=operation) from None


def _json_object(operation: str, answer: Any) -> JsonObject:
    if not isinstance(answer, Mapping):
        raise WireFormatError(f"{operation}: expected a JSON object in the answer")
    return cast("JsonObject", answer)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _require_pkcs1(private_key_pem: bytes) -> None:
    if b"-----BEGIN RSA PRIVATE KEY-----" not in private_key_pem:
        raise InvalidRequest(
            "the GitHub App private key must be PKCS#1 ('BEGIN RSA PRIVATE KEY'); "
            "convert it with 'openssl rsa -in key.pem -traditional'"
        )
