"""Only a JSON object the charm wrote is its marker: any other extended state is hand-made."""

from __future__ import annotations

import pytest

from scaleset_reconciler.marker import Marker, parse_marker

# --- Found by the coverage floors (hand-made mutants): only a JSON object is a marker ---
# (was test_scaleset_marker_edges.py)


@pytest.mark.parametrize(
    "extended_state",
    ['["managed-by", "garm-charm"]', "1", '"garm-charm"', "null", "  [{}]", "{not json", ""],
)
def test_extended_state_that_is_not_a_json_object_is_no_marker(extended_state: str):
    """Arrange: an extended state another tool or a person wrote (not a JSON object).

    Act: parse it. Assert: no marker (the scale set is not the charm's), and no exception.
    """
    assert parse_marker(extended_state) is None


def test_a_marker_with_blank_space_around_it_is_still_the_charms():
    """Arrange: the charm's rendered marker with spaces and a newline around it.

    Act: parse it. Assert: the same marker.
    """
    marker = Marker(logical="small", config="abc")

    assert parse_marker(f"  {marker.render()}\n") == marker
