"""Make GARM's GitHub App credentials and entities match what the configurators ask for.

Credentials are keyed by what they are, not by who asked: configurators that share a GitHub App
installation share one credentials object, named `garm-app-<app id>-<installation id>`. GARM
never returns a key, so the description carries a short fingerprint of the App settings; a
different fingerprint means the key was rotated and the credentials are updated in place.

Entities (organizations, repositories) are matched case-insensitively, as GARM's duplicate check
does. An entity is created with a random webhook secret because GARM insists on one even for
scale sets, which use no webhooks. Configurators sharing an installation or an entity must agree
on it, and while one of them is unreadable nothing existing is changed (`github_agreement`,
ADR 0018). Nothing here deletes credentials or entities: that happens
after the scale-set pass, bottom-up, in `github_cleanup` (GARM refuses to delete an entity that
has scale sets, and credentials that an entity uses).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import secrets
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from garm_api import GarmApiError, InvalidRequest
from garm_api.models import Entity, EntityKind, GithubCredentials
from reconcile.github_agreement import agreed_bindings
from scaleset_reconciler.spec import EntityRef

logger = logging.getLogger(__name__)

DESCRIPTION_PREFIX = "managed by the garm charm; settings "


class GithubApi(Protocol):
    """The GARM calls this reconciler makes (a subset of `garm_api.GarmClient`)."""

    def list_github_credentials(self) -> list[GithubCredentials]: ...  # noqa: D102

    def create_github_app_credentials(  # noqa: D102
        self,
        name: str,
        *,
        endpoint: str,
        app_id: int,
        installation_id: int,
        private_key_pem: bytes,
        description: str = "",
    ) -> GithubCredentials: ...

    def update_github_app_credentials(  # noqa: D102
        self,
        credentials_id: int,
        *,
        app_id: int,
        installation_id: int,
        private_key_pem: bytes,
        description: str | None = None,
    ) -> GithubCredentials: ...

    def list_entities(self, kind: EntityKind) -> list[Entity]: ...  # noqa: D102

    def create_repository(  # noqa: D102
        self, owner: str, name: str, *, credentials_name: str, webhook_secret: str
    ) -> Entity: ...

    def create_organization(  # noqa: D102
        self, name: str, *, credentials_name: str, webhook_secret: str
    ) -> Entity: ...

    def update_entity_credentials(  # noqa: D102
        self, kind: EntityKind, entity_id: str, credentials_name: str
    ) -> Entity: ...


@dataclasses.dataclass(frozen=True)
class GithubApp:
    """A GitHub App installation GARM authenticates as."""

    app_id: int
    installation_id: int
    private_key_pem: bytes = dataclasses.field(repr=False)

    @property
    def credentials_name(self) -> str:
        """The name of the GARM credentials for this installation."""
        return f"garm-app-{self.app_id}-{self.installation_id}"

    @property
    def description(self) -> str:
        """A description that changes exactly when the App settings change."""
        digest = hashlib.sha256(
            f"{self.app_id}:{self.installation_id}:".encode() + self.private_key_pem
        ).hexdigest()
        return DESCRIPTION_PREFIX + digest[:16]


@dataclasses.dataclass(frozen=True)
class EntityBinding:
    """One configurator's need: this entity, reached through this App.

    `application` is the configurator that published it, named in conflicts.
    """

    entity: EntityRef
    app: GithubApp
    application: str = ""


@dataclasses.dataclass
class GithubReport:
    """What a pass did, and what it could not do, keyed by credentials or entity name."""

    writes: list[str] = dataclasses.field(default_factory=list[str])
    problems: dict[str, str] = dataclasses.field(default_factory=dict[str, str])
    warnings: list[str] = dataclasses.field(default_factory=list[str])


def reconcile_github(
    api: GithubApi,
    bindings: Sequence[EntityBinding],
    *,
    endpoint: str = "github.com",
    new_webhook_secret: Callable[[], str] = lambda: secrets.token_urlsafe(32),
    complete: bool = True,
) -> GithubReport:
    """Create or update credentials, then entities, so every binding can be served.

    A refusal for one credentials object or entity is reported and the others go on; an outage
    (`GarmUnreachable`) propagates at once. Bindings the configurators disagree on are reported
    and left alone; without `complete` (a configurator is unreadable) nothing existing changes.
    """
    report = GithubReport()
    agreed, conflicts = agreed_bindings(bindings)
    report.problems.update(conflicts)
    apps = _distinct_apps(agreed)
    ready_credentials = _reconcile_credentials(api, apps, endpoint, report, complete=complete)
    entity_bindings = _entity_bindings(agreed)
    _reconcile_entities(
        api,
        entity_bindings,
        ready_credentials,
        new_webhook_secret,
        report,
        complete=complete,
    )
    return report


def _distinct_apps(bindings: Iterable[EntityBinding]) -> list[GithubApp]:
    apps: dict[str, GithubApp] = {}
    for binding in bindings:
        apps.setdefault(binding.app.credentials_name, binding.app)
    return list(apps.values())


def _reconcile_credentials(
    api: GithubApi,
    apps: list[GithubApp],
    endpoint: str,
    report: GithubReport,
    *,
    complete: bool,
) -> set[str]:
    """Return the names of the credentials that exist (with the wanted settings if complete).

    Without `complete`, existing credentials are kept as they are: an unreadable configurator
    may publish the same installation with the key they hold.
    """
    if not apps:
        return set()
    existing = {c.name.lower(): c for c in api.list_github_credentials()}
    ready: set[str] = set()
    for app in apps:
        current = existing.get(app.credentials_name.lower())
        try:
            if current is None or complete:
                _ensure_credentials(api, app, current, endpoint, report)
        except (GarmApiError, InvalidRequest) as error:
            report.problems[app.credentials_name] = str(error)
            logger.warning("GitHub App credentials %s: %s", app.credentials_name, error)
        else:
            ready.add(app.credentials_name)
    return ready


def _ensure_credentials(
    api: GithubApi,
    app: GithubApp,
    current: GithubCredentials | None,
    endpoint: str,
    report: GithubReport,
) -> None:
    if current is None:
        api.create_github_app_credentials(
            app.credentials_name,
            endpoint=endpoint,
            app_id=app.app_id,
            installation_id=app.installation_id,
            private_key_pem=app.private_key_pem,
            description=app.description,
        )
        report.writes.append(f"created credentials {app.credentials_name}")
    elif current.description != app.description:
        api.update_github_app_credentials(
            current.id,
            app_id=app.app_id,
            installation_id=app.installation_id,
            private_key_pem=app.private_key_pem,
            description=app.description,
        )
        report.writes.append(f"updated credentials {app.credentials_name}")


def _entity_bindings(bindings: Sequence[EntityBinding]) -> list[EntityBinding]:
    """Keep one binding per entity (agreed bindings of one entity all name the same App)."""
    chosen: dict[tuple[EntityKind, str], EntityBinding] = {}
    for binding in bindings:
        chosen.setdefault(_entity_key(binding.entity), binding)
    return list(chosen.values())


def _entity_key(entity: EntityRef) -> tuple[EntityKind, str]:
    return entity.kind, entity.name.lower()


def _reconcile_entities(
    api: GithubApi,
    bindings: list[EntityBinding],
    ready_credentials: set[str],
    new_webhook_secret: Callable[[], str],
    report: GithubReport,
    *,
    complete: bool,
) -> None:
    for kind in sorted({binding.entity.kind for binding in bindings}):
        existing = {e.name.lower(): e for e in api.list_entities(kind)}
        for binding in (b for b in bindings if b.entity.kind is kind):
            name = binding.entity.name
            if binding.app.credentials_name not in ready_credentials:
                report.problems.setdefault(
                    name, f"waiting for credentials {binding.app.credentials_name}"
                )
                continue
            current = existing.get(name.lower())
            if current is not None and not complete:
                continue  # not re-pointed: an unreadable configurator may serve it
            try:
                _ensure_entity(api, binding, current, new_webhook_secret, report)
            except GarmApiError as error:
                report.problems[name] = str(error)
                logger.warning("GitHub entity %s: %s", name, error)


def _ensure_entity(
    api: GithubApi,
    binding: EntityBinding,
    current: Entity | None,
    new_webhook_secret: Callable[[], str],
    report: GithubReport,
) -> None:
    ref, app = binding.entity, binding.app
    if current is None:
        if ref.kind is EntityKind.REPOSITORY:
            owner, _, name = ref.name.partition("/")
            api.create_repository(
                owner,
                name,
                credentials_name=app.credentials_name,
                webhook_secret=new_webhook_secret(),
            )
        else:
            api.create_organization(
                ref.name,
                credentials_name=app.credentials_name,
                webhook_secret=new_webhook_secret(),
            )
        report.writes.append(f"created {ref.kind.value.rstrip('s')} {ref.name}")
    elif current.credentials_name.lower() != app.credentials_name.lower():
        api.update_entity_credentials(ref.kind, current.id, app.credentials_name)
        report.writes.append(f"pointed {ref.name} at credentials {app.credentials_name}")
