"""The cleanup's GARM and credentials, shared by its tests."""

from __future__ import annotations

from typing import Any

from garm_api.models import Entity, EntityKind, GithubCredentials, ScaleSet
from reconcile.github_objects import DESCRIPTION_PREFIX, GithubApp

OLD_APP = GithubApp(app_id=1, installation_id=10, private_key_pem=b"old")
NEW_APP = GithubApp(app_id=2, installation_id=20, private_key_pem=b"new")


class Garm:
    """GARM's credentials, entities and scale sets; records the deletes the cleanup makes."""

    def __init__(self, credentials: list[GithubCredentials], entities: list[Entity]) -> None:
        self.credentials = credentials
        self.entities = entities
        self.deleted: list[str] = []

    def list_github_credentials(self) -> list[GithubCredentials]:
        """GET /github/credentials."""
        return list(self.credentials)

    def list_entities(self, kind: EntityKind) -> list[Entity]:
        """GET /organizations or /repositories."""
        return [entity for entity in self.entities if entity.kind is kind]

    def list_scalesets(self) -> list[ScaleSet]:
        """GET /scalesets: none."""
        return []

    def delete_entity(self, kind: EntityKind, entity_id: str) -> None:
        """DELETE an entity."""
        self.deleted.append(f"{kind.value} {entity_id}")

    def delete_github_credentials(self, credentials_id: int) -> None:
        """DELETE credentials."""
        self.deleted.append(f"credentials {credentials_id}")

    def __getattr__(self, name: str) -> Any:
        """Any other call: the cleanup makes none."""
        raise AssertionError(f"the cleanup called {name}")


def credentials(credentials_id: int, app: GithubApp) -> GithubCredentials:
    """Credentials the charm made for `app`."""
    return GithubCredentials(
        credentials_id, app.credentials_name, f"{DESCRIPTION_PREFIX}x", "app", "github.com"
    )
