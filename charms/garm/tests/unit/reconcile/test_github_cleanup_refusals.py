"""The cleanup when GARM refuses a delete: nothing counts as gone that GARM still holds.

A 400 ("still in use") keeps the object for the next pass; any other refusal is a problem the
report names. An entity GARM kept still uses its credentials, so they must stay too.
"""

from __future__ import annotations

import dataclasses
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from garm_api import GarmApiError
from garm_api.models import Entity, EntityKind, GithubCredentials
from reconcile.github_cleanup import CleanupReport, remove_unused_github_objects
from reconcile.github_objects import DESCRIPTION_PREFIX, EntityBinding, GithubApp
from scaleset_reconciler.spec import EntityRef
from unit.walks.github_cleanup import NEW_APP, OLD_APP, Garm, credentials

# Its credentials' name sorts before OLD_APP's (`garm-app-1-1` < `garm-app-1-10`).
FIRST_APP = GithubApp(app_id=1, installation_id=1, private_key_pem=b"first")


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


class GarmWithScalesets(RefusingGarm):
    """Holds a scale set on each entity id given (only its entity id is read)."""

    def __init__(self, *args: object, scaleset_entities: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scaleset_entities = scaleset_entities

    def list_scalesets(self) -> list[Any]:
        """GET /scalesets: one per entity id given."""
        return [SimpleNamespace(entity_id=entity_id) for entity_id in self.scaleset_entities]


def test_every_unwanted_object_is_judged_on_its_own(caplog: pytest.LogCaptureFixture):
    """Arrange: two orgs, the first wanted; the charm's credentials of each, the wanted first.

    (The wanted org holds a scale set.) Act: clean up.
    Assert: the unwanted org is deleted; the unwanted credentials, which only the deleted org
    used, are deleted in the same pass; the wanted ones stay; each delete is logged by name.
    """
    busy = entity(EntityKind.ORGANIZATION, "org-1", "a-busy")
    idle = entity(EntityKind.ORGANIZATION, "org-2", "b-idle")
    wanted = EntityBinding(EntityRef(EntityKind.ORGANIZATION, "a-busy"), FIRST_APP)
    busy = dataclasses.replace(busy, credentials_name=FIRST_APP.credentials_name)
    garm = GarmWithScalesets(
        [credentials(2, FIRST_APP), credentials(1, OLD_APP)],
        [busy, idle],
        refusals={},
        scaleset_entities=["org-1"],
    )

    with caplog.at_level(logging.INFO):
        report = remove_unused_github_objects(garm, [wanted])  # type: ignore[arg-type]

    assert garm.deleted == ["organizations org-2", "credentials 1"]
    assert report.deleted == ("organization b-idle", f"credentials {OLD_APP.credentials_name}")
    assert report.kept == ()
    assert "deleted organization b-idle: no configurator wants it" in caplog.text


def test_an_unwanted_entity_holding_a_scale_set_is_kept_and_the_next_one_deleted():
    """Arrange: two unwanted orgs, the first (by name) holding a scale set.

    The charm's credentials the first org uses, and another set only the second uses.
    Act: clean up. Assert: the first org and its credentials are kept (by name); the second
    org and its credentials are deleted.
    """
    first = entity(EntityKind.ORGANIZATION, "org-1", "a-first")
    second = entity(EntityKind.ORGANIZATION, "org-2", "b-second")
    second = dataclasses.replace(second, credentials_name=NEW_APP.credentials_name)
    garm = GarmWithScalesets(
        [credentials(1, OLD_APP), credentials(3, NEW_APP)],
        [first, second],
        refusals={},
        scaleset_entities=["org-1"],
    )

    report = remove_unused_github_objects(garm, [])  # type: ignore[arg-type]

    assert garm.deleted == ["organizations org-2", "credentials 3"]
    assert report.kept == ("organization a-first", f"credentials {OLD_APP.credentials_name}")


@pytest.mark.parametrize(
    ("name", "description"),
    [
        (OLD_APP.credentials_name, "made by hand"),
        ("someone-elses", f"{DESCRIPTION_PREFIX}x"),
    ],
    ids=["charm-name-own-description", "charm-description-other-name"],
)
def test_credentials_the_charm_did_not_make_are_never_deleted(name: str, description: str):
    """Arrange: unused credentials with only the charm's name, or only its description.

    Act: clean up with nothing wanted. Assert: nothing deleted, nothing reported.
    """
    garm = RefusingGarm(
        [GithubCredentials(1, name, description, "app", "github.com")], [], refusals={}
    )

    report = remove_unused_github_objects(garm, [])  # type: ignore[arg-type]

    assert garm.deleted == []
    assert report == CleanupReport()


def test_a_refusal_other_than_in_use_is_logged_naming_the_object_and_garms_answer(
    caplog: pytest.LogCaptureFixture,
):
    """Arrange: GARM refuses the org's delete with 500. Act: clean up.

    Assert: the warning names the org and carries GARM's answer.
    """
    org = entity(EntityKind.ORGANIZATION, "org-1", "acme")
    garm = RefusingGarm([credentials(1, OLD_APP)], [org], refusals={"org-1": 500})

    with caplog.at_level(logging.WARNING):
        remove_unused_github_objects(garm, [])  # type: ignore[arg-type]

    assert "could not delete organization acme: " in caplog.text
    assert "refused org-1" in caplog.text
