"""Charm config -> validated state. No GARM calls, no ops imports.

A bad value raises `InvalidConfigError`, whose message names the option so the charm can set
Blocked with it; nothing is removed or changed while the config is invalid. `CharmState` is the
one validated snapshot a hook (or action) reads and passes down: the config is parsed once.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal
from urllib.parse import unquote, urlsplit

from reconcile.docs_links import SWITCH_DATABASE
from workload.config import ProxyConfig
from workload.exporter import EXPORTER_PORT

LogLevel = Literal["debug", "info", "warn", "error"]
LOG_LEVELS: Final = ("debug", "info", "warn", "error")

# At most 9 digits per unit: no arithmetic on a huge number, no OverflowError in timedelta.
_DURATION = re.compile(r"^(?:(?P<h>\d{1,9})h)?(?:(?P<m>\d{1,9})m)?(?:(?P<s>\d{1,9})s)?$")
# A wait longer than a week never ends in practice; a hand-over grace longer than a day only
# delays every changeover. Both bounds are far above any sensible value.
MAX_WAIT: Final = datetime.timedelta(days=7)
# A retired scale set's listener is offline from its retirement, and GitHub deletes a scale set
# whose listener stays offline for 7 days (garm-behaviour B33): its drain and delete must end
# well before, whatever GARM restarts or kept deletes (retried up to an hour apart) cost.
MAX_DRAIN_TIMEOUT: Final = datetime.timedelta(hours=144)
MAX_HANDOVER_GRACE: Final = datetime.timedelta(days=1)
# A tick less often than daily is no tick; hooks alone do that (`0`).
MAX_RECONCILE_INTERVAL: Final = datetime.timedelta(days=1)
MAX_PORT: Final = 65535
# GARM runs as the unprivileged `garm` user, which cannot bind a port below 1024.
MIN_PORT: Final = 1024
# A tick more often than this only repeats a pass still in progress (a pass with GitHub checks
# can take longer than a few seconds) and loads GARM for nothing.
MIN_RECONCILE_INTERVAL: Final = datetime.timedelta(seconds=30)
# external-url is pushed into GARM (callback and metadata URLs) and every runner's environment:
# a sane URL is far shorter. DNS bounds a name at 253 characters and a label at 63.
MAX_URL_LENGTH: Final = 1024
MAX_HOST_LENGTH: Final = 253
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# More replacements at once than this is a second scale set, not a refresh.
MAX_REFRESH_SURGE: Final = 50
MAX_BACKUP_KEEP: Final = 1000


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


@dataclasses.dataclass(frozen=True)
class CharmConfig:
    """The charm's config options, validated (`parse_config`)."""

    external_url: str = ""
    port: int = 9997
    log_level: LogLevel = "info"
    drain_timeout: datetime.timedelta = datetime.timedelta(hours=7)
    handover_grace: datetime.timedelta = datetime.timedelta(seconds=60)
    handover_timeout: datetime.timedelta = datetime.timedelta(minutes=30)
    # Zero: no reconcile tick, only hooks (docs/adr/0006-reconcile-tick-timer.md).
    reconcile_interval: datetime.timedelta = datetime.timedelta(minutes=1)
    # Replacement runners a rolling refresh boots at a time per scale set (ADR 0022).
    refresh_surge: int = 1
    # Zero: runners are not checked for being stuck (ADR 0023).
    runner_stuck_timeout: datetime.timedelta = datetime.timedelta(minutes=30)
    # How many backups stay after a new one (`workload.backup_retention`).
    backup_keep: int = 10

    def base_url(self, address: str) -> str:
        """The URL runners and GitHub reach GARM at: external-url, else the unit's address."""
        if self.external_url:
            return self.external_url
        host = f"[{address}]" if ":" in address else address
        return f"http://{host}:{self.port}"


@dataclasses.dataclass(frozen=True)
class CharmState:
    """What one hook reads from Juju once, validated: the config, the leadership, the proxy.

    Built once per hook or action (`from_juju`) and passed to everything the hook does, so no
    step reads or validates the config again.

    Attributes:
        config: the charm's options.
        leader: whether this unit is the leader (only the leader runs GARM, ADR 0003).
        proxy: the proxy Juju gives the charm, for downloads and GitHub calls.
    """

    config: CharmConfig
    leader: bool
    proxy: ProxyConfig

    @classmethod
    def from_juju(
        cls, config: Mapping[str, Any], *, leader: bool, environ: Mapping[str, str]
    ) -> CharmState:
        """Validate what Juju gives this hook.

        Args:
            config: the charm's config as Juju gives it.
            leader: whether this unit is the leader.
            environ: the hook's environment (Juju's proxy settings).

        Raises:
            InvalidConfigError: an option has a value the charm cannot use (its Blocked text).
        """
        return cls(parse_config(config), leader, ProxyConfig.from_environment(environ))


def parse_config(raw: Mapping[str, Any]) -> CharmConfig:
    """Validate the charm's config; options the charm does not know are ignored.

    Plain Python rather than a pydantic model: every hook reads the config, and a fresh process
    pays for pydantic's import and schema building (docs/reference/performance.md).

    Raises:
        InvalidConfigError: naming the first bad option, in the order of `_OPTIONS`.
    """
    values: dict[str, Any] = {}
    for option, (field, check) in _OPTIONS.items():
        # Juju spells the options with hyphens; the field name is read too, as before.
        given = raw.get(option, raw.get(field))
        if given is None:
            continue
        try:
            values[field] = check(given)
        except ValueError as error:
            raise InvalidConfigError(option, str(error)) from None
    return CharmConfig(**values)


