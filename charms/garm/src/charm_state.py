"""Charm config -> validated state. No GARM calls, no ops imports.

A bad value raises `InvalidConfigError`, whose message names the option so the charm can set
Blocked with it; nothing is removed or changed while the config is invalid.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from docs_links import SWITCH_DATABASE

LogLevel = Literal["debug", "info", "warn", "error"]

# At most 9 digits per unit: no arithmetic on a huge number, no OverflowError in timedelta.
_DURATION = re.compile(r"^(?:(?P<h>\d{1,9})h)?(?:(?P<m>\d{1,9})m)?(?:(?P<s>\d{1,9})s)?$")
# A drain longer than a week never ends in practice; a hand-over grace longer than a day only
# delays every changeover. Both bounds are far above any sensible value.
MAX_DRAIN_TIMEOUT: Final = datetime.timedelta(days=7)
MAX_HANDOVER_GRACE: Final = datetime.timedelta(days=1)
# A tick less often than daily is no tick; hooks alone do that (`0`).
MAX_RECONCILE_INTERVAL: Final = datetime.timedelta(days=1)
MAX_PORT: Final = 65535


class InvalidConfigError(ValueError):
    """A config option has a value the charm cannot use.

    Attributes:
        option: the option's name as `juju config` spells it.
        reason: why, without echoing the value.
    """

    def __init__(self, option: str, reason: str) -> None:
        super().__init__(f"invalid config {option}: {reason}")
        self.option = option
        self.reason = reason


def parse_duration(
    value: str, maximum: datetime.timedelta, *, zero: bool = False
) -> datetime.timedelta:
    """Read a duration such as "7h", "90m", "60s" or "1h30m", at most `maximum`.

    "0" is read too when `zero`.

    Raises:
        ValueError: not such a duration, zero (unless `zero`), or longer than `maximum`.
    """
    text = value.strip()
    if zero and text == "0":
        return datetime.timedelta(0)
    match = _DURATION.match(text)
    if not text or match is None:
        raise ValueError("must be a duration such as 7h, 90m or 60s")
    parts = {unit: int(amount or 0) for unit, amount in match.groupdict().items()}
    seconds = parts["h"] * 3600 + parts["m"] * 60 + parts["s"]
    if seconds <= 0 and not zero:
        raise ValueError("must be longer than zero")
    if seconds > maximum.total_seconds():
        raise ValueError(f"must be at most {int(maximum.total_seconds()) // 3600}h")
    return datetime.timedelta(seconds=seconds)


class CharmConfig(BaseModel):
    """The charm's config options, validated."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    external_url: str = Field(default="", alias="external-url")
    port: int = Field(default=9997, ge=1, le=65535)
    log_level: LogLevel = Field(default="info", alias="log-level")
    drain_timeout: datetime.timedelta = Field(
        default=datetime.timedelta(hours=7), alias="drain-timeout"
    )
    handover_grace: datetime.timedelta = Field(
        default=datetime.timedelta(seconds=60), alias="handover-grace"
    )
    handover_timeout: datetime.timedelta = Field(
        default=datetime.timedelta(minutes=30), alias="handover-timeout"
    )
    # Zero: no reconcile tick, only hooks (docs/adr/0006-reconcile-tick-timer.md).
    reconcile_interval: datetime.timedelta = Field(
        default=datetime.timedelta(minutes=1), alias="reconcile-interval"
    )

    @field_validator("external_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value:
            return ""
        if any(char.isspace() or not char.isprintable() for char in value):
            raise ValueError("must not contain spaces or control characters")
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        if "@" in parts.netloc:
            raise ValueError("must not carry a user or password (user@host)")
        if parts.query or parts.fragment:
            raise ValueError("must not have a query or a fragment")
        _check_port(parts.netloc)
        return value

    @field_validator("drain_timeout", "handover_timeout", mode="before")
    @classmethod
    def _check_up_to_a_week(cls, value: Any) -> Any:
        # A drain or a wait for capacity longer than a week never ends in practice.
        return parse_duration(value, MAX_DRAIN_TIMEOUT) if isinstance(value, str) else value

    @field_validator("handover_grace", mode="before")
    @classmethod
    def _check_handover_grace(cls, value: Any) -> Any:
        return parse_duration(value, MAX_HANDOVER_GRACE) if isinstance(value, str) else value

    @field_validator("reconcile_interval", mode="before")
    @classmethod
    def _check_interval(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_duration(value, MAX_RECONCILE_INTERVAL, zero=True)
        return value

    def base_url(self, address: str) -> str:
        """The URL runners and GitHub reach GARM at: external-url, else the unit's address."""
        if self.external_url:
            return self.external_url
        host = f"[{address}]" if ":" in address else address
        return f"http://{host}:{self.port}"


def _check_port(netloc: str) -> None:
    """An explicit port must be 1-65535 (urlsplit accepts 0 and raises past 65535)."""
    try:
        port = urlsplit(f"//{netloc}").port
    except ValueError:
        port = 0
    if port is not None and not 1 <= port <= MAX_PORT:
        raise ValueError("must have a port of 1-65535, or none")


def parse_config(raw: Mapping[str, Any]) -> CharmConfig:
    """Validate the charm's config.

    Raises:
        InvalidConfigError: naming the first bad option.
    """
    try:
        return CharmConfig.model_validate(dict(raw))
    except ValidationError as error:
        first = error.errors()[0]
        option = _option_name(first["loc"])
        # pydantic's "Input should be ..." said as the rule the operator must meet.
        reason = str(first["msg"]).removeprefix("Value error, ").replace("Input should", "must")
        raise InvalidConfigError(option, reason) from None


def _option_name(location: tuple[int | str, ...]) -> str:
    field = str(location[0]) if location else "config"
    by_field = {name: info.alias or name for name, info in CharmConfig.model_fields.items()}
    return by_field.get(field, field)


SQLITE: Final = "sqlite3"
POSTGRESQL: Final = "postgresql"
# Too long for a status (120 characters): the charm logs it with the problem.
SWITCH_HOWTO: Final = SWITCH_DATABASE


def backend_switch_problem(
    wanted: str, recorded: str, *, sqlite_has_state: bool, garm_has_objects: bool | None
) -> str | None:
    """Why GARM must not move to the `wanted` backend now, or None when it may.

    GARM cannot copy its data between backends, so a switch is allowed only when nothing would
    be lost: GARM never ran, the SQLite file was moved aside by the operator, or GARM holds no
    credentials and no scale sets (only what bootstrap recreates). Unknown counts as data.

    Args:
        wanted: the backend the relations ask for.
        recorded: the backend GARM last ran with ("" if never).
        sqlite_has_state: whether the SQLite file exists with content.
        garm_has_objects: whether GARM reports credentials or scale sets; None if unknown.
    """
    if recorded in ("", wanted):
        return None
    if recorded == SQLITE and not sqlite_has_state:
        return None
    if garm_has_objects is False:
        return None
    if recorded == SQLITE:
        return (
            "GARM's data is in SQLite, which cannot move to PostgreSQL: "
            "remove the database relation"
        )
    return "GARM's data is in PostgreSQL: relate the database again"
