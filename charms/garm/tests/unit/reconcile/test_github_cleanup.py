"""The cleanup keeps the charm's credentials while any GARM entity still uses them."""

from __future__ import annotations

from garm_api.models import Entity, EntityKind
from reconcile.github_cleanup import remove_unused_github_objects
from reconcile.github_objects import EntityBinding
from scaleset_reconciler.spec import EntityRef
from unit.walks.github_cleanup import NEW_APP, OLD_APP, Garm, credentials

ORG = EntityRef(EntityKind.ORGANIZATION, "Acme-Org")


def test_credentials_a_wanted_entity_still_uses_are_kept():
    """Arrange: the org's App changed; GARM's org still uses the old App's credentials.

    (The switch has not happened yet.) Act: clean up with the new binding.
    Assert: nothing deleted; the old credentials reported as kept (still in use).
    """
    entity = Entity(
        EntityKind.ORGANIZATION,
        "org-1",
        "Acme-Org",
        OLD_APP.credentials_name,
        "github.com",
        True,
        "",
    )
    garm = Garm([credentials(1, OLD_APP), credentials(2, NEW_APP)], [entity])

    report = remove_unused_github_objects(garm, [EntityBinding(ORG, NEW_APP)])  # type: ignore[arg-type]

    assert garm.deleted == []
    assert report.kept == (f"credentials {OLD_APP.credentials_name}",)
