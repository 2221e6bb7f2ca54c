"""Portfolio use cases: the overview (health, analytics, alert statistics, dashboard
templates) and the compass (coverage, gaps, hotspots) of an org, filtered, as JSON or CSV.
See docs/portfolio.md; the figures come from `controller.portfolio.views`."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import ColumnElement, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.discovery import service as discovery
from controller.discovery.service import MissingOut
from controller.errors import Conflict, NotFound, ValidationFailed
from controller.model.base import ApiModel, RequestModel
from controller.model.managed import ensure_unmanaged, managed_by
from controller.model.plans import allows
from controller.model.principal import Principal
from controller.model.watch import WatchType
from controller.notifications.alerts_service import AlertStats, alert_stats
from controller.portfolio import answers, dashboards, views
from controller.portfolio.answers import AskIn, AskOut
from controller.portfolio.ask import EXAMPLES, INTENTS, Reading, read
from controller.portfolio.dashboards import DashboardIn, DashboardList, DashboardOut
from controller.store import audit
from controller.store.audit import Caller
from controller.store.models import Dashboard

Label = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")]


class PortfolioQuery(RequestModel):
    tag: Label | None = Field(default=None, description="only watches with this tag")
    vendor: Label | None = Field(default=None, description="only this vendor's watches")
    watch_type: WatchType | None = Field(default=None, description="`api` means `rest`")
    environment: Label | None = Field(
        default=None, description="only watches an agent of this environment depends on"
    )
    days: int = Field(default=90, ge=1, le=730, description="the window for MTTR, in days")
    format: Literal["json", "csv"] = Field(default="json", description="csv: one table")

    def filters(self) -> views.Filters:
        return views.Filters(
            tag=self.tag,
            vendor=self.vendor,
            watch_type=self.watch_type.value if self.watch_type else None,
            environment=self.environment,
        )


class OverviewQuery(PortfolioQuery):
    table: Literal["weeks", "mttrByVendor", "mttrByWatchType"] = Field(
        default="weeks", description="with format=csv: which table"
    )


class CompassQuery(PortfolioQuery):
    table: Literal["byVendor", "byWatchType", "byTag", "hotspots", "gaps"] = Field(
        default="byVendor", description="with format=csv: which table"
    )


class HealthOut(ApiModel):
    by_drift_status: dict[str, int]
    by_health_band: dict[str, int]
    stale: int = Field(description="watches whose last check is older than twice the interval")
    total: int


class WeekOut(ApiModel):
    week_start: str = Field(description="the Monday (UTC) the week starts")
    breaking: int
    warning: int
    info: int


class MttrRow(ApiModel):
    key: str
    hours: float
    resolved: int


class MttrOut(ApiModel):
    overall_hours: float | None = Field(description="null when nothing was resolved")
    resolved: int
    by_vendor: list[MttrRow]
    by_watch_type: list[MttrRow]
    by_resolution: list[MttrRow]


class IncidentCounts(ApiModel):
    open: int
    acknowledged: int
    resolved_last30d: int = Field(alias="resolvedLast30d")


class CheckCounts(ApiModel):
    last24h: int = Field(alias="last24h")
    failed_last24h: int = Field(alias="failedLast24h")


class AnalyticsOut(ApiModel):
    drift_events_by_week: list[WeekOut] = Field(description="12 weeks, oldest first")
    mttr: MttrOut
    incidents: IncidentCounts
    checks: CheckCounts


class WindowOut(ApiModel):
    days: int
    since: datetime
    until: datetime


class OverviewOut(ApiModel):
    health: HealthOut
    analytics: AnalyticsOut
    alert_stats: AlertStats
    dashboard_templates: list[dashboards.DashboardOut]
    window: WindowOut


def overview(
    session: Session, org_id: str, query: PortfolioQuery, now: datetime, *, exact: bool = False
) -> OverviewOut:
    """The org's overview. The API's MTTR figures are hours to 0.01 (36 s); `exact` keeps
    them unrounded for a reader that writes durations in its own units (the console: 9.6 s
    reads `9.6 s`, not `0 s`)."""
    filters = query.filters()
    since = now - timedelta(days=query.days)
    return OverviewOut.model_validate(
        {
            "health": views.health(session, org_id, filters, now),
            "analytics": {
                "driftEventsByWeek": views.events_by_week(session, org_id, filters, now),
                "mttr": views.mttr(
                    session, org_id, filters, since, now, digits=None if exact else 2
                ),
                "incidents": views.incidents(session, org_id, filters, now),
                "checks": views.checks(session, org_id, filters, now),
            },
            "alertStats": alert_stats(session, org_id),
            "dashboardTemplates": _every_dashboard(session, org_id),
            "window": {"days": query.days, "since": since, "until": now},
        }
    )


class CoverageRow(ApiModel):
    key: str
    watches: int
    by_drift_status: dict[str, int]


class CoverageOut(ApiModel):
    by_vendor: list[CoverageRow]
    by_watch_type: list[CoverageRow]
    by_tag: list[CoverageRow]


class GapWatch(ApiModel):
    watch_id: str
    name: str
    vendor: str
    last_checked_at: datetime | None


class GapOut(ApiModel):
    count: int
    watches: list[GapWatch] = Field(description=f"the first {views.GAP_LIST} by name")


class GapsOut(ApiModel):
    never_run: GapOut
    stale_checks: GapOut
    error: GapOut
    total: int = Field(description="watches in at least one gap")


class HotspotOut(ApiModel):
    watch_id: str
    name: str
    vendor: str
    breaking_count30d: int = Field(
        alias="breakingCount30d", description="breaking changes in the last 30 days"
    )
    last_drift_at: datetime


class CompassSummary(ApiModel):
    total_watches: int
    vendor_count: int
    gap_count: int


class FoundOut(ApiModel):
    """With a discovery input: what it found, and what of it nothing watches."""

    discovered: int
    unwatched: list[MissingOut]
    unwatched_count: int


class CompassOut(ApiModel):
    coverage: CoverageOut
    gaps: GapsOut
    hotspots: list[HotspotOut]
    summary: CompassSummary
    found: FoundOut | None = Field(
        default=None, description="POST with a discovery input: found but not watched"
    )


def compass(session: Session, org_id: str, query: PortfolioQuery, now: datetime) -> CompassOut:
    filters = query.filters()
    found_gaps = views.gaps(session, org_id, filters, now)
    health = views.health(session, org_id, filters, now)
    return CompassOut.model_validate(
        {
            "coverage": views.coverage(session, org_id, filters, now),
            "gaps": found_gaps,
            "hotspots": views.hotspots(session, org_id, filters, now),
            "summary": {
                "totalWatches": health["total"],
                "vendorCount": views.vendor_count(session, org_id, filters),
                "gapCount": found_gaps["total"],
            },
        }
    )


def compass_found(
    session: Session,
    principal: Principal,
    query: PortfolioQuery,
    data: discovery.CoverageIn,
    now: datetime,
) -> CompassOut:
    """The compass, and what the input's dependencies (URLs, an MCP configuration, a
    repository's files) hold that the org does not watch."""
    out = compass(session, principal.org_id, query, now)
    _, coverage = discovery.assert_coverage(session, principal, data, discovery.scanned(data.files))
    missing = coverage.missing if isinstance(coverage, discovery.CoverageMissing) else []
    out.found = FoundOut(
        discovered=len(coverage.discovered), unwatched=missing, unwatched_count=len(missing)
    )
    return out


