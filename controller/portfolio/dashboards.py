"""Dashboard templates: named views of the portfolio (filters and the panels shown). The
system starters live here, in code; an org's own are stored (`/api/portfolio/dashboards`,
read and written by `controller.portfolio.service`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from controller.contracts.kinds import CONTRACT_KINDS
from controller.model.base import ApiModel, RequestModel
from controller.model.choice import OneOf
from controller.model.dashboard import PANELS, Panel
from controller.model.watch import ManagedBy, Note

Label = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")]


class DashboardFilters(ApiModel):
    tag: Label | None = None
    vendor: Label | None = None
    watch_type: Annotated[str, OneOf(CONTRACT_KINDS.names())] | None = None
    environment: Label | None = None


class DashboardIn(RequestModel):
    """Body of `POST /api/portfolio/dashboards` and `PUT .../<id>`."""

    name: Label
    description: Note = ""
    filters: DashboardFilters = Field(default_factory=lambda: DashboardFilters())
    panels: list[Panel] = Field(min_length=1, max_length=len(PANELS))


class DashboardOut(ApiModel):
    id: str
    name: str
    system: bool = Field(description="a starter that ships with driftgate (read-only)")
    description: str
    filters: DashboardFilters
    panels: list[Panel]
    managed_by: ManagedBy | None = None


class DashboardList(ApiModel):
    dashboards: list[DashboardOut]


STARTERS: tuple[DashboardOut, ...] = (
    DashboardOut(
        id="system.production-agents",
        name="Production agents",
        system=True,
        description="The contracts production agents depend on: health, incidents, repair time.",
        filters=DashboardFilters(environment="production"),
        panels=["health", "incidents", "mttr", "driftByWeek"],
    ),
    DashboardOut(
        id="system.mcp-health",
        name="MCP health",
        system=True,
        description="Every MCP server watched: checks, failures and drift.",
        filters=DashboardFilters(watch_type="mcp"),
        panels=["health", "checks", "gaps", "driftByWeek"],
    ),
    DashboardOut(
        id="system.vendor-hotspots",
        name="Vendor hotspots",
        system=True,
        description="Where breaking drift comes from, and how fast it is repaired per vendor.",
        filters=DashboardFilters(),
        panels=["hotspots", "mttr", "coverage"],
    ),
)
