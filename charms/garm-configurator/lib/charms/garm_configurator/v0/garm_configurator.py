"""The `garm_configurator` relation interface: one GARM scale set, its provider and GitHub App.

A garm-configurator application (the provider) describes one runner scale set. Its leader
publishes that description in the relation's *application* databag; the garm charm (the
requirer) reads it, creates the GitHub App credentials, the OpenStack provider and the scale
set in GARM. Secret values never travel in the databag: the OpenStack password and the GitHub
App private key are app-owned Juju secrets granted to the relation, and only their ids are
published.

The databag holds only strings:

| key          | value                                                                  |
|--------------|------------------------------------------------------------------------|
| `version`    | the schema version of the other keys, `"1"` or `"2"`                   |
| `scaleset`   | JSON of `ScaleSet`                                                     |
| `openstack`  | JSON of `OpenStackProvider` (`password_secret_id`, never the password) |
| `github-app` | JSON of `GitHubApp` (`private_key_secret_id`, never the key)           |
| `runner`     | version 2 only: JSON of `RunnerOptions` (proxy, mirror, job hooks)     |

A publication whose runner options are all defaults is written as version 1 without `runner`,
so a garm charm that reads only version 1 keeps working until an operator sets one of them.
Readers of version 2 ignore `runner` fields they do not know: a later library may add optional
runner fields without a new version, as long as ignoring them is safe (ADR 0007).

The secrets' content keys are `password` (`OPENSTACK_PASSWORD_KEY`) and `private-key`
(`GITHUB_APP_PRIVATE_KEY_KEY`); each secret also holds `app` (`PUBLISHER_KEY`), the name of the
application that publishes it.

Trust: the requirer reads a secret only for the relation whose application it names. A secret
the requirer owns itself (its own admin credentials, say) or whose `app` is not the publishing
application is refused (`UntrustedSecretError`): a configurator cannot make the requirer hand
out a secret that is not the configurator's own.

Provider (garm-configurator, leader only):

    data = GarmConfiguratorData(scaleset=..., openstack=..., github_app=...)
    publish(self.model, relation, data)

Requirer (garm), one relation at a time; everything in the databag is untrusted input:

    try:
        data = read_relation(relation)
        secrets = fetch_secrets(self.model, data, publisher=relation.app.name)
    except NotPublishedError:
        ...  # nothing published yet: keep what exists, never treat it as "delete everything"
    except InvalidDataError as error:  # includes UnsupportedVersionError
        ...  # report str(error); keep what exists
    except UntrustedSecretError as error:
        ...  # a secret that is not the configurator's own: report str(error); keep what exists
    except SecretUnavailableError as error:
        ...  # not granted yet or malformed content; retry on secret-changed/relation-changed

Error texts never contain secret values nor echo the offending input.
"""

import base64
import binascii
import datetime
import ipaddress
import json
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Final, Literal, Self, TypeVar
from urllib.parse import urlsplit

import ops
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

# The unique Charmhub library identifier, never change it
LIBID = "63d76706740d4db695752011a0a79f95"

# Increment this major API version when introducing breaking changes
LIBAPI = 0

# Increment this PATCH version before using `charmcraft publish-lib` or reset
# to 0 if you are raising the major API version
LIBPATCH = 7

PYDEPS = ["pydantic>=2,<3"]

SCHEMA_VERSION: Final = "2"
BASE_SCHEMA_VERSION: Final = "1"
SUPPORTED_VERSIONS: Final = frozenset({BASE_SCHEMA_VERSION, SCHEMA_VERSION})

VERSION_KEY: Final = "version"
SCALESET_KEY: Final = "scaleset"
OPENSTACK_KEY: Final = "openstack"
GITHUB_APP_KEY: Final = "github-app"
RUNNER_KEY: Final = "runner"
DATA_KEYS: Final = (VERSION_KEY, SCALESET_KEY, OPENSTACK_KEY, GITHUB_APP_KEY, RUNNER_KEY)

OPENSTACK_PASSWORD_KEY: Final = "password"  # noqa: S105  (a content key, not a password)
GITHUB_APP_PRIVATE_KEY_KEY: Final = "private-key"
# Every published secret names the application that publishes it under this content key.
PUBLISHER_KEY: Final = "app"

# A readable bound on the logical name: the garm charm names each generation with the name's
# first characters and a hash, within what OpenStack's server tags leave (10 characters in all).
SCALESET_NAME_MAX_LENGTH: Final = 40
# GARM stores labels in varchar(64) tag rows.
LABEL_MAX_LENGTH: Final = 64
MAX_LABELS: Final = 32
RUNNER_GROUP_MAX_LENGTH: Final = 64
# A sanity bound, far above any OpenStack quota, that keeps hostile numbers out of GARM.
MAX_RUNNERS_LIMIT: Final = 10_000
OPENSTACK_NAME_MAX_LENGTH: Final = 255
URL_MAX_LENGTH: Final = 2048
GITHUB_ID_MAX: Final = 2**53 - 1
PASSWORD_MAX_LENGTH: Final = 4096
PRIVATE_KEY_MAX_LENGTH: Final = 16384
# Bounds what a reader parses at all: a well-formed value is a few hundred bytes.
MAX_VALUE_LENGTH: Final = 65536
# The runner section carries scripts, so it may be larger than the others.
MAX_RUNNER_VALUE_LENGTH: Final = 262144
MAX_SCRIPT_LENGTH: Final = 16384
MAX_PRE_INSTALL_SCRIPTS: Final = 8
# LIBPATCH 5: the pre-install scripts' names and bodies together. They travel in the runner's
# user data, base64-encoded twice (in the cloud-config, then for Nova), which Nova caps at
# 65,535 characters; this leaves room for what the garm charm and GARM add, and a CA bundle
# of 8 KiB (docs/reference/garm-charm.md, "Runner user data").
PRE_INSTALL_SCRIPTS_TOTAL_MAX: Final = 15360
SCRIPT_NAME_MAX_LENGTH: Final = 64
MAX_EXCLUDED_ADDRESSES: Final = 64
MAX_REDIRECT_PORTS: Final = 32
DEFAULT_REDIRECT_PORTS: Final = ("80", "443")
MAX_REPORTED_ERRORS: Final = 5

