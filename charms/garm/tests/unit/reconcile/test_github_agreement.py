"""The Blocked texts of configurators that disagree on an App or an entity fit a status whole."""

from __future__ import annotations

from garm_api.models import EntityKind
from reconcile.github_agreement import agreed_bindings
from reconcile.github_objects import EntityBinding, GithubApp
from scaleset_reconciler.spec import EntityRef
from status_text import STATUS_LIMIT

KEYS_ORG = EntityRef(EntityKind.ORGANIZATION, "a-long-organization-name")
APPS_ORG = EntityRef(EntityKind.ORGANIZATION, "another-long-organization")


def binding(org: EntityRef, application: str, key: bytes, app_id: int) -> EntityBinding:
    """`application` serves `org` through App `app_id`, installation 78901234, with `key`."""
    app = GithubApp(app_id=app_id, installation_id=78901234, private_key_pem=key)
    return EntityBinding(org, app, application=application)


def test_each_disagreement_fits_a_status_with_what_to_do_at_its_end():
    """Arrange: long configurator names; two disagree on keys, two on the App of an org.

    Act: agreed_bindings. Assert: each problem, after its name as the status puts it, fits in
    120 characters and ends with what to do.
    """
    bindings = [
        binding(KEYS_ORG, "runners-small-x64", b"key-1", 123456),
        binding(KEYS_ORG, "runners-large-gpu", b"key-2", 123456),
        binding(APPS_ORG, "runners-arm64-big", b"key-3", 223456),
        binding(APPS_ORG, "runners-arm64-two", b"key-4", 323456),
    ]

    _, problems = agreed_bindings(bindings)

    texts = [f"{name}: {problem}" for name, problem in problems.items()]
    assert len(texts) == 2
    assert all(len(text) <= STATUS_LIMIT for text in texts), texts
    assert sorted(text.rsplit(": ", 1)[1] for text in texts) == ["publish one key", "use one App"]
