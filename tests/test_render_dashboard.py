"""The dashboard picture in the docs is what `scripts/render_dashboard.py` draws from the JSON."""

from __future__ import annotations

import importlib.util
import json
import pathlib
from types import ModuleType

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