OS_ARCHES: Final = ("amd64", "arm64", "arm", "s390x", "ppc64le")
OsArch = Literal["amd64", "arm64", "arm", "s390x", "ppc64le"]

# One rule on both sides: a letter first and no dash at the end, so that every name the
# configurator accepts is one the garm charm can name generations after.
_SCALESET_NAME_RE = re.compile(r"[a-z](?:[a-z0-9-]*[a-z0-9])?")
_LABEL_RE = re.compile(r"[A-Za-z0-9._-]+")
_GITHUB_OWNER_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?")
_GITHUB_REPO_RE = re.compile(r"[A-Za-z0-9._-]{1,100}")
_SECRET_ID_RE = re.compile(r"secret:(?://[A-Za-z0-9-]{1,64}/)?[A-Za-z0-9]{1,64}")
_PRINTABLE_NAME_RE = re.compile(r"[^\x00-\x1f\x7f]+")
_IMAGE_ID_RE = re.compile(r"[^\x00-\x20\x7f]+")
_SCRIPT_NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_NUMERIC_LABEL_RE = re.compile(r"[0-9]+|0x[0-9a-f]*", re.ASCII)
# A cloud's instance metadata service by name, and at the addresses no link-local rule covers
# (AWS over IPv6, Alibaba Cloud); 169.254.169.254 and fe80::/10 are link-local.
_METADATA_NAMES: Final = frozenset(
    {"metadata", "metadata.google.internal", "instance-data", "instance-data.ec2.internal"}
)
_METADATA_ADDRESSES: Final = frozenset(
    {ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")}
)
_PKCS1_RE = re.compile(
    r"-----BEGIN RSA PRIVATE KEY-----\n(?P<body>[A-Za-z0-9+/=\n]+)-----END RSA PRIVATE KEY-----"
)


_ASCII_DIGITS: Final = frozenset("0123456789")


def parse_whole_number(text: object, *, minimum: int = 0, maximum: int) -> int:
    """Read a whole number of ASCII digits from `minimum` to `maximum` (LIBPATCH 6).

    The one reading of a number from text in this library: `str.isdigit()` is true for "²",
    which `int()` refuses, and `int()` reads "٣" (Arabic-Indic three), " 7", "+7" and "1_0";
    none of them is a number here. Too long a text is refused before `int()` sees it.

    Args:
        text: the text.
        minimum: the smallest number accepted.
        maximum: the largest number accepted.

    Returns:
        The number.

    Raises:
        ValueError: not digits 0-9 only, or outside the range; never echoing the text.
    """
    if (
        not isinstance(text, str)
        or not text
        or not set(text) <= _ASCII_DIGITS
        or len(text) > len(str(maximum)) + 2
    ):
        raise ValueError(f"must be a whole number {minimum}-{maximum} (digits 0-9)")
    value = int(text)
    if not minimum <= value <= maximum:
        raise ValueError(f"must be {minimum}-{maximum}")
    return value


def check_scaleset_name(value: str) -> str:
    """Check a scale set's logical name.

    Args:
        value: the name.

    Returns:
        The name, unchanged.

    Raises:
        ValueError: the name is empty, too long or uses other characters.
    """
    if not 0 < len(value) <= SCALESET_NAME_MAX_LENGTH or not _SCALESET_NAME_RE.fullmatch(value):
        raise ValueError(
            f"must be 1-{SCALESET_NAME_MAX_LENGTH} characters of a-z, 0-9 and '-', "
            "starting with a letter and not ending with '-'"
        )
    return value


def check_label(value: str) -> str:
    """Check one runner label.

    Args:
        value: the label.

    Returns:
        The label, unchanged.

    Raises:
        ValueError: the label is empty, too long or uses other characters.
    """
    if not 0 < len(value) <= LABEL_MAX_LENGTH or not _LABEL_RE.fullmatch(value):
        raise ValueError(
            f"each label must be 1-{LABEL_MAX_LENGTH} characters of A-Z, a-z, 0-9, '.', '_', '-'"
        )
    return value


def check_runner_group(value: str) -> str:
    """Check a GitHub runner group name.

    GARM puts the group name unescaped into a query string, hence the label alphabet.

    Args:
        value: the runner group.

    Returns:
        The runner group, unchanged.

    Raises:
        ValueError: the group is empty, too long or uses other characters.
    """
    if not 0 < len(value) <= RUNNER_GROUP_MAX_LENGTH or not _LABEL_RE.fullmatch(value):
        raise ValueError(
            f"must be 1-{RUNNER_GROUP_MAX_LENGTH} characters of A-Z, a-z, 0-9, '.', '_', '-'"
        )
    return value


def check_github_owner(value: str) -> str:
    """Check a GitHub organization or repository owner name.

    Args:
        value: the name.

    Returns:
        The name, unchanged.

    Raises:
        ValueError: not a name GitHub allows.
    """
    if len(value) > 39 or not _GITHUB_OWNER_RE.fullmatch(value) or "--" in value:
        raise ValueError(
            "must be a GitHub account name: 1-39 characters of A-Z, a-z, 0-9 and single '-', "
            "not starting or ending with '-'"
        )
    return value


def check_github_repo_name(value: str) -> str:
    """Check a GitHub repository name (without its owner).

    Args:
        value: the name.

    Returns:
        The name, unchanged.

    Raises:
        ValueError: not a name GitHub allows.
    """
    if len(value) > 100 or not _GITHUB_REPO_RE.fullmatch(value) or value in {".", ".."}:
        raise ValueError(
            "must be a GitHub repository name: 1-100 characters of A-Z, a-z, 0-9, '.', '_', '-'"
        )
    return value


def check_auth_url(value: str) -> str:
    """Check an OpenStack (keystone) authentication URL.

    Args:
        value: the URL.

    Returns:
        The URL, unchanged.

    Raises:
        ValueError: not an http or https URL with a host, or one carrying a user or password
            (published in clear: credentials belong in secrets).
    """
    checked = _check_url(
        value, "must be an http:// or https:// URL with a host, e.g. https://keystone:5000/v3"
    )
    _check_off_link(urlsplit(checked).hostname or "")
    return checked


def check_http_url(value: str) -> str:
    """Check an http or https URL with a host (a proxy, a registry mirror, a collector).

    Args:
        value: the URL.

    Returns:
        The URL, unchanged.

    Raises:
        ValueError: not an http or https URL with a host, or one carrying a user or password.
    """
    return _check_url(
        value, "must be an http:// or https:// URL with a host, e.g. http://proxy.example:3128"
    )


def check_proxy_url(value: str) -> str:
    """Check the runners' HTTP proxy: an http or https URL, off link-local and metadata.

    Args:
        value: the URL.

    Returns:
        The URL, unchanged.

    Raises:
        ValueError: as `check_http_url`, or a link-local or cloud-metadata host (LIBPATCH 6):
            every runner would send its traffic, tokens included, to the cloud's metadata.
    """
    checked = check_http_url(value)
    _check_off_link(urlsplit(checked).hostname or "")
    return checked


def _check_off_link(host: str) -> None:
    """Refuse a link-local or cloud-metadata host, and numeric shorthand hosts (LIBPATCH 6).

    The checks are literal: nothing resolves a name here. `2852039166` or `169.254.43518` is
    169.254.169.254 to a resolver that reads the inet_aton shorthands, so a host whose last
    label is a number must be a dotted quad.
    """
    name = host.lower().rstrip(".")
    if name in _METADATA_NAMES:
        raise ValueError("must not be a cloud metadata service or a link-local address")
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        if _NUMERIC_LABEL_RE.fullmatch(name.rpartition(".")[2]):
            problem = "must have a DNS name or an IP address (a.b.c.d) as its host"
            raise ValueError(problem) from None
        return
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_link_local or address in _METADATA_ADDRESSES:
        raise ValueError("must not be a cloud metadata service or a link-local address")


def _check_url(value: str, problem: str) -> str:
    if not 0 < len(value) <= URL_MAX_LENGTH or not _IMAGE_ID_RE.fullmatch(value):
        raise ValueError(problem)
    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018  (parsing the port is what raises for a bad one)
    except ValueError:
        raise ValueError(problem) from None
    if parts.scheme not in {"http", "https"} or not host:
        raise ValueError(problem)
    # A relation databag is readable by every unit of both applications, in clear.
    if "@" in parts.netloc:
        raise ValueError("must not carry a user or password (user@host): use a secret")
    return value


def check_ipv4_target(value: str) -> str:
    """Check an IPv4 address or CIDR that the transparent proxy leaves alone.

    Args:
        value: the address or CIDR, e.g. 10.0.0.0/8.

    Returns:
        The value, unchanged.

    Raises:
        ValueError: neither an IPv4 address nor an IPv4 CIDR.
    """
    try:
        network = ipaddress.ip_network(value, strict=False)
    except ValueError:
        network = None
    if network is None or network.version != 4 or value != value.strip():
        raise ValueError("must be IPv4 addresses or CIDRs, e.g. 10.0.0.0/8,192.168.1.10")
    return value


def check_port_range(value: str) -> str:
    """Check a TCP port (`443`) or an inclusive port range (`8000-9000`).

    Args:
        value: the port or range.

    Returns:
        The value, unchanged.

    Raises:
        ValueError: not a port from 1 to 65535 nor a range N-M with N <= M.
    """
    head, dash, tail = value.partition("-")
    try:
        first = parse_whole_number(head, minimum=1, maximum=65535)
        last = parse_whole_number(tail, minimum=1, maximum=65535) if dash else first
    except ValueError:
        first, last = 1, 0
    if first > last:
        raise ValueError("must be ports 1-65535 or ranges N-M, e.g. 80,443,8000-9000")
    return value


def check_script(value: str) -> str:
    """Check a bash script the runners run: bounded, and text a shell can hold.

    Args:
        value: the script.

    Returns:
        The script, unchanged.

    Raises:
        ValueError: too long or containing a NUL character.
    """
    if len(value) > MAX_SCRIPT_LENGTH or "\x00" in value:
        raise ValueError(f"must be at most {MAX_SCRIPT_LENGTH} characters of text")
    return value


def check_pre_install_scripts(value: dict[str, str]) -> dict[str, str]:
    """Check the pre-install scripts together: their names and bodies fit the user data.

    Args:
        value: the scripts by name.

    Returns:
        The scripts, unchanged.

    Raises:
        ValueError: their names and bodies are longer than `PRE_INSTALL_SCRIPTS_TOTAL_MAX`.
    """
    total = sum(len(name) + len(body) for name, body in value.items())
    if total > PRE_INSTALL_SCRIPTS_TOTAL_MAX:
        raise ValueError(
            f"names and scripts together must be at most {PRE_INSTALL_SCRIPTS_TOTAL_MAX} "
            f"characters (they are {total}): runners get them in user data, which OpenStack caps"
        )
    return value


def check_script_name(value: str) -> str:
    """Check a pre-install script's name, which becomes a file name on the runner.

    Args:
        value: the name.

    Returns:
        The name, unchanged.

    Raises:
        ValueError: empty, too long, or not a plain file name.
    """
    if not 0 < len(value) <= SCRIPT_NAME_MAX_LENGTH or not _SCRIPT_NAME_RE.fullmatch(value):
        raise ValueError(
            f"script names must be 1-{SCRIPT_NAME_MAX_LENGTH} of A-Z a-z 0-9 . _ - "
            "(not starting with .)"
        )
    return value


def check_openstack_name(value: str) -> str:
    """Check an OpenStack name (user, project, domain, flavor, network).

    Args:
        value: the name.

    Returns:
        The name, unchanged.

    Raises:
        ValueError: empty, too long, with control characters or surrounding whitespace.
    """
    if (
        not 0 < len(value) <= OPENSTACK_NAME_MAX_LENGTH
        or not _PRINTABLE_NAME_RE.fullmatch(value)
        or value != value.strip()
    ):
        raise ValueError(
            f"must be 1-{OPENSTACK_NAME_MAX_LENGTH} printable characters "
            "without leading or trailing spaces"
        )
    return value


def check_region_name(value: str) -> str:
    """Check an OpenStack region name, where empty means the cloud's default region.

    Args:
        value: the region name.

    Returns:
        The region name, unchanged.

    Raises:
        ValueError: too long, with control characters or surrounding whitespace.
    """
    return value and check_openstack_name(value)


def check_image_id(value: str) -> str:
    """Check an OpenStack image name or id.

    Args:
        value: the image.

    Returns:
        The image, unchanged.

    Raises:
        ValueError: empty, too long, or with spaces or control characters.
    """
    if not 0 < len(value) <= OPENSTACK_NAME_MAX_LENGTH or not _IMAGE_ID_RE.fullmatch(value):
        raise ValueError(
            f"must be an image name or id: 1-{OPENSTACK_NAME_MAX_LENGTH} characters without spaces"
        )
    return value


def check_secret_id(value: str) -> str:
    """Check a Juju secret id (`secret:<id>` or `secret://<model>/<id>`).

    Args:
        value: the secret id.

    Returns:
        The secret id, unchanged.

    Raises:
        ValueError: not a Juju secret id.
    """
    if len(value) > 160 or not _SECRET_ID_RE.fullmatch(value):
        raise ValueError("must be a Juju secret id such as secret:d1n3kb7mp25c78a8ob30")
    return value


def check_password(value: str) -> str:
    """Check an OpenStack password without ever echoing it.

    Args:
        value: the password.

    Returns:
        The password, unchanged.

    Raises:
        ValueError: empty or too long.
    """
    if not 0 < len(value) <= PASSWORD_MAX_LENGTH:
        raise ValueError(f"the password must be 1-{PASSWORD_MAX_LENGTH} characters")
    return value


def check_private_key_pem(value: str) -> str:
    """Check a GitHub App private key: one PEM block of an unencrypted PKCS#1 RSA key.

    GARM answers 500 for a PKCS#8 key, so that form is refused with the conversion command.
    The key itself never appears in an error.

    Args:
        value: the PEM text.

    Returns:
        The PEM text with surrounding whitespace removed and a final newline.

    Raises:
        ValueError: the key is not an unencrypted PKCS#1 RSA key.
    """
    pem = value.strip().replace("\r\n", "\n")
    if len(pem) > PRIVATE_KEY_MAX_LENGTH:
        raise ValueError(f"the private key is longer than {PRIVATE_KEY_MAX_LENGTH} characters")
    if "-----BEGIN PRIVATE KEY-----" in pem:
        raise ValueError(
            "the private key is PKCS#8 (BEGIN PRIVATE KEY), which GARM refuses; convert it with "
            "`openssl pkcs8 -in key.pem -traditional -nocrypt -out key-rsa.pem` "
            "(or `openssl rsa -in key.pem -traditional -out key-rsa.pem`)"
        )
    if "ENCRYPTED" in pem:
        raise ValueError(
            "the private key is passphrase-protected; decrypt it with "
            "`openssl rsa -in key.pem -traditional -out key-rsa.pem`"
        )
    match = _PKCS1_RE.fullmatch(pem)
    if match is None or not _is_der_sequence(match.group("body")):
        raise ValueError(
            "must be the GitHub App's PEM private key, starting with "
            "-----BEGIN RSA PRIVATE KEY-----"
        )
    return pem + "\n"


def _is_der_sequence(body: str) -> bool:
    try:
        der = base64.b64decode(body.replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return False
    # An RSAPrivateKey is an ASN.1 SEQUENCE; anything else is not a key.
    return len(der) > 64 and der[0] == 0x30


ScaleSetName = Annotated[str, AfterValidator(check_scaleset_name)]
Label = Annotated[str, AfterValidator(check_label)]
RunnerGroup = Annotated[str, AfterValidator(check_runner_group)]
GitHubOwner = Annotated[str, AfterValidator(check_github_owner)]
GitHubRepoName = Annotated[str, AfterValidator(check_github_repo_name)]
AuthUrl = Annotated[str, AfterValidator(check_auth_url)]
OpenStackName = Annotated[str, AfterValidator(check_openstack_name)]
RegionName = Annotated[str, AfterValidator(check_region_name)]
ImageId = Annotated[str, AfterValidator(check_image_id)]
SecretId = Annotated[str, AfterValidator(check_secret_id)]
GitHubId = Annotated[int, Field(ge=1, le=GITHUB_ID_MAX)]
HttpUrl = Annotated[str, AfterValidator(check_http_url)]
ProxyUrl = Annotated[str, AfterValidator(check_proxy_url)]
Ipv4Target = Annotated[str, AfterValidator(check_ipv4_target)]
PortRange = Annotated[str, AfterValidator(check_port_range)]
Script = Annotated[str, AfterValidator(check_script)]
ScriptName = Annotated[str, AfterValidator(check_script_name)]


_M = TypeVar("_M", bound=BaseModel)

# Scheduled min idle runners (LIBPATCH 4) ------------------------------------------------------

_DAYS: Final = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WINDOW = re.compile(
    r"(?P<days>[A-Za-z,-]+)\s+(?P<start>[0-9]{2}:[0-9]{2})-(?P<end>[0-9]{2}:[0-9]{2})\s+"
    r"(?P<zone>\S+)",
    re.ASCII,
)
# Zones that are no place: `localtime` and `posixrules` are whatever each machine's clock is
# set to (the garm charm's and the configurator's may differ), `Factory` is "no zone set", and
# `right/` zones count leap seconds, which no wall clock does (LIBPATCH 6).
_PSEUDO_ZONES: Final = frozenset({"localtime", "posixrules", "factory"})
MAX_SCHEDULE_WINDOWS: Final = 20


@dataclass(frozen=True)
class MinIdleWindow:
    """Min idle runners on some weekdays between two local times of a time zone.

    `end` at or before `start` runs past midnight into the next day (which need not be listed).
    """

    days: frozenset[int]
    start: datetime.time
    end: datetime.time
    zone: str
    value: int
    text: str

    def active(self, now: datetime.datetime) -> bool:
        """Whether `now` (aware) falls in the window, in the window's own local time."""
        local = now.astimezone(zoneinfo.ZoneInfo(self.zone))
        clock = local.time().replace(tzinfo=None)
        if self.start < self.end:
            return local.weekday() in self.days and self.start <= clock < self.end
        if clock >= self.start:
            return local.weekday() in self.days
        return clock < self.end and (local.weekday() - 1) % 7 in self.days


@dataclass(frozen=True)
class MinIdleSchedule:
    """Min idle runners by time of day: the highest active window's value, else `default`."""

    windows: tuple[MinIdleWindow, ...]
    default: int

    def at(self, now: datetime.datetime) -> tuple[int, str]:
        """The min idle runners at `now` and the active window's text ("default" if none)."""
        active = [window for window in self.windows if window.active(now)]
        if not active:
            return self.default, "default"
        best = max(active, key=lambda window: window.value)
        return best.value, best.text

    def highest(self) -> int:
        """The largest min idle the schedule can ask for."""
        return max([self.default, *(window.value for window in self.windows)])


def check_min_idle_schedule(text: str) -> str:
    """Validate a schedule (see `parse_min_idle_schedule`; "" is none); return it stripped."""
    if text.strip():
        parse_min_idle_schedule(text)
    return text.strip()


def parse_min_idle_schedule(text: str) -> MinIdleSchedule:
    """Parse `Mon-Fri 08:00-18:00 Europe/Berlin=6; Sat 10:00-14:00 UTC=2; default=1`.

    Entries are separated by `;`. A window is weekdays (`Mon`, `Mon-Fri`, `Sat,Sun`), a local
    time range `HH:MM-HH:MM` (past midnight when the end is not after the start) and an IANA
    time zone, then `=` and the min idle runners. `default=N` (0 when absent) applies outside
    every window; where windows overlap, the highest value applies. Times are local wall-clock
    times, so a window keeps its local hours across daylight-saving changes.

    Raises:
        ValueError: the text does not follow this form; the message names the entry by its
            position, never echoing the input.
    """
    entries = [entry.strip() for entry in text.split(";") if entry.strip()]
    if not entries:
        raise ValueError("the schedule is empty")
    if len(entries) > MAX_SCHEDULE_WINDOWS + 1:
        raise ValueError(f"at most {MAX_SCHEDULE_WINDOWS} windows")
    windows: list[MinIdleWindow] = []
    default = 0
    for number, entry in enumerate(entries, start=1):
        head, equals, count = entry.rpartition("=")
        if not equals or not count.strip() or not set(count.strip()) <= _ASCII_DIGITS:
            raise ValueError(f"entry {number}: expected <window>=<count> or default=<count>")
        try:
            value = parse_whole_number(count.strip(), maximum=MAX_RUNNERS_LIMIT)
        except ValueError:
            raise ValueError(f"entry {number}: at most {MAX_RUNNERS_LIMIT} runners") from None
        if head.strip().lower() == "default":
            default = value
            continue
        windows.append(_window(head.strip(), value, number))
    if len(windows) > MAX_SCHEDULE_WINDOWS:
        raise ValueError(f"at most {MAX_SCHEDULE_WINDOWS} windows")
    return MinIdleSchedule(tuple(windows), default)


def _window(text: str, value: int, number: int) -> MinIdleWindow:
    match = _WINDOW.fullmatch(text)
    if match is None:
        raise ValueError(f"entry {number}: expected e.g. 'Mon-Fri 08:00-18:00 UTC=2'")
    try:
        start = datetime.time.fromisoformat(match["start"])
        end = datetime.time.fromisoformat(match["end"])
    except ValueError:
        raise ValueError(f"entry {number}: times are HH:MM, 00:00-23:59") from None
    zone = match["zone"]
    if zone.lower() in _PSEUDO_ZONES or zone.lower().startswith("right/"):
        # Named from the known set, so no input is echoed.
        kind = zone.lower() if zone.lower() in _PSEUDO_ZONES else "right/"
        raise ValueError(f"entry {number}: {kind} is no place's time zone (use e.g. UTC)")
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"entry {number}: unknown time zone") from None
    days = _days(match["days"], number)
    return MinIdleWindow(days, start, end, match["zone"], value, text)


def _days(spec: str, number: int) -> frozenset[int]:
    days: set[int] = set()
    for part in spec.lower().split(","):
        first, _, last = part.partition("-")
        if first not in _DAYS or (last and last not in _DAYS):
            raise ValueError(f"entry {number}: days are Mon..Sun, e.g. Mon-Fri or Sat,Sun")
        start, end = _DAYS.index(first), _DAYS.index(last or first)
        days.update((start + offset) % 7 for offset in range((end - start) % 7 + 1))
    return frozenset(days)


MinIdleScheduleText = Annotated[str, AfterValidator(check_min_idle_schedule)]


class _Model(BaseModel):
    # Strict and closed: any field this version does not define is an error, not a guess.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class GitHubEntity(_Model):
    """The GitHub organization or repository a scale set serves.

    Attributes:
        kind: "org" or "repo".
        owner: the organization, or the repository's owner.
        repo: the repository's name; only (and always) for kind "repo".
    """

    kind: Literal["org", "repo"]
    owner: GitHubOwner
    repo: GitHubRepoName | None = None

    @model_validator(mode="after")
    def _repo_only_for_repos(self) -> Self:
        if (self.kind == "repo") != (self.repo is not None):
            raise ValueError("'repo' is required for kind 'repo' and forbidden for kind 'org'")
        return self

    @property
    def path(self) -> str:
        """The entity as GitHub writes it: `org` or `owner/repo`."""
        return self.owner if self.repo is None else f"{self.owner}/{self.repo}"


class ScaleSet(_Model):
    """One runner scale set as the operator configured it.

    Attributes:
        name: logical name, [a-z0-9-], starting with a letter, at most 40 characters.
        labels: runner labels, unique case-insensitively, in the operator's order.
        flavor: OpenStack flavor of the runner VMs.
        image: OpenStack image name or id of the runner VMs.
        os_type: always "linux".
        os_arch: the runners' architecture.
        min_idle_runners: idle runners GARM keeps ready.
        max_runners: the most runners at once; at least 1 and at least min_idle_runners.
        runner_group: the GitHub runner group.
        entity: the organization or repository.
    """

    name: ScaleSetName
    labels: tuple[Label, ...] = Field(min_length=1, max_length=MAX_LABELS)
    flavor: OpenStackName
    image: ImageId
    os_type: Literal["linux"] = "linux"
    os_arch: OsArch
    min_idle_runners: int = Field(ge=0, le=MAX_RUNNERS_LIMIT)
    max_runners: int = Field(ge=1, le=MAX_RUNNERS_LIMIT)
    runner_group: RunnerGroup
    entity: GitHubEntity

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        folded = [label.casefold() for label in self.labels]
        if len(set(folded)) != len(folded):
            raise ValueError("labels must be unique, ignoring case")
        if self.min_idle_runners > self.max_runners:
            raise ValueError("min_idle_runners must not exceed max_runners")
        return self


class OpenStackProvider(_Model):
    """The OpenStack cloud the runners run on.

    Attributes:
        auth_url: keystone URL, http or https.
        username: the OpenStack user.
        password_secret_id: Juju secret id; the secret's key `password` holds the password.
        project_name: the OpenStack project.
        user_domain_name: the user's domain.
        project_domain_name: the project's domain.
        region_name: the region; empty for the cloud's default.
        network: the network the runner VMs attach to.
    """

    auth_url: AuthUrl
    username: OpenStackName
    password_secret_id: SecretId
    project_name: OpenStackName
    user_domain_name: OpenStackName
    project_domain_name: OpenStackName
    region_name: RegionName = ""
    network: OpenStackName


class GitHubApp(_Model):
    """The GitHub App GARM authenticates with.

    Attributes:
        app_id: the App's id.
        installation_id: the App installation's id on the organization or repository.
        private_key_secret_id: Juju secret id; the secret's key `private-key` holds the
            PKCS#1 PEM private key.
    """

    app_id: GitHubId
    installation_id: GitHubId
    private_key_secret_id: SecretId


class RunnerOptions(BaseModel):
    """What runs on each runner besides the runner itself; every field is optional.

    Unknown fields are ignored, not refused: a later library may add an optional runner field
    without a new schema version, and an older reader then simply does not apply it.

    Attributes:
        http_proxy: the HTTP proxy the transparent proxy (aproxy) forwards to; None for none.
        aproxy_exclude_addresses: IPv4 addresses and CIDRs aproxy leaves alone.
        aproxy_redirect_ports: ports and N-M ranges aproxy redirects.
        dockerhub_mirror: the Docker Hub registry mirror URL; None for none.
        otel_collector_endpoint: where the runner's telemetry collector exports; None for none.
        pre_job_script: bash run before each job; empty for none.
        pre_install_scripts: bash scripts by name, run as root before the runner is installed.
    """

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    http_proxy: ProxyUrl | None = None
    aproxy_exclude_addresses: tuple[Ipv4Target, ...] = Field(
        default=(), max_length=MAX_EXCLUDED_ADDRESSES
    )
    aproxy_redirect_ports: tuple[PortRange, ...] = Field(
        default=DEFAULT_REDIRECT_PORTS, min_length=1, max_length=MAX_REDIRECT_PORTS
    )
    dockerhub_mirror: HttpUrl | None = None
    otel_collector_endpoint: HttpUrl | None = None
    pre_job_script: Script = ""
    pre_install_scripts: Annotated[
        dict[ScriptName, Script], AfterValidator(check_pre_install_scripts)
    ] = Field(default_factory=dict[str, str], max_length=MAX_PRE_INSTALL_SCRIPTS)
    # LIBPATCH 4: min idle runners by time of day (`parse_min_idle_schedule`); "" for none. An
    # older reader ignores it and keeps the scale set's min_idle_runners.
    min_idle_schedule: MinIdleScheduleText = ""

    def is_default(self) -> bool:
        """Whether nothing is set, so a version-1 publication says the same."""
        return self == RunnerOptions()


class GarmConfiguratorData(_Model):
    """Everything one garm-configurator publishes.

    Attributes:
        scaleset: the scale set.
        openstack: its OpenStack provider.
        github_app: its GitHub App.
        runner: what runs on each runner besides the runner; defaults in a version-1 databag.
    """

    scaleset: ScaleSet
    openstack: OpenStackProvider
    github_app: GitHubApp
    runner: RunnerOptions = RunnerOptions()

    def to_databag(self) -> dict[str, str]:
        """Serialise to the relation's string databag, deterministically.

        Default runner options are written as version 1 without `runner`, which every garm
        charm reads; anything else is version 2 with `runner`.

        Returns:
            The databag content, keys `version`, `scaleset`, `openstack`, `github-app` and,
            for version 2, `runner`.
        """
        databag = {
            VERSION_KEY: BASE_SCHEMA_VERSION,
            SCALESET_KEY: _to_json(self.scaleset),
            OPENSTACK_KEY: _to_json(self.openstack),
            GITHUB_APP_KEY: _to_json(self.github_app),
        }
        if not self.runner.is_default():
            databag[VERSION_KEY] = SCHEMA_VERSION
            databag[RUNNER_KEY] = _to_json(self.runner)
        return databag


# The runner options of a version-1 databag: frozen, so every reader shares one (LIBPATCH 7).
_DEFAULT_RUNNER: Final = RunnerOptions()


def _to_json(model: BaseModel) -> str:
    # Sorted and compact, so equal data is an equal string and republishing changes nothing.
    return json.dumps(model.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class ConfiguratorSecrets:
    """The secret values behind a publication's secret ids; never printed.

    Attributes:
        openstack_password: the OpenStack password.
        github_app_private_key: the GitHub App's PKCS#1 PEM private key.
    """

    openstack_password: str = field(repr=False)
    github_app_private_key: str = field(repr=False)


class ConfiguratorDataError(Exception):
    """Base of every error reading a garm-configurator relation."""


class NotPublishedError(ConfiguratorDataError):
    """The configurator has published nothing yet: not the same as "wants nothing"."""


class InvalidDataError(ConfiguratorDataError):
    """The databag is malformed or hostile; the message says what, never echoing values."""


class UnsupportedVersionError(InvalidDataError):
    """The databag has a schema version this library does not know."""


class SecretUnavailableError(ConfiguratorDataError):
    """A published secret cannot be read (not granted, gone) or its content is malformed."""


class UntrustedSecretError(SecretUnavailableError):
    """A published secret is not the publisher's own: the requirer's, or another application's."""


class NotLeaderError(Exception):
    """Only the leader may publish the application databag."""


def publish(model: ops.Model, relation: ops.Relation, data: GarmConfiguratorData) -> bool:
    """Write `data` into this application's databag of `relation`, changing only what differs.

    Args:
        model: the provider charm's model.
        relation: one garm-configurator relation.
        data: what to publish.

    Returns:
        Whether any key changed.

    Raises:
        NotLeaderError: this unit is not the leader.
    """
    if not model.unit.is_leader():
        raise NotLeaderError("only the leader publishes the garm-configurator application data")
    databag = relation.data[model.app]
    wanted = data.to_databag()
    changed = False
    for key, value in wanted.items():
        if databag.get(key) != value:
            databag[key] = value
            changed = True
    for key in DATA_KEYS:
        if key not in wanted and key in databag:
            del databag[key]
            changed = True
    return changed


def read_relation(relation: ops.Relation) -> GarmConfiguratorData:
    """Read and validate the configurator's application data of one relation.

    Args:
        relation: one garm-configurator relation, seen from the garm charm.

    Returns:
        The validated data.

    Raises:
        NotPublishedError: the configurator has not published yet.
        InvalidDataError: the data is malformed, hostile, or of an unknown version.
    """
    return parse_app_data(relation.data[relation.app])


def parse_app_data(databag: Mapping[str, str]) -> GarmConfiguratorData:
    """Validate a configurator's application databag; keys of other libraries are ignored.

    Args:
        databag: the remote application's databag.

    Returns:
        The validated data.

    Raises:
        NotPublishedError: none of this interface's keys is present.
        UnsupportedVersionError: `version` is not one this library knows.
        InvalidDataError: any other problem.
    """
    if not any(key in databag for key in DATA_KEYS):
        raise NotPublishedError("the configurator has not published its scale set yet")
    version = databag.get(VERSION_KEY)
    if not isinstance(version, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidDataError("'version' is missing")
    if version not in SUPPORTED_VERSIONS:
        shown = version[:16] + ("..." if len(version) > 16 else "")
        raise UnsupportedVersionError(
            # Short: the garm charm's status prefixes the relation and must keep the fix.
            f"unsupported version {shown!r} (reads {', '.join(sorted(SUPPORTED_VERSIONS))}): "
            "upgrade the garm charm"
        )
    problems: list[str] = []
    scaleset = _parse_section(databag, SCALESET_KEY, ScaleSet, problems)
    openstack = _parse_section(databag, OPENSTACK_KEY, OpenStackProvider, problems)
    github_app = _parse_section(databag, GITHUB_APP_KEY, GitHubApp, problems)
    runner = _DEFAULT_RUNNER
    if version != BASE_SCHEMA_VERSION:
        runner = _parse_section(databag, RUNNER_KEY, RunnerOptions, problems)
    if scaleset is None or openstack is None or github_app is None or runner is None:
        raise InvalidDataError("; ".join(problems))
    schedule = runner.min_idle_schedule
    if schedule and parse_min_idle_schedule(schedule).highest() > scaleset.max_runners:
        raise InvalidDataError("runner.min_idle_schedule asks for more than max_runners")
    # LIBPATCH 7: each section was validated above and the envelope adds no rule of its own, so
    # it is assembled without a second validation pass (a reader of many configurators pays
    # for each one at every hook).
    return GarmConfiguratorData.model_construct(
        scaleset=scaleset, openstack=openstack, github_app=github_app, runner=runner
    )


def _parse_section(
    databag: Mapping[str, str], key: str, model: type[_M], problems: list[str]
) -> _M | None:
    raw = databag.get(key)
    if not isinstance(raw, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        problems.append(f"{key!r} is missing")
        return None
    limit = MAX_RUNNER_VALUE_LENGTH if key == RUNNER_KEY else MAX_VALUE_LENGTH
    if len(raw) > limit:
        problems.append(f"{key!r} is longer than {limit} characters")
        return None
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        problems.append(describe_validation_error(key, error))
        return None


def describe_validation_error(prefix: str, error: ValidationError) -> str:
    """Summarise a pydantic error by location and message, never by input value.

    Args:
        prefix: what was being validated, e.g. a databag key.
        error: the validation error.

    Returns:
        A one-line summary of at most `MAX_REPORTED_ERRORS` problems.
    """
    items = error.errors(include_url=False, include_input=False, include_context=False)
    parts: list[str] = []
    for item in items[:MAX_REPORTED_ERRORS]:
        location = ".".join(str(part) for part in (prefix, *item["loc"]))
        message = item["msg"].removeprefix("Value error, ")
        parts.append(f"{location}: {message}")
    if len(items) > MAX_REPORTED_ERRORS:
        parts.append(f"+{len(items) - MAX_REPORTED_ERRORS} more")
    return "; ".join(parts)


def fetch_secrets(
    model: ops.Model, data: GarmConfiguratorData, *, publisher: str
) -> ConfiguratorSecrets:
    """Read the secret values a publication refers to, tracking their latest revisions.

    Args:
        model: the requirer charm's model.
        data: a publication from `read_relation`.
        publisher: the name of the application that published `data` (`relation.app.name`).

    Returns:
        The OpenStack password and the GitHub App private key.

    Raises:
        UntrustedSecretError: a secret is owned by the requirer itself, or its content does not
            name `publisher`.
        SecretUnavailableError: a secret is not granted, is gone, or has malformed content.
    """
    password = _read_secret(
        model, data.openstack.password_secret_id, OPENSTACK_PASSWORD_KEY, publisher
    )
    private_key = _read_secret(
        model, data.github_app.private_key_secret_id, GITHUB_APP_PRIVATE_KEY_KEY, publisher
    )
    # Each problem names the databag field whose secret holds the bad value.
    try:
        check_password(password)
    except ValueError as error:
        raise SecretUnavailableError(f"{OPENSTACK_KEY}.password_secret_id: {error}") from None
    try:
        private_key = check_private_key_pem(private_key)
    except ValueError as error:
        raise SecretUnavailableError(f"{GITHUB_APP_KEY}.private_key_secret_id: {error}") from None
    return ConfiguratorSecrets(openstack_password=password, github_app_private_key=private_key)


def _read_secret(model: ops.Model, secret_id: str, key: str, publisher: str) -> str:
    try:
        secret = model.get_secret(id=secret_id)
        content = secret.get_content(refresh=True)
    except ops.SecretNotFoundError:
        raise SecretUnavailableError(f"secret {secret_id} does not exist (yet)") from None
    except ops.ModelError:
        raise SecretUnavailableError(f"secret {secret_id} is not granted to us (yet)") from None
    if _owned_by_us(secret):
        raise UntrustedSecretError(f"secret {secret_id} is owned by this application: refused")
    if content.get(PUBLISHER_KEY) != publisher:
        raise UntrustedSecretError(f"secret {secret_id} does not name {publisher}: refused")
    value = content.get(key)
    if value is None:
        raise SecretUnavailableError(f"secret {secret_id} has no key {key!r}")
    return value


def _owned_by_us(secret: ops.Secret) -> bool:
    """Whether this application or unit owns the secret: only an owner may read its info."""
    try:
        secret.get_info()
    except (ops.SecretNotFoundError, ops.ModelError):
        return False
    return True
