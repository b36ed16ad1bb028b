"""`GarmClient`: GARM's REST API as typed calls with normalised answers.

Every call goes through one `GarmTransport` (`transport`), which owns the base URL, the TLS
verification, the token, the timeouts, the mapping of answers onto `garm_api.errors` and the
log. Login and the reads of every hook are requests by path (`GarmTransport.request`); every
other call is built by its generated operation and request model (`GarmTransport.send`), whose
modules each method imports for itself, so pyright checks every write and a call loads only the
generated API class it uses. `garm_client` is never imported before the first such call (ADR
0001, amendment 3).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar, cast

from garm_api.errors import InvalidRequest, WireFormatError
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
    parse_list,
)
from garm_api.transport import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, GarmTransport

if TYPE_CHECKING:
    import urllib3

    from garm_client.models.github_app import GithubApp

__all__ = ["GarmClient"]

T = TypeVar("T")

# Each write imports its generated API class and request model inside the method (hence the
# PLC0415 exemptions): `import garm_api`, login and the reads of a hook must load none of them.


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
        """Bind the client to GARM at `base_url`; the arguments are `GarmTransport`'s."""
        self._transport = GarmTransport(
            base_url,
            token,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            ca_cert=ca_cert,
        )

    @property
    def base_url(self) -> str:
        """GARM's address, without a trailing slash."""
        return self._transport.base_url

    @property
    def token(self) -> str | None:
        """The bearer token in use, if any."""
        return self._transport.token

    # Bootstrap and controller ---------------------------------------------------------------

    def first_run(self, username: str, email: str, password: str, full_name: str = "") -> User:
        """Create the admin user (GARM's first-run). A second call raises `GarmConflict`."""
        from garm_client.api.first_run_api import FirstRunApi  # noqa: PLC0415
        from garm_client.models.new_user_params import NewUserParams  # noqa: PLC0415

        body = NewUserParams(
            username=username, email=email, password=password, full_name=full_name or None
        )
        return self._transport.send(
            "first-run",
            FirstRunApi,
            lambda api: api.first_run_without_preload_content(body),
            _object_of(User.from_wire),
        )

    def login(self, username: str, password: str) -> str:
        """Log in, keep the token for later calls and return it."""
        body = {"username": username, "password": password}
        token = self._transport.request(
            "login", "POST", "/auth/login", _object_of(_token), body=body
        )
        self._transport.token = token
        return token

    def controller_info(self) -> ControllerInfo:
        """Return the controller settings (409 gates until first-run and URLs are done)."""
        return self._transport.request(
            "controller-info", "GET", "/controller-info", _object_of(ControllerInfo.from_wire)
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
        from garm_client.api.controller_api import ControllerApi  # noqa: PLC0415
        from garm_client.models.update_controller_params import (  # noqa: PLC0415
            UpdateControllerParams,
        )

        body = UpdateControllerParams(
            metadata_url=metadata_url,
            callback_url=callback_url,
            webhook_url=webhook_url,
            agent_url=agent_url,
            ca_cert_bundle=_b64(ca_cert_bundle) if ca_cert_bundle else None,
            clear_ca_cert_bundle=True if ca_cert_bundle == b"" else None,
        )
        return self._transport.send(
            "update controller",
            ControllerApi,
            lambda api: api.update_controller_without_preload_content(body),
            _object_of(ControllerInfo.from_wire),
        )

    def metrics_token(self) -> str:
        """Return a token for GARM's `/metrics` endpoint."""
        from garm_client.api.metrics_token_api import MetricsTokenApi  # noqa: PLC0415

        return self._transport.send(
            "metrics-token",
            MetricsTokenApi,
            lambda api: api.get_metrics_token_without_preload_content(),
            _object_of(_metrics_token),
        )

    def list_providers(self) -> list[Provider]:
        """Return the providers GARM was started with."""
        return self._transport.request(
            "list providers", "GET", "/providers", _list_of(Provider.from_wire)
        )

    # GitHub endpoints and credentials -------------------------------------------------------

    def list_github_endpoints(self) -> list[GithubEndpoint]:
        """Return the GitHub endpoints."""
        return self._transport.request(
            "list github endpoints", "GET", "/github/endpoints", _list_of(GithubEndpoint.from_wire)
        )

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
        from garm_client.api.endpoints_api import EndpointsApi  # noqa: PLC0415
        from garm_client.models.create_github_endpoint_params import (  # noqa: PLC0415
            CreateGithubEndpointParams,
        )

        body = CreateGithubEndpointParams(
            name=name,
            description=description,
            base_url=base_url,
            api_base_url=api_base_url,
            upload_base_url=upload_base_url,
            ca_cert_bundle=_b64(ca_cert_bundle) if ca_cert_bundle else None,
        )
        return self._transport.send(
            "create github endpoint",
            EndpointsApi,
            lambda api: api.create_github_endpoint_without_preload_content(body),
            _object_of(GithubEndpoint.from_wire),
        )

    def list_github_credentials(self) -> list[GithubCredentials]:
        """Return all GitHub credentials (GARM answers `null` when there are none)."""
        return self._transport.request(
            "list github credentials",
            "GET",
            "/github/credentials",
            _list_of(GithubCredentials.from_wire),
        )

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

        from garm_client.api.credentials_api import CredentialsApi  # noqa: PLC0415
        from garm_client.models.create_github_credentials_params import (  # noqa: PLC0415
            CreateGithubCredentialsParams,
        )

        body = CreateGithubCredentialsParams(
            name=name,
            description=description,
            endpoint=endpoint,
            auth_type="app",
            app=_github_app(app_id, installation_id, private_key_pem),
        )
        return self._transport.send(
            "create github credentials",
            CredentialsApi,
            lambda api: api.create_credentials_without_preload_content(body),
            _object_of(GithubCredentials.from_wire),
        )

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

        from garm_client.api.credentials_api import CredentialsApi  # noqa: PLC0415
        from garm_client.models.update_github_credentials_params import (  # noqa: PLC0415
            UpdateGithubCredentialsParams,
        )

        body = UpdateGithubCredentialsParams(
            description=description,
            app=_github_app(app_id, installation_id, private_key_pem),
        )
        return self._transport.send(
            "update github credentials",
            CredentialsApi,
            lambda api: api.update_credentials_without_preload_content(credentials_id, body),
            _object_of(GithubCredentials.from_wire),
        )

    def delete_github_credentials(self, credentials_id: int) -> None:
        """Delete credentials (GARM answers 204, also for an unknown id)."""
        from garm_client.api.credentials_api import CredentialsApi  # noqa: PLC0415

        self._transport.send(
            "delete github credentials",
            CredentialsApi,
            lambda api: api.delete_credentials_without_preload_content(credentials_id),
            _nothing,
        )

    # Repositories and organizations ---------------------------------------------------------

    def list_entities(self, kind: EntityKind) -> list[Entity]:
        """Return every repository or every organization."""
        path = {
            EntityKind.REPOSITORY: "/repositories",
            EntityKind.ORGANIZATION: "/organizations",
            EntityKind.ENTERPRISE: "/enterprises",
        }[kind]
        return self._transport.request(
            f"list {kind}", "GET", path, _list_of(lambda data: Entity.from_wire(kind, data))
        )

    def create_repository(
        self, owner: str, name: str, *, credentials_name: str, webhook_secret: str
    ) -> Entity:
        """Register a repository. GARM requires a webhook secret even for scale sets only."""
        from garm_client.api.repositories_api import RepositoriesApi  # noqa: PLC0415
        from garm_client.models.create_repo_params import CreateRepoParams  # noqa: PLC0415

        body = CreateRepoParams(
            owner=owner,
            name=name,
            credentials_name=credentials_name,
            webhook_secret=webhook_secret,
            forge_type="github",
        )
        return self._transport.send(
            "create repository",
            RepositoriesApi,
            lambda api: api.create_repo_without_preload_content(body),
            _object_of(lambda data: Entity.from_wire(EntityKind.REPOSITORY, data)),
        )

    def create_organization(
        self, name: str, *, credentials_name: str, webhook_secret: str
    ) -> Entity:
        """Register an organization. GARM requires a webhook secret even for scale sets only."""
        from garm_client.api.organizations_api import OrganizationsApi  # noqa: PLC0415
        from garm_client.models.create_org_params import CreateOrgParams  # noqa: PLC0415

        body = CreateOrgParams(
            name=name,
            credentials_name=credentials_name,
            webhook_secret=webhook_secret,
            forge_type="github",
        )
        return self._transport.send(
            "create organization",
            OrganizationsApi,
            lambda api: api.create_org_without_preload_content(body),
            _object_of(lambda data: Entity.from_wire(EntityKind.ORGANIZATION, data)),
        )

    def update_entity_credentials(
        self, kind: EntityKind, entity_id: str, credentials_name: str
    ) -> Entity:
        """Point a repository or organization at other credentials."""
        from garm_client.models.update_entity_params import UpdateEntityParams  # noqa: PLC0415

        body = UpdateEntityParams(credentials_name=credentials_name)
        parse = _object_of(lambda data: Entity.from_wire(kind, data))
        if kind is EntityKind.REPOSITORY:
            from garm_client.api.repositories_api import RepositoriesApi  # noqa: PLC0415

            return self._transport.send(
                "update repository",
                RepositoriesApi,
                lambda api: api.update_repo_without_preload_content(entity_id, body),
                parse,
            )
        if kind is EntityKind.ORGANIZATION:
            from garm_client.api.organizations_api import OrganizationsApi  # noqa: PLC0415

            return self._transport.send(
                "update organization",
                OrganizationsApi,
                lambda api: api.update_org_without_preload_content(entity_id, body),
                parse,
            )
        from garm_client.api.enterprises_api import EnterprisesApi  # noqa: PLC0415

        return self._transport.send(
            "update enterprise",
            EnterprisesApi,
            lambda api: api.update_enterprise_without_preload_content(entity_id, body),
            parse,
        )

    def delete_entity(self, kind: EntityKind, entity_id: str) -> None:
        """Delete a repository or organization (refused with 400 while it has scale sets)."""
        if kind is EntityKind.REPOSITORY:
            from garm_client.api.repositories_api import RepositoriesApi  # noqa: PLC0415

            self._transport.send(
                "delete repository",
                RepositoriesApi,
                lambda api: api.delete_repo_without_preload_content(entity_id),
                _nothing,
            )
        elif kind is EntityKind.ORGANIZATION:
            from garm_client.api.organizations_api import OrganizationsApi  # noqa: PLC0415

            self._transport.send(
                "delete organization",
                OrganizationsApi,
                lambda api: api.delete_org_without_preload_content(entity_id),
                _nothing,
            )
        else:
            from garm_client.api.enterprises_api import EnterprisesApi  # noqa: PLC0415

            self._transport.send(
                "delete enterprise",
                EnterprisesApi,
                lambda api: api.delete_enterprise_without_preload_content(entity_id),
                _nothing,
            )

    # Templates ------------------------------------------------------------------------------

    def list_templates(self, os_type: str | None = None) -> list[Template]:
        """Return templates without their bodies (`data` is None in lists)."""
        query = {"osType": os_type} if os_type is not None else {}
        return self._transport.request(
            "list templates", "GET", "/templates", _list_of(Template.from_wire), query=query
        )

    def get_template(self, template_id: int) -> Template:
        """Return one template with its body."""
        return self._transport.request(
            "get template", "GET", f"/templates/{template_id}", _object_of(Template.from_wire)
        )

    def create_template(
        self, name: str, *, data: bytes, os_type: str = "linux", description: str = ""
    ) -> Template:
        """Create a GitHub runner install template."""
        from garm_client.api.templates_api import TemplatesApi  # noqa: PLC0415
        from garm_client.models.create_template_params import (  # noqa: PLC0415
            CreateTemplateParams,
        )

        body = CreateTemplateParams(
            name=name,
            description=description,
            os_type=os_type,
            forge_type="github",
            data=_b64(data),
        )
        return self._transport.send(
            "create template",
            TemplatesApi,
            lambda api: api.create_template_without_preload_content(body),
            _object_of(Template.from_wire),
        )

    def update_template(
        self, template_id: int, *, data: bytes, description: str | None = None
    ) -> Template:
        """Replace a template's body."""
        from garm_client.api.templates_api import TemplatesApi  # noqa: PLC0415
        from garm_client.models.update_template_params import (  # noqa: PLC0415
            UpdateTemplateParams,
        )

        body = UpdateTemplateParams(description=description, data=_b64(data))
        return self._transport.send(
            "update template",
            TemplatesApi,
            lambda api: api.update_template_without_preload_content(template_id, body),
            _object_of(Template.from_wire),
        )

    def delete_template(self, template_id: int) -> None:
        """Delete a template (200 also for an unknown id; 400 while in use)."""
        from garm_client.api.templates_api import TemplatesApi  # noqa: PLC0415

        self._transport.send(
            "delete template",
            TemplatesApi,
            lambda api: api.delete_template_without_preload_content(template_id),
            _nothing,
        )

    # Scale sets -----------------------------------------------------------------------------

    def list_scalesets(self) -> list[ScaleSet]:
        """Return every scale set (without `template_name` or instances)."""
        return self._transport.request(
            "list scale sets", "GET", "/scalesets", _list_of(ScaleSet.from_wire)
        )

    def get_scaleset(self, scaleset_id: int) -> ScaleSet:
        """Return one scale set with its `extra_specs` and `template_name`."""
        from garm_client.api.scalesets_api import ScalesetsApi  # noqa: PLC0415

        return self._transport.send(
            "get scale set",
            ScalesetsApi,
            lambda api: api.get_scale_set_without_preload_content(str(scaleset_id)),
            _object_of(ScaleSet.from_wire),
        )

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

        from garm_client.api.scalesets_api import ScalesetsApi  # noqa: PLC0415
        from garm_client.models.create_scale_set_params import (  # noqa: PLC0415
            CreateScaleSetParams,
        )

        body = CreateScaleSetParams(
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
            runner_bootstrap_timeout=params.runner_bootstrap_timeout,
            extra_specs=dict(params.extra_specs) if params.extra_specs is not None else None,
            template_id=params.template_id,
        )
        # Set by its field name: the constructor (as pyright reads it) only takes the wire name,
        # `github-runner-group`, which no keyword argument can spell.
        body.github_runner_group = params.runner_group or None

        def create(api: ScalesetsApi) -> urllib3.HTTPResponse:
            if kind is EntityKind.REPOSITORY:
                return api.create_repo_scale_set_without_preload_content(entity_id, body)
            if kind is EntityKind.ORGANIZATION:
                return api.create_org_scale_set_without_preload_content(entity_id, body)
            return api.create_enterprise_scale_set_without_preload_content(entity_id, body)

        return self._transport.send(
            "create scale set", ScalesetsApi, create, _object_of(ScaleSet.from_wire)
        )

    def update_scaleset(self, scaleset_id: int, params: ScaleSetUpdate) -> ScaleSet:
        """Change a scale set's mutable fields (labels and provider are fixed at creation)."""
        problems = params.validate()
        if problems:
            raise InvalidRequest(f"scale set {scaleset_id}: " + "; ".join(problems))

        from garm_client.api.scalesets_api import ScalesetsApi  # noqa: PLC0415
        from garm_client.models.update_scale_set_params import (  # noqa: PLC0415
            UpdateScaleSetParams,
        )

        body = UpdateScaleSetParams(
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
        return self._transport.send(
            "update scale set",
            ScalesetsApi,
            lambda api: api.update_scale_set_without_preload_content(str(scaleset_id), body),
            _object_of(ScaleSet.from_wire),
        )

    def delete_scaleset(self, scaleset_id: int) -> None:
        """Ask GARM to delete a scale set.

        GARM answers 200 also when it kept the scale set (garm-behaviour B15) and for unknown ids:
        callers must list again to know whether it is gone.
        """
        from garm_client.api.scalesets_api import ScalesetsApi  # noqa: PLC0415

        self._transport.send(
            "delete scale set",
            ScalesetsApi,
            lambda api: api.delete_scale_set_without_preload_content(str(scaleset_id)),
            _nothing,
        )

    # Instances ------------------------------------------------------------------------------

    def list_scaleset_instances(self, scaleset_id: int) -> list[Instance]:
        """Return one scale set's instances (`[]` also for an unknown scale set)."""
        from garm_client.api.instances_api import InstancesApi  # noqa: PLC0415

        return self._transport.send(
            "list scale set instances",
            InstancesApi,
            lambda api: api.list_scale_set_instances_without_preload_content(str(scaleset_id)),
            _list_of(Instance.from_wire),
        )

    def list_instances(self) -> list[Instance]:
        """Return every instance GARM knows, pools and scale sets alike."""
        return self._transport.request(
            "list instances", "GET", "/instances", _list_of(Instance.from_wire)
        )

    def delete_instance(self, name: str, *, force: bool = True) -> None:
        """Remove a runner, ignoring provider and GitHub errors when `force` (kills its job).

        GARM refuses (400) unless the instance is running, error, pending_delete or
        pending_force_delete; removal then completes asynchronously (garm-behaviour B18).
        """
        from garm_client.api.instances_api import InstancesApi  # noqa: PLC0415

        self._transport.send(
            "delete instance",
            InstancesApi,
            lambda api: api.delete_instance_without_preload_content(
                name, force_remove=force or None, bypass_gh_unauthorized=force or None
            ),
            _nothing,
        )


def _object_of(parse: Callable[[JsonObject], T]) -> Callable[[object], T]:
    """A parser of an answer that must be one JSON object."""

    def parsed(answer: object) -> T:
        if not isinstance(answer, Mapping):
            raise WireFormatError("expected a JSON object in the answer")
        return parse(cast("JsonObject", answer))

    return parsed


def _list_of(parse: Callable[[JsonObject], T]) -> Callable[[object], list[T]]:
    """A parser of an answer that is a JSON list of objects (`null` for none)."""
    return lambda answer: parse_list(answer, parse)


def _nothing(answer: object) -> None:
    """What a delete returns: nothing, though its answer must still be JSON (or empty)."""


def _token(answer: JsonObject) -> str:
    token = answer.get("token")
    if not isinstance(token, str) or not token:
        raise WireFormatError("answered without a token")
    return token


def _metrics_token(answer: JsonObject) -> str:
    token = answer.get("token")
    if not isinstance(token, str):
        raise WireFormatError("answered without a token")
    return token


def _github_app(app_id: int, installation_id: int, private_key_pem: bytes) -> GithubApp:
    """The App part of a credentials request."""
    from garm_client.models.github_app import GithubApp  # noqa: PLC0415

    return GithubApp(
        app_id=app_id, installation_id=installation_id, private_key_bytes=_b64(private_key_pem)
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _require_pkcs1(private_key_pem: bytes) -> None:
    if b"-----BEGIN RSA PRIVATE KEY-----" not in private_key_pem:
        raise InvalidRequest(
            "the GitHub App private key must be PKCS#1 ('BEGIN RSA PRIVATE KEY'); "
            "convert it with 'openssl rsa -in key.pem -traditional'"
        )
