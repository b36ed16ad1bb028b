"""Domain types for what GARM returns, normalised from GARM's wire format.

GARM omits fields that are false, zero or empty (Go `omitempty`), answers JSON `null` for empty
lists, sends `[]byte` fields as base64 and stores labels case-insensitively. The `from_wire`
parsers below absorb all of that, so code above `garm_api` never sees `None` for a flag, a count
or a list, and compares labels through `normalise_label`. See
docs/reference/garm-behaviour.md, B1-B4.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import enum
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from garm_api.errors import WireFormatError

JsonObject = Mapping[str, Any]
T = TypeVar("T")


class EntityKind(enum.StrEnum):
    """The GitHub entity a scale set belongs to, named as GARM's URL paths name it."""

    REPOSITORY = "repositories"
    ORGANIZATION = "organizations"
    ENTERPRISE = "enterprises"


def normalise_label(label: str) -> str:
    """Return the form in which GARM and GitHub compare a label: stripped and lower-cased."""
    return label.strip().lower()


def normalise_labels(labels: Iterable[str]) -> frozenset[str]:
    """Return the set of normalised, non-empty labels."""
    return frozenset(n for n in (normalise_label(label) for label in labels) if n)


@dataclasses.dataclass(frozen=True)
class ScaleSet:
    """A scale set as GARM reports it.

    `extra_specs` and `template_name` are None when GARM did not send them: it omits empty
    `extra_specs` everywhere, and `template_name` from lists (garm-behaviour B1).
    """

    id: int
    name: str
    enabled: bool
    labels: tuple[str, ...]
    provider_name: str
    image: str
    flavor: str
    os_type: str
    os_arch: str
    min_idle_runners: int
    max_runners: int
    runner_group: str
    runner_prefix: str
    runner_bootstrap_timeout: int
    desired_runner_count: int
    github_scale_set_id: int
    generation: int
    state: str
    extended_state: str
    disable_update: bool
    enable_shell: bool
    template_id: int
    template_name: str | None
    extra_specs: JsonObject | None
    entity_kind: EntityKind
    entity_id: str
    entity_name: str
    created_at: datetime.datetime
    updated_at: datetime.datetime

    @functools.cached_property
    def normalised_labels(self) -> frozenset[str]:
        """The labels as GARM compares them (case-insensitive, stripped).

        Kept once worked out: `labels` is a tuple of a frozen object, and a pass compares
        every scale set's labels several times.
        """
        return normalise_labels(self.labels)

    def missing_labels(self, wanted: Iterable[str]) -> frozenset[str]:
        """Return the normalised labels of `wanted` that this scale set does not carry."""
        return normalise_labels(wanted) - self.normalised_labels

    @classmethod
    def from_wire(cls, data: JsonObject) -> ScaleSet:
        """Parse one `ScaleSet` object as GARM sends it (garm-behaviour B1)."""
        kind, entity_id, entity_name = _scaleset_entity(data)
        raw_extra_specs = data.get("extra_specs")
        return cls(
            id=_int(data, "id"),
            name=_str(data, "name"),
            enabled=_bool(data, "enabled"),
            labels=_tag_names(data),
            provider_name=_str(data, "provider_name"),
            image=_str(data, "image"),
            flavor=_str(data, "flavor"),
            os_type=_str(data, "os_type"),
            os_arch=_str(data, "os_arch"),
            min_idle_runners=_int(data, "min_idle_runners"),
            max_runners=_int(data, "max_runners"),
            runner_group=_str(data, "github-runner-group"),
            runner_prefix=_str(data, "runner_prefix"),
            runner_bootstrap_timeout=_int(data, "runner_bootstrap_timeout"),
            desired_runner_count=_int(data, "desired_runner_count"),
            github_scale_set_id=_int(data, "scale_set_id"),
            generation=_int(data, "generation"),
            state=_str(data, "state"),
            extended_state=_str(data, "extended_state"),
            disable_update=_bool(data, "disable_update"),
            enable_shell=_bool(data, "enable_shell"),
            template_id=_int(data, "template_id"),
            template_name=cast("str | None", data.get("template_name")),
            extra_specs=None if raw_extra_specs is None else _json_object(raw_extra_specs),
            entity_kind=kind,
            entity_id=entity_id,
            entity_name=entity_name,
            created_at=_time(data, "created_at"),
            updated_at=_time(data, "updated_at"),
        )


