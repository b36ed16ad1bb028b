"""Bootstrap secrets and GARM's first-run, login and controller URLs. No ops imports.

The secrets (JWT signing key, database passphrase, admin credentials) are generated once by the
leader and kept in app-owned Juju secrets through a `SecretStore`; they are never regenerated
here, because a new passphrase would make GARM's encrypted data unreadable and a new JWT secret
would invalidate every runner's token. Only the `rotate-credentials` action replaces the JWT
secret and the admin password (`credential_rotation`, ADR 0010).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Final, Protocol, TypeVar

from garm_api import (
    ControllerInfo,
    GarmApiError,
    GarmClient,
    GarmConflict,
    GarmNotInitialised,
    GarmUnauthorized,
    GarmUnreachable,
    GarmUrlsRequired,
    WireFormatError,
)
from status_text.docs_links import RESET_ADMIN_PASSWORD

logger = logging.getLogger(__name__)

JWT_SECRET_LABEL: Final = "garm-jwt-secret"  # noqa: S105 - a label, not a secret
DB_PASSPHRASE_LABEL: Final = "garm-db-passphrase"  # noqa: S105 - a label
ADMIN_LABEL: Final = "garm-admin-credentials"
ADMIN_USERNAME: Final = "admin"
ADMIN_EMAIL: Final = "admin@garm.local"
PASSPHRASE_LENGTH: Final = 32
PENDING_PASSWORD_KEY: Final = "pending-password"  # noqa: S105 - a content key, not a password
# GARM opens its API within a second or two of starting (migrations included); a hook that just
# restarted it waits this long before it bootstraps and reconciles, instead of leaving the rest
# to the next hook, which may come minutes later.
START_TIMEOUT_SECONDS: Final = 30.0
START_POLL_SECONDS: Final = 0.25

_T = TypeVar("_T")


class SecretStore(Protocol):
    """Where the bootstrap secrets live (app-owned Juju secrets in the charm)."""

    def get(self, label: str) -> Mapping[str, str] | None:
        """The secret's content, or None when it does not exist (or is not readable yet)."""
        ...

    def create(self, label: str, content: Mapping[str, str]) -> None:
        """Create the secret (leader only)."""
        ...


class BootstrapError(Exception):
    """GARM refused the bootstrap in a way only the operator can fix; safe to show."""


@dataclasses.dataclass(frozen=True)
class BootstrapSecrets:
    """The values GARM's config and first-run need."""

    jwt_secret: str = dataclasses.field(repr=False)
    db_passphrase: str = dataclasses.field(repr=False)
    admin_username: str
    admin_password: str = dataclasses.field(repr=False)
    # Set while a password rotation is half-way (credential_rotation): GARM may have either.
    pending_admin_password: str = dataclasses.field(default="", repr=False)


def admin_content(creds: BootstrapSecrets) -> dict[str, str]:
    """The admin secret's content as `read_secrets` read it (the pending password if any)."""
    content = {"username": creds.admin_username, "password": creds.admin_password}
    if creds.pending_admin_password:
        content[PENDING_PASSWORD_KEY] = creds.pending_admin_password
    return content


@dataclasses.dataclass(frozen=True)
class ControllerUrls:
    """The URLs GARM gives runners and GitHub, as `garm-cli init` derives them.

    `ca_cert_bundle` (PEM) is the CA runners trust GARM's certificate with; GARM hands it to
    every new runner (garm-behaviour B29). Empty: GARM keeps none.
    """

    metadata_url: str
    callback_url: str
    webhook_url: str
    agent_url: str
    ca_cert_bundle: bytes = b""

    @classmethod
    def from_base(cls, base_url: str, ca_cert_bundle: bytes = b"") -> ControllerUrls:
        """Derive every URL from the external base URL."""
        base = base_url.rstrip("/")
        return cls(
            metadata_url=f"{base}/api/v1/metadata",
            callback_url=f"{base}/api/v1/callbacks",
            webhook_url=f"{base}/webhooks",
            agent_url=f"{base}/agent",
            ca_cert_bundle=ca_cert_bundle,
        )

    def matches(self, info: ControllerInfo) -> bool:
        """Whether GARM already has these URLs and this CA bundle."""
        return (
            info.metadata_url == self.metadata_url
            and info.callback_url == self.callback_url
            and info.webhook_url == self.webhook_url
            and info.agent_url == self.agent_url
            and pem_blocks(info.ca_cert_bundle) == pem_blocks(self.ca_cert_bundle)
        )


def pem_blocks(bundle: bytes) -> tuple[bytes, ...]:
    """The certificates of a PEM bundle as their base64 bodies, once each, in order.

    GARM stores a bundle re-encoded and without duplicates (garm-behaviour B29), so bundles
    are compared by their certificates, never byte for byte.
    """
    bodies = (re.sub(rb"\s+", b"", body) for body in _PEM_BODY.findall(bundle))
    return tuple(dict.fromkeys(bodies))


_PEM_BODY: Final = re.compile(
    rb"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.DOTALL
)


@dataclasses.dataclass(frozen=True)
class BootstrapReport:
    """What a bootstrap pass did."""

    initialised: bool
    urls_updated: bool


# Secrets --------------------------------------------------------------------------------------


def ensure_secrets(store: SecretStore) -> BootstrapSecrets | None:
    """The bootstrap secrets once all of them read back; else create the missing ones.

    Juju discards the secrets a hook added when the hook fails. GARM configured or first-run
    with such a secret would later refuse the charm's credentials (or fail to decrypt its own
    data), so secrets created in this hook are never used in it: the missing ones are created
    (leader only, never regenerated) and None is returned; a later hook reads them back.
    """
    existing = read_secrets(store)
    if existing is not None:
        return existing
    generators: dict[str, Callable[[], Mapping[str, str]]] = {
        JWT_SECRET_LABEL: lambda: {"secret": secrets.token_urlsafe(48)},
        DB_PASSPHRASE_LABEL: lambda: {"passphrase": new_passphrase()},
        ADMIN_LABEL: lambda: {"username": ADMIN_USERNAME, "password": secrets.token_urlsafe(32)},
    }
    for label, generate in generators.items():
        if store.get(label) is None:
            store.create(label, generate())
            logger.info("created the %s secret", label)
    return None


