"""The dashboard picture in the docs is what `scripts/render_dashboard.py` draws from the JSON."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
from types import ModuleType

from reconcile.charm_metrics import METRIC_NAMES

ROOT = pathlib.Path(__file__).resolve().parents[1]


def renderer() -> ModuleType:
    """The script, loaded from its file (scripts/ is not on the test path)."""
    spec = importlib.util.spec_from_file_location(
        "render_dashboard", ROOT / "scripts" / "render_dashboard.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_picture_matches_the_dashboard():
    """Arrange: the dashboard JSON. Act: render it. Assert: the committed SVG, every title."""
    script = renderer()
    dashboard = json.loads(script.DASHBOARD.read_text())

    drawn = script.render(dashboard)

    assert script.OUTPUT.read_text() == drawn, "run python scripts/render_dashboard.py"
    for panel in dashboard["panels"]:
        assert f">{panel['title']}</text>" in drawn


def test_every_panel_queries_and_the_charms_row_uses_only_what_the_charm_exports():
    """Arrange: the dashboard JSON. Act: read every panel's queries.

    Assert: every panel but a row has a query; every `garm_charm_` metric named anywhere is
    one the charm's exporter serves (ADR 0030); the charm's row queries nothing else, and
    every other query reads GARM's metrics (`garm_`) or Prometheus' `up`.
    """
    dashboard = json.loads(renderer().DASHBOARD.read_text())
    panels = dashboard["panels"]
    (row,) = [index for index, panel in enumerate(panels) if panel["type"] == "row"]

    for index, panel in enumerate(panels):
        expressions = [target["expr"] for target in panel.get("targets", [])]
        assert expressions or panel["type"] == "row", panel["title"]
        names = set().union(*(re.findall(r"\b(?:garm_\w+|up)\b", e) for e in expressions))
        charm = {name for name in names if name.startswith("garm_charm_")}
        assert charm <= METRIC_NAMES, charm - METRIC_NAMES
        if index > row:
            assert names, panel["title"]
            assert names == charm, panel["title"]