@dataclasses.dataclass(frozen=True)
class Instance:
    """A runner instance as GARM reports it (garm-behaviour B17).

    `scale_set_id` is GARM's numeric scale-set id (0 for pool runners); `provider_fault` is the
    decoded bytes of GARM's base64 field (empty when absent). `job` names the job GARM records
    for the runner (`owner/repo run <id>: <job name>`), "" when GARM records none.
    """

    id: str
    name: str
    status: str
    runner_status: str
    scale_set_id: int
    pool_id: str
    provider_name: str
    provider_id: str
    agent_id: int
    provider_fault: bytes
    created_at: datetime.datetime
    updated_at: datetime.datetime
    job: str = ""

    @classmethod
    def from_wire(cls, data: JsonObject) -> Instance:
        """Parse one `Instance` object as GARM sends it."""
        return cls(
            id=_str(data, "id"),
            name=_str(data, "name"),
            status=_str(data, "status"),
            runner_status=_str(data, "runner_status"),
            scale_set_id=_int(data, "scale_set_id"),
            pool_id=_str(data, "pool_id"),
            provider_name=_str(data, "provider_name"),
            provider_id=_str(data, "provider_id"),
            agent_id=_int(data, "agent_id"),
            provider_fault=_base64(data, "provider_fault"),
            created_at=_time(data, "created_at"),
            updated_at=_time(data, "updated_at"),
            job=_job(data.get("job")),
        )


@dataclasses.dataclass(frozen=True)
class ControllerInfo:
    """GARM's controller settings; URL fields are empty strings until they are set."""

    controller_id: str
    hostname: str
    metadata_url: str
    callback_url: str
    webhook_url: str
    agent_url: str
    version: str
    ca_cert_bundle: bytes

    @classmethod
    def from_wire(cls, data: JsonObject) -> ControllerInfo:
        """Parse a `ControllerInfo` object (garm-behaviour B8)."""
        return cls(
            controller_id=_str(data, "controller_id"),
            hostname=_str(data, "hostname"),
            metadata_url=_str(data, "metadata_url"),
            callback_url=_str(data, "callback_url"),
            webhook_url=_str(data, "webhook_url"),
            agent_url=_str(data, "agent_url"),
            version=_str(data, "version"),
            ca_cert_bundle=_base64(data, "ca_cert_bundle"),
        )


@dataclasses.dataclass(frozen=True)
class User:
    """The user `first-run` created."""

    id: str
    username: str
    email: str
    enabled: bool
    is_admin: bool

    @classmethod
    def from_wire(cls, data: JsonObject) -> User:
        """Parse a `User` object (garm-behaviour B8)."""
        return cls(
            id=_str(data, "id"),
            username=_str(data, "username"),
            email=_str(data, "email"),
            enabled=_bool(data, "enabled"),
            is_admin=_bool(data, "is_admin"),
        )


@dataclasses.dataclass(frozen=True)
class Provider:
    """A provider from GARM's config file."""

    name: str
    type: str
    description: str

    @classmethod
    def from_wire(cls, data: JsonObject) -> Provider:
        """Parse a `Provider` object (garm-behaviour B2: the key is `type`)."""
        return cls(
            name=_str(data, "name"),
            type=_str(data, "type"),
            description=_str(data, "description"),
        )


@dataclasses.dataclass(frozen=True)
class GithubEndpoint:
    """A GitHub (or GHES) endpoint."""

    name: str
    description: str
    base_url: str
    api_base_url: str
    upload_base_url: str
    ca_cert_bundle: bytes

    @classmethod
    def from_wire(cls, data: JsonObject) -> GithubEndpoint:
        """Parse a `ForgeEndpoint` object (garm-behaviour B9)."""
        return cls(
            name=_str(data, "name"),
            description=_str(data, "description"),
            base_url=_str(data, "base_url"),
            api_base_url=_str(data, "api_base_url"),
            upload_base_url=_str(data, "upload_base_url"),
            ca_cert_bundle=_base64(data, "ca_cert_bundle"),
        )


