"""The cleanup when GARM refuses a delete: nothing counts as gone that GARM still holds.

A 400 ("still in use") keeps the object for the next pass; any other refusal is a problem the
report names. An entity GARM kept still uses its credentials, so they must stay too.
"""

from __future__ import annotations

from test_github_cleanup_in_use import OLD_APP, Garm, credentials

from garm_api import GarmApiError
from garm_api.models import Entity, EntityKind
from reconcile.github_cleanup import remove_unused_github_objects


class RefusingGarm(Garm):
    """Refuses the deletes of the entities and credentials named, with the status given."""

    def __init__(self, *args: object, refusals: dict[str, int]) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.refusals = refusals

    def delete_entity(self, kind: EntityKind, entity_id: str) -> None:
        """DELETE an entity, unless refused."""
        self._maybe_refuse(entity_id)
        super().delete_entity(kind, entity_id)

    def delete_github_credentials(self, credentials_id: int) -> None:
        """DELETE credentials, unless refused."""
        self._maybe_refuse(str(credentials_id))
        super().delete_github_credentials(credentials_id)

    def _maybe_refuse(self, key: str) -> None:
        status = self.refusals.get(key)
        if status is not None:
            raise GarmApiError("delete", status, "refused", f"refused {key}")


def entity(kind: EntityKind, entity_id: str, name: str) -> Entity:
    """An entity of GARM's using the old App's credentials."""
    return Entity(kind, entity_id, name, OLD_APP.credentials_name, "github.com", True, "")


def test_refused_entity_deletes_are_kept_or_reported_and_keep_their_credentials():
    """Arrange: no configurator wants the org or the repo; GARM refuses their deletes.

    (The org's with 400, in use; the repository's with 500.) Act: clean up.
    Assert: nothing deleted; the org is kept, the repository's refusal is a problem naming it;
    the credentials both still use are kept, not deleted.
    """
    org = entity(EntityKind.ORGANIZATION, "org-1", "acme")
    repo = entity(EntityKind.REPOSITORY, "repo-1", "acme/app")
    garm = RefusingGarm(
        [credentials(1, OLD_APP)], [org, repo], refusals={"org-1": 400, "repo-1": 500}
    )

    report = remove_unused_github_objects(garm, [])  # type: ignore[arg-type]

    assert garm.deleted == []
    assert report.deleted == ()
    assert set(report.kept) == {"organization acme", f"credentials {OLD_APP.credentials_name}"}
    assert list(report.problems) == ["repository acme/app"]
    assert "refused repo-1" in report.problems["repository acme/app"]


def test_a_refused_credentials_delete_is_kept_for_the_next_pass():
    """Arrange: the org is deleted; GARM refuses the credentials' delete with 400.

    Act: clean up. Assert: the org is deleted; the credentials are kept, not a problem.
    """
    org = entity(EntityKind.ORGANIZATION, "org-1", "acme")
    garm = RefusingGarm([credentials(1, OLD_APP)], [org], refusals={"1": 400})

    report = remove_unused_github_objects(garm, [])  # type: ignore[arg-type]

    assert garm.deleted == ["organizations org-1"]
    assert report.deleted == ("organization acme",)
    assert report.kept == (f"credentials {OLD_APP.credentials_name}",)
    assert report.problems == {}
