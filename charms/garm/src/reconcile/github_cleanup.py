"""Delete the GitHub objects the charm made once nothing wants or uses them: bottom-up.

Runs after the scale-set pass, and only when the desired state is complete (ADR 0009). GARM
refuses to delete an organization or repository that still has scale sets, and credentials
that an entity still uses (both 400, garm-behaviour B10 and B22), so the order is: scale sets
(the scale-set reconciler, which drains them first), then entities, then credentials. A
refusal means "not yet": the object is kept and the next pass tries again.

What is the charm's:

- credentials named `garm-app-<app id>-<installation id>` whose description starts with the
  charm's marker (`github_objects.DESCRIPTION_PREFIX`);
- an organization or repository that uses such credentials: the charm registers entities only
  with its own credentials. One an operator registered with their own credentials is never
  touched, and neither is anything else they made.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Protocol

from garm_api import GarmApiError
from garm_api.models import Entity, EntityKind, GithubCredentials, ScaleSet
from reconcile.github_objects import DESCRIPTION_PREFIX, EntityBinding, GithubApi

logger = logging.getLogger(__name__)

_KINDS = (EntityKind.REPOSITORY, EntityKind.ORGANIZATION)


class GithubCleanupApi(GithubApi, Protocol):
    """The calls the cleanup makes besides the GitHub reconciler's."""

    def list_scalesets(self) -> list[ScaleSet]:
        """Return every scale set."""
        ...

    def delete_entity(self, kind: EntityKind, entity_id: str) -> None:
        """Delete a repository or organization."""
        ...

    def delete_github_credentials(self, credentials_id: int) -> None:
        """Delete credentials."""
        ...


@dataclasses.dataclass(frozen=True)
class CleanupReport:
    """What the cleanup deleted, what it keeps for now, and what GARM refused otherwise.

    Attributes:
        deleted: `repository <name>`, `organization <name>`, `credentials <name>`.
        kept: unwanted objects still in use (scale sets, entities); tried again next pass.
        problems: object -> GARM's refusal other than "still in use".
    """

    deleted: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    problems: dict[str, str] = dataclasses.field(default_factory=dict[str, str])


def remove_unused_github_objects(
    api: GithubCleanupApi, bindings: Sequence[EntityBinding]
) -> CleanupReport:
    """Delete the charm's entities no binding wants and no scale set uses, then its credentials.

    Args:
        api: the GARM client.
        bindings: every entity and App the configurators want now (the complete set).

    Returns:
        What was deleted, kept and refused.
    """
    owned = {c.name: c for c in api.list_github_credentials() if is_charm_credentials(c)}
    if not owned:
        return CleanupReport()
    wanted_entities = {(b.entity.kind, b.entity.name.lower()) for b in bindings}
    wanted_credentials = {b.app.credentials_name for b in bindings}
    entities = [entity for kind in _KINDS for entity in api.list_entities(kind)]
    report = _Report()
    unwanted = [
        entity
        for entity in entities
        if entity.credentials_name in owned
        and (entity.kind, entity.name.lower()) not in wanted_entities
    ]
    gone = _delete_entities(api, unwanted, report)
    in_use = {e.credentials_name for e in entities if e.id not in gone}
    for name, credentials in sorted(owned.items()):
        if name in wanted_credentials:
            continue
        if name in in_use:
            report.kept.append(f"credentials {name}")
            continue
        report.delete(f"credentials {name}", lambda c=credentials: _delete_credentials(api, c))
    return report.freeze()


def is_charm_credentials(credentials: GithubCredentials) -> bool:
    """Whether GARM credentials are ones the charm made."""
    return credentials.name.startswith("garm-app-") and credentials.description.startswith(
        DESCRIPTION_PREFIX
    )


def _delete_entities(api: GithubCleanupApi, unwanted: list[Entity], report: _Report) -> set[str]:
    """Delete the unwanted entities that have no scale set; return the ids deleted."""
    if not unwanted:
        return set()
    with_scalesets = {scaleset.entity_id for scaleset in api.list_scalesets()}
    gone: set[str] = set()
    for entity in sorted(unwanted, key=lambda entity: (entity.kind.value, entity.name)):
        label = f"{_noun(entity.kind)} {entity.name}"
        if entity.id in with_scalesets:
            report.kept.append(label)
            continue
        if report.delete(label, lambda e=entity: api.delete_entity(e.kind, e.id)):
            gone.add(entity.id)
    return gone


def _delete_credentials(api: GithubCleanupApi, credentials: GithubCredentials) -> None:
    api.delete_github_credentials(credentials.id)


def _noun(kind: EntityKind) -> str:
    return "repository" if kind is EntityKind.REPOSITORY else "organization"


@dataclasses.dataclass
class _Report:
    deleted: list[str] = dataclasses.field(default_factory=list[str])
    kept: list[str] = dataclasses.field(default_factory=list[str])
    problems: dict[str, str] = dataclasses.field(default_factory=dict[str, str])

    def delete(self, label: str, call: _Call) -> bool:
        """Run one delete; a 400 keeps the object for the next pass; return whether deleted."""
        try:
            call()
        except GarmApiError as error:
            if error.status == 400:
                self.kept.append(label)
            else:
                self.problems[label] = str(error)
                logger.warning("could not delete %s: %s", label, error)
            return False
        logger.info("deleted %s: no configurator wants it and nothing uses it", label)
        self.deleted.append(label)
        return True

    def freeze(self) -> CleanupReport:
        return CleanupReport(tuple(self.deleted), tuple(self.kept), dict(self.problems))


class _Call(Protocol):
    def __call__(self) -> None: ...