@dataclasses.dataclass(frozen=True)
class GithubCredentials:
    """GitHub credentials; GARM never returns the secret parts."""

    id: int
    name: str
    description: str
    auth_type: str
    endpoint_name: str

    @classmethod
    def from_wire(cls, data: JsonObject) -> GithubCredentials:
        """Parse a `ForgeCredentials` object (response key `auth-type`, garm-behaviour B2)."""
        endpoint = data.get("endpoint")
        endpoint_name = _str(_json_object(endpoint), "name") if endpoint is not None else ""
        return cls(
            id=_int(data, "id"),
            name=_str(data, "name"),
            description=_str(data, "description"),
            auth_type=_str(data, "auth-type"),
            endpoint_name=endpoint_name,
        )


@dataclasses.dataclass(frozen=True)
class Entity:
    """A repository or organization registered in GARM.

    `name` is `owner/name` for a repository and the organization's name otherwise, the same
    form GARM uses in a scale set's `repo_name`/`org_name`.
    """

    kind: EntityKind
    id: str
    name: str
    credentials_name: str
    endpoint_name: str
    pool_manager_running: bool
    pool_manager_failure: str

    @classmethod
    def from_wire(cls, kind: EntityKind, data: JsonObject) -> Entity:
        """Parse a repository or organization object (garm-behaviour B10)."""
        name = _str(data, "name")
        if kind is EntityKind.REPOSITORY:
            name = f"{_str(data, 'owner')}/{name}"
        endpoint = data.get("endpoint")
        status = data.get("pool_manager_status")
        status_object: JsonObject = _json_object(status) if status is not None else {}
        return cls(
            kind=kind,
            id=_str(data, "id"),
            name=name,
            credentials_name=_str(data, "credentials_name"),
            endpoint_name=_str(_json_object(endpoint), "name") if endpoint is not None else "",
            pool_manager_running=_bool(status_object, "running"),
            pool_manager_failure=_str(status_object, "failure_reason"),
        )


@dataclasses.dataclass(frozen=True)
class Template:
    """A runner install template. `data` is None in list responses, which omit it."""

    id: int
    name: str
    description: str
    os_type: str
    forge_type: str
    owner_id: str
    data: bytes | None

    @classmethod
    def from_wire(cls, data: JsonObject) -> Template:
        """Parse a `Template` object (garm-behaviour B19: `data` is base64, `null` in lists)."""
        return cls(
            id=_int(data, "id"),
            name=_str(data, "name"),
            description=_str(data, "description"),
            os_type=_str(data, "os_type"),
            forge_type=_str(data, "forge_type"),
            owner_id=_str(data, "owner_id"),
            data=None if data.get("data") is None else _base64(data, "data"),
        )


@dataclasses.dataclass(frozen=True)
class ScaleSetCreate:
    """What the charm asks GARM to create. Validate with `validate()` before sending.

    GARM checks these fields only after it has created the scale set at GitHub, and then answers
    500 with no details (garm-behaviour B13), so the client refuses them first.
    """

    name: str
    provider_name: str
    image: str
    flavor: str
    labels: tuple[str, ...]
    max_runners: int
    min_idle_runners: int = 0
    os_type: str = "linux"
    os_arch: str = "amd64"
    enabled: bool = True
    runner_group: str = ""
    runner_bootstrap_timeout: int = 20
    extra_specs: JsonObject | None = None
    template_id: int | None = None

    def validate(self) -> list[str]:
        """Return what GARM would refuse late, one message per problem (empty when valid)."""
        problems = [
            f"{field} is empty"
            for field in ("name", "provider_name", "image", "flavor")
            if not getattr(self, field).strip()
        ]
        if self.os_type not in ("linux", "windows"):
            problems.append(f"os_type must be linux or windows, not {self.os_type!r}")
        if self.max_runners < 1:
            problems.append("max_runners must be at least 1")
        if self.min_idle_runners < 0:
            problems.append("min_idle_runners must not be negative")
        if self.min_idle_runners > self.max_runners:
            problems.append("min_idle_runners must not exceed max_runners")
        if self.runner_bootstrap_timeout < 1:
            problems.append("runner_bootstrap_timeout must be at least 1 minute")
        return problems


