"""Read every garm-configurator relation into what GARM should serve.

Each configurator application contributes one scale set (a `ScalesetSpec`), one OpenStack
provider named after the application, and one GitHub App binding for its entity. Relations are
read in a stable order (by relation id) so the result does not flip between hooks.

A configurator is trusted with its own secrets only: a secret garm owns (its admin credentials)
or one that does not name the publishing application is refused, and the relation is reported
(docs/adr/0013-configurator-secrets-name-their-publisher.md).

The result says whether it is `complete`: only when every related configurator published valid
data and its secrets could be read may the scale-set reconciler remove scale sets whose spec is
gone. A relation that exists but has not published (or published something invalid) must never
look like "delete everything".
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import ops

from garm_api.models import EntityKind
from reconcile.desired_state import DesiredState
from reconcile.github_objects import EntityBinding, GithubApp
from reconcile.runner_template import RunnerConfig, extra_specs, template_name
from scaleset_reconciler.spec import EntityRef, ScalesetSpec
from workload.config import OpenStackProvider

if TYPE_CHECKING:
    from charms.garm_configurator.v0 import garm_configurator as interface

logger = logging.getLogger(__name__)

# Runners' cloud-init reads its instance data from a config drive instead of probing the
# network for a metadata service (the original github-runner charm does so against
# CVE-2024-6174); garm-provider-openstack takes it per scale set (garm-behaviour B24).
RUNNER_EXTRA_SPECS: Final[Mapping[str, Any]] = MappingProxyType({"use_config_drive": True})


def provider_name(app_name: str) -> str:
    """The GARM provider name of a configurator application's OpenStack settings."""
    return f"openstack-{app_name}"


def read_configurators(
    model: ops.Model,
    relations: Iterable[ops.Relation],
    debug_env: tuple[tuple[str, str], ...] = (),
    now: datetime.datetime | None = None,
) -> DesiredState:
    """Read each relation's publication and its secrets; never raise for bad remote data.

    `debug_env` (the debug-ssh relay's variables) goes to every scale set's runner template.
    A configurator's min-idle-schedule is evaluated at `now` (default: the current time), so
    each reconcile (the tick) applies the window's min idle in place.
    """
    # Deferred: the relation library defines pydantic models, whose import and schema building
    # are about a third of a fresh hook's imports; only the leader reads these relations, so
    # a standby unit's hooks never pay for them (docs/reference/performance.md).
    from charms.garm_configurator.v0 import garm_configurator as interface  # noqa: PLC0415

    specs: list[ScalesetSpec] = []
    providers: list[OpenStackProvider] = []
    bindings: list[EntityBinding] = []
    waiting: list[str] = []
    problems: list[str] = []
    templates: list[tuple[str, RunnerConfig]] = []
    for relation in sorted(relations, key=lambda relation: relation.id):
        app_name = relation.app.name
        try:
            data = interface.read_relation(relation)
            secrets = interface.fetch_secrets(model, data, publisher=app_name)
        except interface.NotPublishedError:
            waiting.append(app_name)
            continue
        except interface.ConfiguratorDataError as error:
            # Named like `juju status --relations` shows it: the operator fixes that configurator
            # or removes that relation. An untrusted secret is never retried into use.
            logger.warning("garm-configurator %s: %s", app_name, error)
            problems.append(f"relation {relation.name}:{relation.id} ({app_name}): {error}")
            continue
        spec, provider, binding = desired_from(app_name, data, secrets, debug_env, now)
        specs.append(spec)
        providers.append(provider)
        bindings.append(binding)
        if spec.template_name is not None:
            templates.append((spec.template_name, runner_config(data.runner, debug_env)))
    return DesiredState(
        tuple(specs),
        tuple(providers),
        tuple(bindings),
        tuple(waiting),
        tuple(problems),
        tuple(templates),
    )


def desired_from(
    app_name: str,
    data: interface.GarmConfiguratorData,
    secrets: interface.ConfiguratorSecrets,
    debug_env: tuple[tuple[str, str], ...] = (),
    now: datetime.datetime | None = None,
) -> tuple[ScalesetSpec, OpenStackProvider, EntityBinding]:
    """Turn one validated publication into a spec, its provider and its GitHub binding."""
    scaleset, openstack, app = data.scaleset, data.openstack, data.github_app
    runner = runner_config(data.runner, debug_env)
    kind = EntityKind.ORGANIZATION if scaleset.entity.kind == "org" else EntityKind.REPOSITORY
    entity = EntityRef(kind=kind, name=scaleset.entity.path)
    name = provider_name(app_name)
    min_idle, window = _min_idle_now(data, now or datetime.datetime.now(datetime.UTC))
    spec = ScalesetSpec(
        name=scaleset.name,
        entity=entity,
        provider_name=name,
        labels=tuple(scaleset.labels),
        image=scaleset.image,
        flavor=scaleset.flavor,
        max_runners=scaleset.max_runners,
        min_idle_runners=min_idle,
        min_idle_window=window,
        os_type=scaleset.os_type,
        os_arch=scaleset.os_arch,
        runner_group=scaleset.runner_group,
        # Every runner boots from a config drive; the runner options add their own specs.
        extra_specs={**RUNNER_EXTRA_SPECS, **extra_specs(runner)},
        template_name=template_name(scaleset.name) if runner.needs_template() else None,
        application=app_name,
    )
    provider = OpenStackProvider(
        name=name,
        auth_url=openstack.auth_url,
        username=openstack.username,
        password=secrets.openstack_password,
        project_name=openstack.project_name,
        user_domain_name=openstack.user_domain_name,
        project_domain_name=openstack.project_domain_name,
        network=openstack.network,
        region_name=openstack.region_name,
    )
    binding = EntityBinding(
        entity=entity,
        app=GithubApp(
            app_id=app.app_id,
            installation_id=app.installation_id,
            private_key_pem=secrets.github_app_private_key.encode(),
        ),
        application=app_name,
    )
    return spec, provider, binding


def _min_idle_now(data: interface.GarmConfiguratorData, now: datetime.datetime) -> tuple[int, str]:
    """The min idle runners the publication asks for at `now`, and the window that says so.

    The library validated the schedule (and that it stays within max runners) when it read the
    publication, so parsing it again cannot fail.
    """
    from charms.garm_configurator.v0 import garm_configurator as interface  # noqa: PLC0415

    text = data.runner.min_idle_schedule
    if not text:
        return data.scaleset.min_idle_runners, ""
    return interface.parse_min_idle_schedule(text).at(now)


def runner_config(
    options: interface.RunnerOptions, debug_env: tuple[tuple[str, str], ...] = ()
) -> RunnerConfig:
    """The runner options of one publication, as the runner templates take them."""
    return RunnerConfig(
        http_proxy=options.http_proxy,
        aproxy_exclude_addresses=tuple(options.aproxy_exclude_addresses),
        aproxy_redirect_ports=tuple(options.aproxy_redirect_ports),
        dockerhub_mirror=options.dockerhub_mirror,
        otel_collector_endpoint=options.otel_collector_endpoint,
        pre_job_script=options.pre_job_script,
        pre_install_scripts=tuple(sorted(options.pre_install_scripts.items())),
        debug_env=debug_env,
    )
