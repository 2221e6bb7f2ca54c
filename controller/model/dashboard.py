"""What a dashboard template is made of, shared by the API (`controller.portfolio`) and the
`.driftgate/dashboards.yaml` file: the panels a view can show."""

from __future__ import annotations

from typing import Literal

Panel = Literal[
    "health", "driftByWeek", "mttr", "incidents", "checks", "alerts", "coverage", "gaps", "hotspots"
]
PANELS: tuple[str, ...] = Panel.__args__  # type: ignore[attr-defined]