@dataclasses.dataclass(frozen=True)
class ScaleSetUpdate:
    """A partial update: fields left as None are not sent. Labels and provider cannot change."""

    name: str | None = None
    enabled: bool | None = None
    min_idle_runners: int | None = None
    max_runners: int | None = None
    image: str | None = None
    flavor: str | None = None
    os_type: str | None = None
    os_arch: str | None = None
    runner_group: str | None = None
    runner_bootstrap_timeout: int | None = None
    extra_specs: JsonObject | None = None
    template_id: int | None = None
    extended_state: str | None = None

    def validate(self) -> list[str]:
        """Return what GARM would refuse, one message per problem (empty when valid)."""
        problems: list[str] = []
        if self.runner_bootstrap_timeout is not None and self.runner_bootstrap_timeout < 1:
            problems.append("runner_bootstrap_timeout must be at least 1 minute")
        if (self.min_idle_runners or 0) < 0 or (self.max_runners or 0) < 0:
            problems.append("runner counts must not be negative")
        if (
            self.min_idle_runners is not None
            and self.max_runners is not None
            and self.min_idle_runners > self.max_runners
        ):
            problems.append("min_idle_runners must not exceed max_runners")
        return problems

    def is_empty(self) -> bool:
        """Whether this update would send nothing."""
        return all(getattr(self, f.name) is None for f in dataclasses.fields(self))


def parse_list(data: Any, parse: Callable[[JsonObject], T]) -> list[T]:
    """Parse a JSON list (GARM sends `null` for an empty one) with `parse` for each element."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise WireFormatError(f"expected a JSON list, got {type(data).__name__}")
    return [parse(_json_object(item)) for item in cast("list[Any]", data)]


def _tag_names(data: JsonObject) -> tuple[str, ...]:
    return tuple(sorted((_str(tag, "name") for tag in _objects(data, "tags")), key=str.lower))


def _scaleset_entity(data: JsonObject) -> tuple[EntityKind, str, str]:
    for kind, prefix in (
        (EntityKind.REPOSITORY, "repo"),
        (EntityKind.ORGANIZATION, "org"),
        (EntityKind.ENTERPRISE, "enterprise"),
    ):
        entity_id = _str(data, f"{prefix}_id")
        if entity_id:
            return kind, entity_id, _str(data, f"{prefix}_name")
    raise WireFormatError(f"scale set {data.get('id')!r} names no repository or organization")


def _job(value: Any) -> str:
    """`owner/repo run <id>: <name>` of an instance's `job` object; "" when there is none."""
    if value is None:
        return ""
    job = _json_object(value)
    repository = "/".join(
        part for part in (_str(job, "repository_owner"), _str(job, "repository_name")) if part
    )
    run = _int(job, "run_id")
    where = " ".join(part for part in (repository, f"run {run}" if run else "") if part)
    name = _str(job, "name")
    return f"{where}: {name}" if where and name else where or name


def _json_object(value: Any) -> JsonObject:
    if isinstance(value, str):
        # extra_specs may arrive as the raw JSON text GARM stored.
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise WireFormatError(f"expected a JSON object, got text: {error}") from None
    if not isinstance(value, Mapping):
        raise WireFormatError(f"expected a JSON object, got {type(value).__name__}")
    return cast("JsonObject", value)


def _objects(data: JsonObject, key: str) -> list[JsonObject]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise WireFormatError(f"{key}: expected a list, got {type(value).__name__}")
    return [_json_object(item) for item in cast("list[Any]", value)]


def _str(data: JsonObject, key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise WireFormatError(f"{key}: expected a string, got {type(value).__name__}")
    return value


def _int(data: JsonObject, key: str) -> int:
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireFormatError(f"{key}: expected an integer, got {type(value).__name__}")
    return value


def _bool(data: JsonObject, key: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise WireFormatError(f"{key}: expected a boolean, got {type(value).__name__}")
    return value


def _base64(data: JsonObject, key: str) -> bytes:
    value = _str(data, key)
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as error:
        raise WireFormatError(f"{key}: not base64: {error}") from None


_EPOCH = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)


def _time(data: JsonObject, key: str) -> datetime.datetime:
    """Parse an RFC 3339 time as Go writes it (nanoseconds, `Z`); absent means Go's zero time."""
    value = _str(data, key)
    if not value:
        return _EPOCH
    text = value.replace("Z", "+00:00")
    # Python reads at most microseconds: cut Go's nanoseconds to six digits.
    if "." in text:
        head, _, tail = text.partition(".")
        digits = "".join(c for c in tail if c.isdigit())
        zone = tail[len(digits) :]
        text = f"{head}.{digits[:6]:0<6}{zone}"
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise WireFormatError(f"{key}: not an RFC 3339 time: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)
