"""Charm config -> validated state. No GARM calls, no ops imports.

A bad value raises `InvalidConfigError`, whose message names the option so the charm can set
Blocked with it; nothing is removed or changed while the config is invalid. `CharmState` is the
one validated snapshot a hook (or action) reads and passes down: the config is parsed once.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal
from urllib.parse import unquote, urlsplit

from text_numbers import parse_duration, parse_whole_number
from workload.config import ProxyConfig
from workload.exporter import EXPORTER_PORT

LogLevel = Literal["debug", "info", "warn", "error"]
LOG_LEVELS: Final = ("debug", "info", "warn", "error")

# A wait longer than a week never ends in practice; a hand-over grace longer than a day only
# delays every changeover. Both bounds are far above any sensible value.
MAX_WAIT: Final = datetime.timedelta(days=7)
# A retired scale set's listener is offline from its retirement, and GitHub deletes a scale set
# whose listener stays offline for 7 days (garm-behaviour B33): its drain and delete must end
# well before, whatever GARM restarts or kept deletes (retried up to an hour apart) cost.
MAX_DRAIN_TIMEOUT: Final = datetime.timedelta(hours=144)
MAX_HANDOVER_GRACE: Final = datetime.timedelta(days=1)
# The stop hook waits this long at most for busy runners while the application goes (ADR 0036):
# a day bounds how long Juju's removal can be held up.
MAX_TEARDOWN_TIMEOUT: Final = datetime.timedelta(days=1)
# A tick less often than daily is no tick; hooks alone do that (`0`).
MAX_RECONCILE_INTERVAL: Final = datetime.timedelta(days=1)
MAX_PORT: Final = 65535
# GARM runs as the unprivileged `garm` user, which cannot bind a port below 1024.
MIN_PORT: Final = 1024
# A tick more often than this only repeats a pass still in progress (a pass with GitHub checks
# can take longer than a few seconds) and loads GARM for nothing.
MIN_RECONCILE_INTERVAL: Final = datetime.timedelta(seconds=30)
# A runner is stuck only when GARM had its own chance to finish or reap it: a boot takes
# minutes, and a shorter timeout force-removes runners in `error` within the pass that saw them,
# before anyone could read why they failed.
MIN_STUCK_TIMEOUT: Final = datetime.timedelta(minutes=10)
# external-url is pushed into GARM (callback and metadata URLs) and every runner's environment:
# a sane URL is far shorter. DNS bounds a name at 253 characters and a label at 63.
MAX_URL_LENGTH: Final = 1024
MAX_HOST_LENGTH: Final = 253
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# A label inet_aton reads as a number (decimal, or hex with 0x).
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*", re.ASCII)
# More replacements at once than this is a second scale set, not a refresh.
MAX_REFRESH_SURGE: Final = 50
# A budget or a bound above these holds no fleet a cloud can run (ADR 0038).
MAX_CHANGEOVER_SURGE: Final = 100_000
MAX_WRITES_PER_PASS: Final = 10_000
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
    # How long a teardown waits for runners with a job before it reports them (ADR 0036).
    teardown_timeout: datetime.timedelta = datetime.timedelta(minutes=30)
    # Extra idle runners all changeovers in flight may hold; zero: no bound (ADR 0038).
    changeover_surge: int = 40
    # GARM writes per reconcile at most; zero: no bound (ADR 0038).
    max_writes_per_pass: int = 50
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
    # Nor %-encoded: GARM and every runner decode the path (%00 ends a C string, %0a a line).
    if not unquote(url).isprintable():
        raise ValueError("must not contain control characters, even %-encoded")
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
        if not _is_plain_ipv6(netloc[1:].partition("]")[0]):
            raise ValueError("must have a DNS name or an IP address as its host")
        return url
    host, colon, port = netloc.rpartition(":") if netloc.count(":") == 1 else (netloc, "", "")
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
        ascii_host.encode("ascii").decode("idna")  # an A-label must decode (xn--a does not)
    except UnicodeError:
        raise ValueError("must have a DNS name or an IP address as its host") from None
    labels = ascii_host.removesuffix(".").split(".")
    if len(ascii_host) > MAX_HOST_LENGTH or not all(map(_HOST_LABEL.match, labels)):
        raise ValueError("must have a DNS name or an IP address as its host")
    if _NUMERIC_LABEL.fullmatch(labels[-1]) and not _is_ipv4(ascii_host.removesuffix(".")):
        # No top-level domain is numeric: 2130706433, 127.1 or 0x7f.0.0.1 is an address in a
        # shorthand each resolver reads its own way (or not at all).
        raise ValueError("must have a DNS name or an IP address (a.b.c.d) as its host")
    if host.isascii():
        return url  # as the operator spelled it
    return url.replace(netloc, f"{ascii_host}{colon}{port}", 1)


def _is_plain_ipv6(literal: str) -> bool:
    """Whether a bracketed host is an IPv6 address: not IPvFuture (`[v1.x]`), no zone (`%eth0`).

    A zone names an interface of one machine, meaningless to runners and GitHub.
    """
    try:
        ipaddress.IPv6Address(literal)
    except ValueError:
        return False
    return "%" not in literal


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


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


def _changeover_surge(value: Any) -> int:
    return _whole(value, MAX_CHANGEOVER_SURGE)


def _max_writes(value: Any) -> int:
    return _whole(value, MAX_WRITES_PER_PASS)


def _whole(value: Any, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be a whole number")
    if not 0 <= value <= maximum:
        raise ValueError(f"must be 0 (no bound) to {maximum}")
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


def _teardown_timeout(value: Any) -> datetime.timedelta:
    return parse_duration(_text(value), MAX_TEARDOWN_TIMEOUT, zero=True)


def _handover_grace(value: Any) -> datetime.timedelta:
    return parse_duration(_text(value), MAX_HANDOVER_GRACE)


def _stuck_timeout(value: Any) -> datetime.timedelta:
    return parse_duration(_text(value), MAX_WAIT, zero=True, minimum=MIN_STUCK_TIMEOUT)


def _interval(value: Any) -> datetime.timedelta:
    return parse_duration(
        _text(value), MAX_RECONCILE_INTERVAL, zero=True, minimum=MIN_RECONCILE_INTERVAL
    )


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


def _check_port(netloc: str) -> None:
    """An explicit port must be 1-65535 in ASCII digits (urlsplit accepts 0).

    A colon without a port (`host:`) is refused too: urlsplit reads it as no port at all.
    """
    if netloc.startswith("["):
        after_host = netloc.partition("]")[2]
        if not after_host:
            return
        port = after_host.removeprefix(":") if after_host.startswith(":") else "-"
    elif netloc.count(":") == 1:
        port = netloc.partition(":")[2]
    else:
        return  # no port (several colons: not a host, refused as one)
    try:
        parse_whole_number(port, minimum=1, maximum=MAX_PORT)
    except ValueError:
        raise ValueError("must have a port of 1-65535, or none") from None


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
    "changeover-surge": ("changeover_surge", _changeover_surge),
    "max-writes-per-pass": ("max_writes_per_pass", _max_writes),
    "runner-stuck-timeout": ("runner_stuck_timeout", _stuck_timeout),
    "teardown-timeout": ("teardown_timeout", _teardown_timeout),
    "backup-keep": ("backup_keep", _backup_keep),
}


SQLITE: Final = "sqlite3"
POSTGRESQL: Final = "postgresql"


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