# -- CSV ---------------------------------------------------------------------------------------


def overview_table(out: OverviewOut, table: str) -> list[dict[str, Any]]:
    analytics = out.analytics
    tables: dict[str, list[Any]] = {
        "weeks": list(analytics.drift_events_by_week),
        "mttrByVendor": list(analytics.mttr.by_vendor),
        "mttrByWatchType": list(analytics.mttr.by_watch_type),
    }
    return [r.model_dump(by_alias=True, mode="json") for r in tables[table]]


def compass_table(out: CompassOut, table: str) -> list[dict[str, Any]]:
    coverage = {
        "byVendor": out.coverage.by_vendor,
        "byWatchType": out.coverage.by_watch_type,
        "byTag": out.coverage.by_tag,
    }
    if table in coverage:
        rows = coverage[table]
        statuses = sorted({s for r in rows for s in r.by_drift_status})
        return [
            {
                "key": r.key,
                "watches": r.watches,
                **{s: r.by_drift_status.get(s, 0) for s in statuses},
            }
            for r in rows
        ]
    if table == "hotspots":
        return [h.model_dump(by_alias=True, mode="json") for h in out.hotspots]
    return [
        {"gap": gap, **w.model_dump(by_alias=True, mode="json")}
        for gap, found in (
            ("neverRun", out.gaps.never_run),
            ("staleChecks", out.gaps.stale_checks),
            ("error", out.gaps.error),
        )
        for w in found.watches
    ]


def to_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    columns = list(rows[0]) if rows else ["empty"]
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return buffer.getvalue()


def _cell(value: Any) -> Any:
    # A cell that a spreadsheet would run as a formula is quoted as text.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value
    return value


