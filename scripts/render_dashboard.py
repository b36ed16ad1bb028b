"""Draw the garm charm's Grafana dashboard as an SVG sketch of its layout, from its JSON.

`python scripts/render_dashboard.py [OUT]` reads `charms/garm/src/grafana_dashboards/garm.json`
and writes an SVG (default `docs/how-to/garm-dashboard.svg`): each panel at its grid position
(Grafana's 24-column grid) with its title, its type and its first query. No data and no network:
it shows what the dashboard holds and where, not values. `tests/test_render_dashboard.py` checks
that the committed picture is what this script draws from the current JSON.
"""

from __future__ import annotations

import html
import json
import pathlib
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "charms" / "garm" / "src" / "grafana_dashboards" / "garm.json"
OUTPUT = ROOT / "docs" / "how-to" / "garm-dashboard.svg"
COLUMN, ROW, MARGIN, TITLE_BAR = 40, 30, 4, 36
QUERY_CHARACTERS = 60


def render(dashboard: dict[str, Any]) -> str:
    """The SVG text for a dashboard's panels."""
    listed: list[Any] = dashboard.get("panels") or []
    panels: list[dict[str, Any]] = [panel for panel in listed if isinstance(panel, dict)]
    bottom = max((_grid(p)["y"] + _grid(p)["h"] for p in panels), default=0)
    width, height = 24 * COLUMN, bottom * ROW + TITLE_BAR
    title = html.escape(str(dashboard.get("title", "")))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="#111217"/>',
        f'<text x="8" y="24" fill="#ccccdc" font-size="18">{title}</text>',
    ]
    parts += [_panel(panel) for panel in panels]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _panel(panel: dict[str, Any]) -> str:
    grid = _grid(panel)
    x, y = grid["x"] * COLUMN + MARGIN, grid["y"] * ROW + TITLE_BAR + MARGIN
    w, h = grid["w"] * COLUMN - 2 * MARGIN, grid["h"] * ROW - 2 * MARGIN
    title = html.escape(str(panel.get("title", "")))
    kind = html.escape(str(panel.get("type", "")))
    targets: list[Any] = panel.get("targets") or []
    query = ""
    if targets and isinstance(targets[0], dict):
        first: dict[str, Any] = targets[0]
        query = str(first.get("expr", ""))[:QUERY_CHARACTERS]
    return (
        f'<g><rect x="{x}" y="{y}" width="{w}" height="{h}" rx="3" fill="#181b1f" '
        'stroke="#2c3235"/>'
        f'<text x="{x + 8}" y="{y + 20}" fill="#ccccdc" font-size="14">{title}</text>'
        f'<text x="{x + 8}" y="{y + 38}" fill="#8e8e8e" font-size="11">{kind}</text>'
        f'<text x="{x + 8}" y="{y + h - 10}" fill="#6e9fff" font-size="10" '
        f'font-family="monospace">{html.escape(query)}</text></g>'
    )


def _grid(panel: dict[str, Any]) -> dict[str, int]:
    grid: dict[str, Any] = panel.get("gridPos") or {"x": 0, "y": 0, "w": 24, "h": 4}
    return {key: int(grid.get(key, 0)) for key in ("x", "y", "w", "h")}


def main(argv: list[str]) -> int:
    """Write the picture; 0."""
    output = pathlib.Path(argv[0]) if argv else OUTPUT
    output.write_text(render(json.loads(DASHBOARD.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
