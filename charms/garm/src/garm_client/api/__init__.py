# flake8: noqa

__all__ = [
    "ControllerApi",
    "ControllerInfoApi",
    "CredentialsApi",
    "EndpointsApi",
    "EnterprisesApi",
    "FirstRunApi",
    "ForgeInstancesApi",
    "HooksApi",
    "InstancesApi",
    "JobsApi",
    "LoginApi",
    "MetricsTokenApi",
    "ObjectsApi",
    "OrganizationsApi",
    "PoolsApi",
    "ProvidersApi",
    "ProxiesApi",
    "RepositoriesApi",
    "ScalesetsApi",
    "TemplatesApi",
    "ToolsApi",
]

import typing as _typing

if _typing.TYPE_CHECKING:
    # import apis into api package
    from garm_client.api.controller_api import ControllerApi
    from garm_client.api.controller_info_api import ControllerInfoApi
    from garm_client.api.credentials_api import CredentialsApi
    from garm_client.api.endpoints_api import EndpointsApi
    from garm_client.api.enterprises_api import EnterprisesApi
    from garm_client.api.first_run_api import FirstRunApi
    from garm_client.api.forge_instances_api import ForgeInstancesApi
    from garm_client.api.hooks_api import HooksApi
    from garm_client.api.instances_api import InstancesApi
    from garm_client.api.jobs_api import JobsApi
    from garm_client.api.login_api import LoginApi
    from garm_client.api.metrics_token_api import MetricsTokenApi
    from garm_client.api.objects_api import ObjectsApi
    from garm_client.api.organizations_api import OrganizationsApi
    from garm_client.api.pools_api import PoolsApi
    from garm_client.api.providers_api import ProvidersApi
    from garm_client.api.proxies_api import ProxiesApi
    from garm_client.api.repositories_api import RepositoriesApi
    from garm_client.api.scalesets_api import ScalesetsApi
    from garm_client.api.templates_api import TemplatesApi
    from garm_client.api.tools_api import ToolsApi
    
else:
    from importlib import import_module

    _exports = {
        "ControllerApi": ".controller_api",
        "ControllerInfoApi": ".controller_info_api",
        "CredentialsApi": ".credentials_api",
        "EndpointsApi": ".endpoints_api",
        "EnterprisesApi": ".enterprises_api",
        "FirstRunApi": ".first_run_api",
        "ForgeInstancesApi": ".forge_instances_api",
        "HooksApi": ".hooks_api",
        "InstancesApi": ".instances_api",
        "JobsApi": ".jobs_api",
        "LoginApi": ".login_api",
        "MetricsTokenApi": ".metrics_token_api",
        "ObjectsApi": ".objects_api",
        "OrganizationsApi": ".organizations_api",
        "PoolsApi": ".pools_api",
        "ProvidersApi": ".providers_api",
        "ProxiesApi": ".proxies_api",
        "RepositoriesApi": ".repositories_api",
        "ScalesetsApi": ".scalesets_api",
        "TemplatesApi": ".templates_api",
        "ToolsApi": ".tools_api",
    }

    def __getattr__(name: str) -> object:
        if (module_name := _exports.get(name)) is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(module_name, __name__), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(globals().keys() | _exports.keys())