# -- dashboard templates ------------------------------------------------------------------------


def dashboard_out(row: Dashboard) -> dashboards.DashboardOut:
    return dashboards.DashboardOut(
        id=row.id,
        name=row.name,
        system=False,
        description=row.description,
        filters=dashboards.DashboardFilters.model_validate(row.filters),
        panels=list(row.panels),
        managed_by=managed_by(row),
    )


def _every_dashboard(session: Session, org_id: str) -> list[dashboards.DashboardOut]:
    """The starters, then the org's own by name."""
    rows = session.scalars(
        select(Dashboard).where(Dashboard.org_id == org_id).order_by(Dashboard.name)
    )
    return [*dashboards.STARTERS, *(dashboard_out(row) for row in rows)]


def list_dashboards(session: Session, org_id: str) -> dashboards.DashboardList:
    return dashboards.DashboardList(dashboards=_every_dashboard(session, org_id))


def _dashboard(session: Session, org_id: str, dashboard_id: str) -> Dashboard:
    row = session.get(Dashboard, dashboard_id)
    if row is None or row.org_id != org_id:
        if any(s.id == dashboard_id for s in dashboards.STARTERS):
            raise Conflict("system dashboards are read-only: save a copy", code="system_dashboard")
        raise NotFound("Dashboard not found")
    return row


def get_dashboard(session: Session, org_id: str, dashboard_id: str) -> dashboards.DashboardOut:
    for starter in dashboards.STARTERS:
        if starter.id == dashboard_id:
            return starter
    return dashboard_out(_dashboard(session, org_id, dashboard_id))


def save_dashboard(
    session: Session,
    caller: Caller,
    data: dashboards.DashboardIn,
    now: datetime,
    dashboard_id: str | None = None,
) -> dashboards.DashboardOut:
    """Create (no id) or replace one of the org's dashboards."""
    if dashboard_id is None:
        row = Dashboard(org_id=caller.org_id, created_at=now)
        session.add(row)
    else:
        row = _dashboard(session, caller.org_id, dashboard_id)
        ensure_unmanaged(row, "dashboard", row.name)
    row.name = data.name
    row.description = data.description
    row.filters = data.filters.model_dump(by_alias=True, exclude_none=True)
    row.panels = list(data.panels)
    row.updated_at = now
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(
            f"a dashboard named {data.name!r} already exists", code="duplicate_name"
        ) from None
    audit.by(
        session,
        caller,
        "dashboard.create" if dashboard_id is None else "dashboard.update",
        row.id,
        {"name": row.name},
    )
    return dashboard_out(row)


def delete_dashboard(session: Session, caller: Caller, dashboard_id: str) -> None:
    row = _dashboard(session, caller.org_id, dashboard_id)
    ensure_unmanaged(row, "dashboard", row.name)
    audit.by(session, caller, "dashboard.delete", row.id, {"name": row.name})
    session.delete(row)


# -- Ask ---------------------------------------------------------------------------------------


def ask(
    session: Session, org_id: str, plan: str, is_trial: bool, data: AskIn, now: datetime
) -> AskOut:
    """Live answers for Pro plans and higher; fixture answers for free plans and trials."""
    live = allows(plan, "live_ask") and not is_trial
    return answers.answer(session, org_id, live, data, now)


CompassFoundIn = discovery.CoverageIn

__all__ = ["AskIn", "AskOut", "CompassFoundIn", "DashboardIn", "DashboardList", "DashboardOut"]


# The console's watch list narrowed as the overview's tiles count (its links carry these).
HEALTH_BANDS = ("degraded", "stale")


def tile_conditions(
    health: str | None, incident: str | None, now: datetime
) -> list[ColumnElement[bool]]:
    """Conditions on watches for a health band and for an open incident, the same the
    overview's tiles count with; a value no tile has is refused, naming it."""
    where: list[ColumnElement[bool]] = []
    if health:
        if health not in HEALTH_BANDS:
            bands = ", ".join(HEALTH_BANDS)
            raise ValidationFailed(f"unknown health filter {health!r}: one of {bands}")
        where.append(views.is_degraded(now) if health == "degraded" else views.is_stale(now))
    if incident:
        if incident != "open":
            raise ValidationFailed(f"unknown incident filter {incident!r}: only 'open'")
        where.append(views.has_open_incident())
    return where


def read_question(session: Session, org_id: str, question: str) -> Reading:
    """How Ask reads a question for this org (its vendors and tags), without answering it."""
    vendors, tags = views.known_labels(session, org_id)
    return read(question, vendors, tags)


__all__ = ["EXAMPLES", "INTENTS", "Reading"]
