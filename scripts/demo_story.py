"""What both demos share: the label change they tell, and how a scale set is printed.

Imported by `demo.py` (the simulated story, the script `tox -e demo` runs) and `demo_real.py`
(the same story on a real GARM); never run itself, so each script's module is loaded once.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

OLD_LABELS = ("linux", "x64")
NEW_LABELS = ("linux", "x64", "large")


@dataclasses.dataclass(frozen=True)
class Row:
    """One scale set as the demo prints it."""

    name: str
    enabled: bool
    labels: list[str]
    min_max: tuple[int, int]
    runners: Counter[str]

    def __str__(self) -> str:
        """E.g. `small-3f2a9c1d  enabled   linux,x64   min/max 1/4  runners: 1 idle, 1 busy`."""
        state = "enabled" if self.enabled else "disabled"
        runners = ", ".join(
            f"{count} {'busy' if status == 'active' else status}"
            for status, count in sorted(self.runners.items())
        )
        low, high = self.min_max
        return (
            f"{self.name}  {state:<8}  {','.join(self.labels):<16} "
            f"min/max {low}/{high}  runners: {runners or 0}"
        )