def _url(value: Any) -> str:
    """An http(s) URL GARM and the certificate request accept; a non-ASCII host IDNA-encoded."""
    url = _text(value).strip().rstrip("/")
    if not url:
        return ""
    if len(url) > MAX_URL_LENGTH:
        raise ValueError(f"must be at most {MAX_URL_LENGTH} characters")
    if any(char.isspace() or not char.isprintable() for char in url):
        raise ValueError("must not contain spaces or control characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    if "@" in parts.netloc:
        raise ValueError("must not carry a user or password (user@host)")
    if parts.query or parts.fragment:
        raise ValueError("must not have a query or a fragment")
    _check_port(parts.netloc)
    if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")):
        raise ValueError("must not have . or .. in its path")
    return _with_ascii_host(url, parts.netloc)


def _with_ascii_host(url: str, netloc: str) -> str:
    """`url` with its host IDNA-encoded (X.509 and DNS take A-labels only); checked as a name.

    Raises:
        ValueError: the host is neither an IP literal nor a DNS name, even IDNA-encoded.
    """
    if netloc.startswith("["):
        return url  # an IPv6 literal: urlsplit has checked it
    host, colon, port = netloc.rpartition(":") if netloc.count(":") == 1 else (netloc, "", "")
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
        ascii_host.encode("ascii").decode("idna")  # an A-label must decode (xn--a does not)
    except UnicodeError:
        raise ValueError("must have a DNS name or an IP address as its host") from None
    labels = ascii_host.removesuffix(".").split(".")
    if len(ascii_host) > MAX_HOST_LENGTH or not all(map(_HOST_LABEL.match, labels)):
        raise ValueError("must have a DNS name or an IP address as its host")
    if host.isascii():
        return url  # as the operator spelled it
    return url.replace(netloc, f"{ascii_host}{colon}{port}", 1)


def _port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be a valid integer")
    if not MIN_PORT <= value <= MAX_PORT:
        raise ValueError(f"must be {MIN_PORT}-{MAX_PORT} (GARM runs unprivileged)")
    if value == EXPORTER_PORT:
        exporter = f"{EXPORTER_PORT} (the charm's metrics exporter)"
        raise ValueError(f"must not be {exporter}: pick another")
    return value


def _refresh_surge(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be a whole number")
    if not 1 <= value <= MAX_REFRESH_SURGE:
        raise ValueError(f"must be 1-{MAX_REFRESH_SURGE}")
    return value


def _backup_keep(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be a whole number")
    if not 1 <= value <= MAX_BACKUP_KEEP:
        raise ValueError(f"must be 1-{MAX_BACKUP_KEEP}")
    return value


def _log_level(value: Any) -> LogLevel:
    if value not in LOG_LEVELS:
        raise ValueError("must be 'debug', 'info', 'warn' or 'error'")
    return value


def _up_to_a_week(value: Any) -> datetime.timedelta:
    # A wait for capacity longer than a week never ends in practice.
    return parse_duration(_text(value), MAX_WAIT)


def _drain_timeout(value: Any) -> datetime.timedelta:
    return parse_duration(_text(value), MAX_DRAIN_TIMEOUT)


def _handover_grace(value: Any) -> datetime.timedelta:
    return parse_duration(_text(value), MAX_HANDOVER_GRACE)


def _stuck_timeout(value: Any) -> datetime.timedelta:
    return parse_duration(_text(value), MAX_WAIT, zero=True)


def _interval(value: Any) -> datetime.timedelta:
    interval = parse_duration(_text(value), MAX_RECONCILE_INTERVAL, zero=True)
    if interval and interval < MIN_RECONCILE_INTERVAL:
        raise ValueError(f"must be 0 or at least {MIN_RECONCILE_INTERVAL.seconds}s")
    return interval


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


def _check_port(netloc: str) -> None:
    """An explicit port must be 1-65535 (urlsplit accepts 0 and raises past 65535).

    A colon without a port (`host:`) is refused too: urlsplit reads it as no port at all.
    """
    if netloc.endswith(":"):
        raise ValueError("must have a port of 1-65535, or none")
    try:
        port = urlsplit(f"//{netloc}").port
    except ValueError:
        port = 0
    if port is not None and not 1 <= port <= MAX_PORT:
        raise ValueError("must have a port of 1-65535, or none")


# Option (as `juju config` spells it) -> the field it sets and the check that reads it.
_OPTIONS: Final[Mapping[str, tuple[str, Callable[[Any], Any]]]] = {
    "external-url": ("external_url", _url),
    "port": ("port", _port),
    "log-level": ("log_level", _log_level),
    "drain-timeout": ("drain_timeout", _drain_timeout),
    "handover-grace": ("handover_grace", _handover_grace),
    "handover-timeout": ("handover_timeout", _up_to_a_week),
    "reconcile-interval": ("reconcile_interval", _interval),
    "refresh-surge": ("refresh_surge", _refresh_surge),
    "runner-stuck-timeout": ("runner_stuck_timeout", _stuck_timeout),
    "backup-keep": ("backup_keep", _backup_keep),
}


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
