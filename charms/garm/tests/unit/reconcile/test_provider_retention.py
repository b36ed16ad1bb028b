"""Which providers of removed configurators stay, and the status text about them."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from reconcile.provider_retention import retained_providers, retention_message


@pytest.mark.parametrize(
    ("desired", "on_disk", "in_use", "retained"),
    [
        pytest.param((), (), None, (), id="nothing"),
        pytest.param(("a",), ("a",), {"a": 1}, (), id="desired-is-rendered-not-kept"),
        pytest.param(("a",), ("a", "b"), {"b": 2}, ("b",), id="gone-but-in-use-stays"),
        pytest.param(("a",), ("a", "b"), {"a": 1}, (), id="gone-and-unused-goes"),
        pytest.param(("a",), ("a", "b"), {"b": 0}, (), id="zero-count-is-unused"),
        pytest.param((), ("b", "c"), None, ("b", "c"), id="unknown-use-keeps-all"),
        pytest.param(("b",), ("b", "c"), None, ("c",), id="unknown-use-desired-wins"),
        pytest.param((), ("c", "b"), {"c": 1, "b": 1}, ("b", "c"), id="sorted"),
        pytest.param(("a",), (), {"x": 3}, (), id="never-kept-what-is-not-on-disk"),
    ],
)
def test_retained_providers(
    desired: tuple[str, ...],
    on_disk: tuple[str, ...],
    in_use: Mapping[str, int] | None,
    retained: tuple[str, ...],
):
    """Arrange: desired names, names on disk, GARM's scale sets per provider (or unknown).

    Act: decide. Assert: kept are exactly the on-disk, undesired ones GARM uses (all when
    unknown), sorted.
    """
    assert retained_providers(desired, on_disk, in_use) == retained


@pytest.mark.parametrize(
    ("retained", "message"),
    [
        pytest.param((), "", id="none"),
        pytest.param(
            ("openstack-a",),
            "keeping provider openstack-a until its scale set is gone",
            id="one-scale-set",
        ),
        pytest.param(
            ("openstack-b",),
            "keeping provider openstack-b until its 2 scale sets are gone",
            id="several-scale-sets",
        ),
        pytest.param(
            ("openstack-a", "openstack-b", "openstack-c"),
            "keeping provider openstack-a until its scale set is gone, keeping provider "
            "openstack-b until its 2 scale sets are gone, +1 more",
            id="two-named-then-counted",
        ),
    ],
)
def test_retention_message(retained: tuple[str, ...], message: str):
    """Arrange: kept providers and their scale sets. Act: the text. Assert: short, counted."""
    in_use = {"openstack-a": 1, "openstack-b": 2, "openstack-c": 1}

    assert retention_message(retained, in_use) == message