def read_secrets(store: SecretStore) -> BootstrapSecrets | None:
    """The bootstrap secrets, or None while the leader has not created them all."""
    jwt = store.get(JWT_SECRET_LABEL)
    passphrase = store.get(DB_PASSPHRASE_LABEL)
    admin = store.get(ADMIN_LABEL)
    if jwt is None or passphrase is None or admin is None:
        return None
    return BootstrapSecrets(
        jwt_secret=jwt["secret"],
        db_passphrase=passphrase["passphrase"],
        admin_username=admin["username"],
        admin_password=admin["password"],
        pending_admin_password=admin.get(PENDING_PASSWORD_KEY, ""),
    )


def new_passphrase() -> str:
    """A 32-character random passphrase (GARM's AES-256 key; must be exactly 32 characters).

    24 random bytes in URL-safe base64 are exactly 32 characters and about 192 bits of
    entropy, far above what zxcvbn needs for its top score.
    """
    passphrase = secrets.token_urlsafe(24)
    if len(passphrase) != PASSPHRASE_LENGTH:  # pragma: no cover - base64 length is fixed
        raise AssertionError("passphrase length")
    return passphrase


# GARM ---------------------------------------------------------------------------------------


def wait_until_serving(
    client: GarmClient,
    timeout: float | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Wait until GARM answers HTTP at all; True once it does, False after the timeout.

    Any answer counts, refusals and unreadable bodies included (409 before first-run, 401
    without a token): only an outage means GARM is not listening yet.

    Args:
        client: the client to probe with.
        timeout: seconds to wait; `START_TIMEOUT_SECONDS` when not given.
        clock: the monotonic clock to measure the wait with.
        sleep: how to wait between probes.
    """
    deadline = clock() + (START_TIMEOUT_SECONDS if timeout is None else timeout)
    while True:
        try:
            client.controller_info()
        except (GarmApiError, WireFormatError):
            return True
        except GarmUnreachable:
            if clock() >= deadline:
                return False
            sleep(START_POLL_SECONDS)
        else:
            return True


def bootstrap(
    client: GarmClient, creds: BootstrapSecrets, urls: ControllerUrls
) -> BootstrapReport:
    """Make GARM usable: first-run if needed, log in, set the controller URLs if they differ.

    The client stays logged in for the calls that follow.

    Raises:
        BootstrapError: GARM refuses the admin credentials from the Juju secret.
        GarmUnreachable: GARM did not answer (not started yet, or down).
        GarmApiError: any other refusal.
    """
    initialised = login(client, creds)
    info = _controller_info(client, creds)
    if info is not None and urls.matches(info):
        return BootstrapReport(initialised=initialised, urls_updated=False)
    _relogin_on_401(
        client,
        creds,
        lambda: client.update_controller(
            metadata_url=urls.metadata_url,
            callback_url=urls.callback_url,
            webhook_url=urls.webhook_url,
            agent_url=urls.agent_url,
            ca_cert_bundle=_bundle_change(urls, info),
        ),
    )
    logger.info("set GARM's controller URLs under %s", urls.webhook_url.rsplit("/", 1)[0])
    return BootstrapReport(initialised=initialised, urls_updated=True)


def _bundle_change(urls: ControllerUrls, info: ControllerInfo | None) -> bytes | None:
    """The bundle to send: ours, b"" to clear GARM's, or None when GARM has none to clear.

    None keeps the request what it was before TLS existed, for a GARM that never had one.
    """
    if urls.ca_cert_bundle or (info is not None and info.ca_cert_bundle):
        return urls.ca_cert_bundle
    return None


def login(client: GarmClient, creds: BootstrapSecrets) -> bool:
    """Log in as the admin, running first-run first when GARM asks for it.

    Returns:
        True when this call ran first-run.
    """
    try:
        client.login(creds.admin_username, creds.admin_password)
    except GarmNotInitialised:
        pass
    except GarmUnauthorized:
        if creds.pending_admin_password and _pending_login(client, creds):
            return False
        raise BootstrapError(
            f"GARM refuses the admin password; see {RESET_ADMIN_PASSWORD}"
        ) from None
    else:
        return False
    try:
        client.first_run(creds.admin_username, ADMIN_EMAIL, creds.admin_password)
    except GarmConflict:
        logger.info("GARM was already initialised")
    client.login(creds.admin_username, creds.admin_password)
    return True


def _pending_login(client: GarmClient, creds: BootstrapSecrets) -> bool:
    """Log in with the password a half-way rotation left pending, if GARM has it already."""
    try:
        client.login(creds.admin_username, creds.pending_admin_password)
    except GarmUnauthorized:
        return False
    logger.warning("GARM has the new admin password: run rotate-credentials again to finish")
    return True


def _controller_info(client: GarmClient, creds: BootstrapSecrets) -> ControllerInfo | None:
    try:
        return _relogin_on_401(client, creds, client.controller_info)
    except GarmUrlsRequired:
        return None


def _relogin_on_401(client: GarmClient, creds: BootstrapSecrets, call: Callable[[], _T]) -> _T:
    """Run a call; if the token was refused (expired, or GARM's secret changed), log in again."""
    try:
        return call()
    except GarmUnauthorized:
        client.login(creds.admin_username, creds.admin_password)
        return call()
