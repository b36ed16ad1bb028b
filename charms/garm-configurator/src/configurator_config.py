"""Validate the operator's `juju config` into one scale set, its provider and its GitHub App.

Nothing here talks to Juju except through the `SecretReader` it is given, so every rule can be
tested directly. The field constraints come from the relation library, so what this charm
accepts is exactly what the garm charm accepts.
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, cast

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from charms.garm_configurator.v0.garm_configurator import (
    DEFAULT_REDIRECT_PORTS,
    GITHUB_APP_PRIVATE_KEY_KEY,
    MAX_EXCLUDED_ADDRESSES,
    MAX_LABELS,
    MAX_PRE_INSTALL_SCRIPTS,
    MAX_REDIRECT_PORTS,
    MAX_RUNNERS_LIMIT,
    OPENSTACK_PASSWORD_KEY,
    AuthUrl,
    GarmConfiguratorData,
    GitHubApp,
    GitHubEntity,
    GitHubId,
    GitHubOwner,
    HttpUrl,
    ImageId,
    Ipv4Target,
    Label,
    MinIdleScheduleText,
    OpenStackName,
    OpenStackProvider,
    OsArch,
    PortRange,
    ProxyUrl,
    RegionName,
    RunnerGroup,
    RunnerOptions,
    ScaleSet,
    ScaleSetName,
    Script,
    ScriptName,
    check_github_owner,
    check_github_repo_name,
    check_password,
    check_pre_install_scripts,
    check_private_key_pem,
    parse_min_idle_schedule,
)

OPTIONS: Final = (
    "name",
    "labels",
    "flavor",
    "image",
    "os-arch",
    "min-idle-runners",
    "max-runners",
    "runner-group",
    "org",
    "repo",
    "openstack-auth-url",
    "openstack-username",
    "openstack-password",
    "openstack-project-name",
    "openstack-user-domain-name",
    "openstack-project-domain-name",
    "openstack-region-name",
    "openstack-network",
    "github-app-id",
    "github-app-installation-id",
    "github-app-private-key",
    "runner-http-proxy",
    "aproxy-exclude-addresses",
    "aproxy-redirect-ports",
    "dockerhub-mirror",
    "otel-collector-endpoint",
    "pre-job-script",
    "pre-install-scripts",
    "min-idle-schedule",
)

# How to fix an option that is not set: "config '<option>' is not set: <hint>".
_HINTS: Final[Mapping[str, str]] = {
    "name": "name the scale set, e.g. juju config <app> name=small",
    "labels": "give the runners labels, e.g. juju config <app> labels=noble,x64",
    "flavor": "name an OpenStack flavor, e.g. juju config <app> flavor=m1.large",
    "openstack-auth-url": "give the keystone URL, e.g. https://keystone.example:5000/v3",
    "openstack-username": "give the OpenStack user name",
    "openstack-password": (
        "juju add-secret openstack-password password=<password>, "
        "juju grant-secret openstack-password <app>, "
        "then juju config <app> openstack-password=<secret id>"
    ),
    "openstack-project-name": "give the OpenStack project name",
    "openstack-user-domain-name": "give the user's domain name, usually Default",
    "openstack-project-domain-name": "give the project's domain name, usually Default",
    "openstack-network": "name the OpenStack network the runners attach to",
    "github-app-id": "give the GitHub App's id (App settings, 'App ID')",
    "github-app-installation-id": "give the App installation's id (the number in its URL)",
    "github-app-private-key": (
        "juju add-secret github-app-key private-key#file=<key.pem>, "
        "juju grant-secret github-app-key <app>, "
        "then juju config <app> github-app-private-key=<secret id>"
    ),
}

_SECRET_OPTIONS: Final[Mapping[str, str]] = {
    "openstack-password": OPENSTACK_PASSWORD_KEY,
    "github-app-private-key": GITHUB_APP_PRIVATE_KEY_KEY,
}

_MAX_SHOWN_INPUT: Final = 64


class SecretReadError(Exception):
    """A user secret named in the config cannot be read; the message says how to fix it."""


# Reads one key of one user secret: (secret id, key) -> value; raises SecretReadError.
SecretReader = Callable[[str, str], str]


@dataclass(frozen=True)
class ConfigProblem:
    """One invalid option and how to fix it.

    Attributes:
        option: the option's name as `juju config` spells it.
        message: what is wrong and how to fix it; never a secret value.
    """

    option: str
    message: str

    def __str__(self) -> str:
        """Render the problem as the status and the log show it."""
        return f"config '{self.option}' {self.message}"


class InvalidConfigError(Exception):
    """The config cannot be published; `problems` lists every invalid option in option order."""

    def __init__(self, problems: list[ConfigProblem]):
        ordered = sorted(problems, key=lambda problem: OPTIONS.index(problem.option))
        super().__init__("; ".join(str(problem) for problem in ordered))
        self.problems = tuple(ordered)


class ScaleSetOptions(BaseModel):
    """The scale set as configured, validated; the image is resolved separately."""

    model_config = ConfigDict(frozen=True)

    name: ScaleSetName
    labels: tuple[Label, ...]
    flavor: OpenStackName
    os_arch: OsArch
    min_idle_runners: int
    max_runners: int
    runner_group: RunnerGroup
    entity: GitHubEntity


class OpenStackOptions(BaseModel):
    """The OpenStack provider as configured, validated, without its password."""

    model_config = ConfigDict(frozen=True)

    auth_url: AuthUrl
    username: OpenStackName
    project_name: OpenStackName
    user_domain_name: OpenStackName
    project_domain_name: OpenStackName
    region_name: RegionName
    network: OpenStackName


@dataclass(frozen=True)
class ConfiguratorConfig:
    """A valid configuration, with the secret values read from the user secrets.

    Attributes:
        scaleset: the scale set, except its image.
        image_override: the `image` option, or None to use the image relation.
        openstack: the OpenStack provider, except its password.
        github_app_id: the GitHub App's id.
        github_app_installation_id: the App installation's id.
        openstack_password: the OpenStack password.
        github_app_private_key: the App's PKCS#1 PEM private key.
        runner: proxy, mirror, telemetry and job hooks for each runner.
    """

    scaleset: ScaleSetOptions
    image_override: str | None
    openstack: OpenStackOptions
    github_app_id: int
    github_app_installation_id: int
    openstack_password: str = field(repr=False)
    github_app_private_key: str = field(repr=False)
    runner: RunnerOptions = field(default_factory=RunnerOptions)

    def to_relation_data(
        self, *, image: str, password_secret_id: str, private_key_secret_id: str
    ) -> GarmConfiguratorData:
        """Build what the relation publishes, with the secrets replaced by their ids.

        Args:
            image: the image to run, from the override or the image relation.
            password_secret_id: id of the app-owned secret holding the password.
            private_key_secret_id: id of the app-owned secret holding the private key.

        Returns:
            The relation data.
        """
        return GarmConfiguratorData(
            scaleset=ScaleSet(image=image, **self.scaleset.model_dump()),
            openstack=OpenStackProvider(
                password_secret_id=password_secret_id, **self.openstack.model_dump()
            ),
            github_app=GitHubApp(
                app_id=self.github_app_id,
                installation_id=self.github_app_installation_id,
                private_key_secret_id=private_key_secret_id,
            ),
            runner=self.runner,
        )


def load_config(raw: Mapping[str, Any], read_secret: SecretReader) -> ConfiguratorConfig:
    """Validate the charm config and read the secrets it names.

    Args:
        raw: the charm config, keyed by option name.
        read_secret: reads one key of one user secret.

    Returns:
        The validated configuration.

    Raises:
        InvalidConfigError: at least one option is invalid; every problem is listed.
    """
    given = _given_options(raw)
    problems = _cross_field_problems(given)
    secrets = _read_secrets(given, read_secret, problems)
    try:
        options = _Options.model_validate(given)
    except ValidationError as error:
        problems.extend(_field_problem(details) for details in error.errors(include_url=False))
        raise InvalidConfigError(problems) from None
    if problems:
        raise InvalidConfigError(problems)
    return _to_config(options, secrets)


def _given_options(raw: Mapping[str, Any]) -> dict[str, Any]:
    # An empty string is how Juju spells "not set" for string options.
    given: dict[str, Any] = {}
    for option, value in raw.items():
        cleaned = value.strip() if isinstance(value, str) else value
        if cleaned != "" and cleaned is not None:
            given[option] = cleaned
    return given


def _cross_field_problems(given: Mapping[str, Any]) -> list[ConfigProblem]:
    # Checked on the raw options so that they are reported together with every other problem.
    problems: list[ConfigProblem] = []
    if "org" in given and "repo" in given:
        problems.append(
            ConfigProblem(
                "org", "and 'repo' are both set: keep one, e.g. juju config <app> org=''"
            )
        )
    elif "org" not in given and "repo" not in given:
        problems.append(
            ConfigProblem(
                "org",
                "is not set: set exactly one of 'org' (an organization) or 'repo' (owner/name)",
            )
        )
    min_idle = given.get("min-idle-runners", 0)
    max_runners = given.get("max-runners", 10)
    if isinstance(min_idle, int) and isinstance(max_runners, int) and min_idle > max_runners:
        problems.append(
            ConfigProblem(
                "min-idle-runners",
                f"({min_idle}) exceeds 'max-runners' ({max_runners}): "
                "lower min-idle-runners or raise max-runners",
            )
        )
    problems.extend(_schedule_problems(given.get("min-idle-schedule"), max_runners))
    return problems


def _schedule_problems(text: object, max_runners: object) -> list[ConfigProblem]:
    """A schedule asking for more idle runners than `max-runners` allows, named as such."""
    if not isinstance(text, str) or not text.strip() or not isinstance(max_runners, int):
        return []
    try:
        highest = parse_min_idle_schedule(text).highest()
    except ValueError:
        return []  # reported by the field's own validation
    if highest <= max_runners:
        return []
    return [
        ConfigProblem(
            "min-idle-schedule",
            f"asks for {highest} idle runners, more than 'max-runners' ({max_runners})",
        )
    ]


def _read_secrets(
    given: Mapping[str, Any], read_secret: SecretReader, problems: list[ConfigProblem]
) -> dict[str, str]:
    checks: dict[str, Callable[[str], str]] = {
        "openstack-password": check_password,
        "github-app-private-key": check_private_key_pem,
    }
    values: dict[str, str] = {}
    for option, key in _SECRET_OPTIONS.items():
        secret_id = given.get(option)
        if not isinstance(secret_id, str):
            continue  # reported as "not set" by the options model
        try:
            values[option] = checks[option](read_secret(secret_id, key))
        except SecretReadError as error:
            problems.append(ConfigProblem(option, str(error)))
        except ValueError as error:
            problems.append(ConfigProblem(option, f"names secret {secret_id}: {error}"))
    return values


def _field_problem(details: ErrorDetails) -> ConfigProblem:
    option = str(details["loc"][0]) if details["loc"] else "name"
    message = details["msg"].removeprefix("Value error, ")
    if details["type"] == "missing" or (option == "labels" and details["type"] == "too_short"):
        return ConfigProblem(option, f"is not set: {_HINTS.get(option, 'set it')}")
    if option == "labels" and details["type"] == "too_long":
        return ConfigProblem(option, f"has more than {MAX_LABELS} labels: remove some")
    if option == "labels" and len(details["loc"]) > 1:
        label = str(details.get("input", ""))[:_MAX_SHOWN_INPUT]
        return ConfigProblem(option, f"has an invalid label {label!r}: {message}")
    return ConfigProblem(option, f"is invalid: {message[:1].lower()}{message[1:]}")


def _to_config(options: "_Options", secrets: Mapping[str, str]) -> ConfiguratorConfig:
    return ConfiguratorConfig(
        scaleset=ScaleSetOptions(
            name=options.name,
            labels=options.labels,
            flavor=options.flavor,
            os_arch=options.os_arch,
            min_idle_runners=options.min_idle_runners,
            max_runners=options.max_runners,
            runner_group=options.runner_group,
            entity=_entity(options),
        ),
        image_override=options.image,
        openstack=OpenStackOptions(
            auth_url=options.openstack_auth_url,
            username=options.openstack_username,
            project_name=options.openstack_project_name,
            user_domain_name=options.openstack_user_domain_name,
            project_domain_name=options.openstack_project_domain_name,
            region_name=options.openstack_region_name,
            network=options.openstack_network,
        ),
        github_app_id=options.github_app_id,
        github_app_installation_id=options.github_app_installation_id,
        openstack_password=secrets["openstack-password"],
        github_app_private_key=secrets["github-app-private-key"],
        runner=RunnerOptions(
            http_proxy=options.runner_http_proxy,
            aproxy_exclude_addresses=options.aproxy_exclude_addresses,
            aproxy_redirect_ports=options.aproxy_redirect_ports,
            dockerhub_mirror=options.dockerhub_mirror,
            otel_collector_endpoint=options.otel_collector_endpoint,
            pre_job_script=options.pre_job_script,
            pre_install_scripts=dict(options.pre_install_scripts),
            min_idle_schedule=options.min_idle_schedule,
        ),
    )


def _entity(options: "_Options") -> GitHubEntity:
    if options.repo is not None:
        owner, _, repo = options.repo.partition("/")
        return GitHubEntity(kind="repo", owner=owner, repo=repo)
    assert options.org is not None  # _cross_field_problems guarantees one of org and repo
    return GitHubEntity(kind="org", owner=options.org)


# The options model refers to these validators when the class is built, so they precede it.


def _split_labels(value: object) -> object:
    if not isinstance(value, str):
        return value
    labels: list[str] = []
    seen: set[str] = set()
    for item in value.split(","):
        label = item.strip()
        # GitHub and GARM compare labels case-insensitively: the first spelling wins.
        if label and label.casefold() not in seen:
            seen.add(label.casefold())
            labels.append(label)
    return tuple(labels)


def _split_list(value: object) -> object:
    if not isinstance(value, str):
        return value
    return tuple(item.strip() for item in value.split(",") if item.strip())


def _parse_scripts(value: object) -> object:
    # The original charm took a dict-like string; JSON is the unambiguous form of that.
    if not isinstance(value, str):
        return value
    try:
        scripts = json.loads(value)
    except json.JSONDecodeError:
        scripts = None
    if not isinstance(scripts, dict):
        raise ValueError('must be a JSON object of script name to bash, e.g. {"apt": "apt ..."}')
    return cast("dict[object, object]", scripts)


def _check_repo_path(value: str) -> str:
    owner, slash, name = value.partition("/")
    if not slash:
        raise ValueError("must be owner/name, e.g. canonical/garm-operator")
    check_github_owner(owner)
    check_github_repo_name(name)
    return value


class _Options(BaseModel):
    """Every option, by its `juju config` name; unset options are absent, never ""."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: ScaleSetName = Field(alias="name")
    labels: Annotated[
        tuple[Label, ...],
        BeforeValidator(_split_labels),
        Field(min_length=1, max_length=MAX_LABELS),
    ] = Field(alias="labels")
    flavor: OpenStackName = Field(alias="flavor")
    image: ImageId | None = Field(default=None, alias="image")
    os_arch: OsArch = Field(default="amd64", alias="os-arch")
    min_idle_runners: int = Field(default=0, ge=0, le=MAX_RUNNERS_LIMIT, alias="min-idle-runners")
    max_runners: int = Field(default=10, ge=1, le=MAX_RUNNERS_LIMIT, alias="max-runners")
    runner_group: RunnerGroup = Field(default="Default", alias="runner-group")
    org: GitHubOwner | None = Field(default=None, alias="org")
    repo: Annotated[str, AfterValidator(_check_repo_path)] | None = Field(
        default=None, alias="repo"
    )
    openstack_auth_url: AuthUrl = Field(alias="openstack-auth-url")
    openstack_username: OpenStackName = Field(alias="openstack-username")
    openstack_password: str = Field(alias="openstack-password")
    openstack_project_name: OpenStackName = Field(alias="openstack-project-name")
    openstack_user_domain_name: OpenStackName = Field(alias="openstack-user-domain-name")
    openstack_project_domain_name: OpenStackName = Field(alias="openstack-project-domain-name")
    openstack_region_name: RegionName = Field(default="", alias="openstack-region-name")
    openstack_network: OpenStackName = Field(alias="openstack-network")
    github_app_id: GitHubId = Field(alias="github-app-id")
    github_app_installation_id: GitHubId = Field(alias="github-app-installation-id")
    github_app_private_key: str = Field(alias="github-app-private-key")
    runner_http_proxy: ProxyUrl | None = Field(default=None, alias="runner-http-proxy")
    aproxy_exclude_addresses: Annotated[
        tuple[Ipv4Target, ...],
        BeforeValidator(_split_list),
        Field(max_length=MAX_EXCLUDED_ADDRESSES),
    ] = Field(default=(), alias="aproxy-exclude-addresses")
    aproxy_redirect_ports: Annotated[
        tuple[PortRange, ...],
        BeforeValidator(_split_list),
        Field(min_length=1, max_length=MAX_REDIRECT_PORTS),
    ] = Field(default=DEFAULT_REDIRECT_PORTS, alias="aproxy-redirect-ports")
    dockerhub_mirror: HttpUrl | None = Field(default=None, alias="dockerhub-mirror")
    otel_collector_endpoint: HttpUrl | None = Field(default=None, alias="otel-collector-endpoint")
    pre_job_script: Script = Field(default="", alias="pre-job-script")
    pre_install_scripts: Annotated[
        dict[ScriptName, Script],
        BeforeValidator(_parse_scripts),
        Field(max_length=MAX_PRE_INSTALL_SCRIPTS),
        AfterValidator(check_pre_install_scripts),
    ] = Field(default_factory=dict[str, str], alias="pre-install-scripts")
    min_idle_schedule: MinIdleScheduleText = Field(default="", alias="min-idle-schedule")
