"""The portfolio's figures, as SQL aggregates over the org's watches, drift events, incidents
and check jobs (the same statements on SQLite and Postgres; times through
`controller.store.sqltime.epoch_seconds`). Each function answers plain values; the service
shapes them. A filter narrows the watches, and every figure follows the narrowed set.

Definitions (docs/portfolio.md):
- a drift event counts in a week by its highest severity (breaking, else warning, else info);
- MTTR is the mean time from an incident's opening to its resolution, over the incidents
  resolved in the window, whatever resolved them (revert, baseline accepted, merged draft PR,
  by hand);
- a watch is stale when its last check is older than twice its interval plus a grace
  (`controller.model.watch.is_stale_check`: paused and never-checked watches are never
  stale); its health band is `unknown` while paused, `degraded` when it is in error,
  never checked or stale, else `healthy` (`compute_health`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, literal, or_, select
from sqlalchemy.orm import Session

from controller.model.watch import STALE_FACTOR, STALE_GRACE_SECONDS
from controller.store.models import Agent, AgentWatch, DriftEvent, Incident, Job, Watch, WatchTag
from controller.store.sqltime import epoch_seconds


@dataclass(frozen=True)
class Filters:
    tag: str | None = None
    vendor: str | None = None
    watch_type: str | None = None
    environment: str | None = None

    def conditions(self, org_id: str) -> list[ColumnElement[bool]]:
        where: list[ColumnElement[bool]] = [Watch.org_id == org_id]
        if self.tag is not None:
            where.append(Watch.id.in_(select(WatchTag.watch_id).where(WatchTag.tag == self.tag)))
        if self.vendor is not None:
            where.append(Watch.vendor == self.vendor)
        if self.watch_type is not None:
            where.append(Watch.watch_type == self.watch_type)
        if self.environment is not None:
            bound = (
                select(AgentWatch.watch_id)
                .join(Agent, Agent.id == AgentWatch.agent_id)
                .where(Agent.org_id == org_id, Agent.environment == self.environment)
            )
            where.append(Watch.id.in_(bound))
        return where


def _narrowed(stmt: Any, watch_id: Any, org_id: str, filters: Filters) -> Any:
    """`stmt` joined to the watches the filters keep; no join when they keep the whole org
    (the rows are the org's already)."""
    if filters == Filters():
        return stmt
    # A semi-join: the kept watch ids are built once and probed per row (no row lookups).
    return stmt.where(watch_id.in_(select(Watch.id).where(*filters.conditions(org_id))))


def _stale(now: datetime) -> ColumnElement[bool]:
    # `is_stale_check` in SQL: the same statuses, factor and grace.
    return and_(
        Watch.drift_status.not_in(("disabled", "never_run")),
        Watch.last_checked_at.is_not(None),
        epoch_seconds(Watch.last_checked_at)
        < now.timestamp() - STALE_GRACE_SECONDS - Watch.interval_minutes * (60 * STALE_FACTOR),
    )


def _band() -> Any:
    return case(
        (Watch.drift_status == "disabled", literal("unknown")),
        (
            or_(
                Watch.drift_status.in_(("error", "never_run")),
                Watch.last_checked_at.is_(None),
            ),
            literal("degraded"),
        ),
        else_=literal("healthy"),
    )


def is_stale(now: datetime) -> ColumnElement[bool]:
    """Watches whose checks are stale (`is_stale_check`; the `stale` tile)."""
    return _stale(now)


def is_degraded(now: datetime) -> ColumnElement[bool]:
    """Watches in the `degraded` health band (the `degraded` tile)."""
    return or_(_stale(now), _band() == literal("degraded"))


def has_open_incident() -> ColumnElement[bool]:
    """Watches with an incident in `open` (the `open incidents` tile)."""
    return (
        select(Incident.id).where(Incident.watch_id == Watch.id, Incident.status == "open").exists()
    )


def health(session: Session, org_id: str, filters: Filters, now: datetime) -> dict[str, Any]:
    stale = _stale(now)
    band = case((stale, literal("degraded")), else_=_band())
    rows = session.execute(
        select(Watch.drift_status, band, func.sum(case((stale, 1), else_=0)), func.count())
        .where(*filters.conditions(org_id))
        .group_by(Watch.drift_status, band)
    ).all()
    by_status: dict[str, int] = {}
    by_band: dict[str, int] = {"healthy": 0, "degraded": 0, "unknown": 0}
    stale_count = total = 0
    for status, band_name, stale_n, count in rows:
        by_status[status] = by_status.get(status, 0) + count
        by_band[band_name] += count
        stale_count += int(stale_n or 0)
        total += count
    return {
        "byDriftStatus": by_status,
        "byHealthBand": by_band,
        "stale": stale_count,
        "total": total,
    }


def week_starts(now: datetime, weeks: int) -> list[datetime]:
    """The Mondays (00:00 UTC) of the last `weeks` weeks, this one last."""
    monday = (now - timedelta(days=now.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    return [monday - timedelta(weeks=weeks - 1 - i) for i in range(weeks)]


def severity_class() -> Any:
    return case(
        (DriftEvent.breaking_count > 0, literal("breaking")),
        (DriftEvent.warning_count > 0, literal("warning")),
        else_=literal("info"),
    )


def events_by_week(
    session: Session, org_id: str, filters: Filters, now: datetime, weeks: int = 12
) -> list[dict[str, Any]]:
    starts = week_starts(now, weeks)
    # Range comparisons against the week boundaries: no per-row time arithmetic.
    bucket = case(
        *[(DriftEvent.detected_at >= starts[i], i) for i in reversed(range(1, weeks))], else_=0
    )
    severity = severity_class()
    stmt = select(bucket, severity, func.count()).where(
        DriftEvent.org_id == org_id, DriftEvent.detected_at >= starts[0]
    )
    rows = session.execute(
        _narrowed(stmt, DriftEvent.watch_id, org_id, filters).group_by(bucket, severity)
    ).all()
    table = [
        {"weekStart": start.date().isoformat(), "breaking": 0, "warning": 0, "info": 0}
        for start in starts
    ]
    for index, name, count in rows:
        if 0 <= int(index) < weeks:
            table[int(index)][name] += count
    return table


def round_hours(figures: Any, digits: int = 2) -> Any:
    """`figures` (from `mttr` or `slowest_repairs` with `digits=None`) with every `hours` and
    `overallHours` rounded to `digits` decimals, as the API gives them."""
    if isinstance(figures, list):
        return [round_hours(item, digits) for item in figures]
    if not isinstance(figures, dict):
        return figures
    return {
        key: round(value, digits)
        if key in ("hours", "overallHours") and isinstance(value, float)
        else round_hours(value, digits)
        for key, value in figures.items()
    }


def _repair_hours() -> Any:
    return (epoch_seconds(Incident.resolved_at) - epoch_seconds(Incident.opened_at)) / 3600.0


def mttr(
    session: Session,
    org_id: str,
    filters: Filters,
    since: datetime,
    until: datetime,
    *,
    digits: int | None = 2,
) -> dict[str, Any]:
    """Mean time to repair in hours, rounded to `digits` decimals (None: not rounded)."""
    hours = _repair_hours()

    def rounded(value: Any) -> float:
        return float(value) if digits is None else round(float(value), digits)

    resolved = (
        Incident.org_id == org_id,
        Incident.status == "resolved",
        Incident.resolved_at.is_not(None),
        Incident.resolved_at >= since,
        Incident.resolved_at <= until,
        *filters.conditions(org_id),
    )

    def grouped(key: Any) -> list[dict[str, Any]]:
        rows = session.execute(
            select(key, func.avg(hours), func.count())
            .join(Watch, Watch.id == Incident.watch_id)
            .where(*resolved)
            .group_by(key)
            .order_by(func.avg(hours).desc(), key)
        ).all()
        return [{"key": k or "", "hours": rounded(h), "resolved": n} for k, h, n in rows]

    overall = session.execute(
        select(func.avg(hours), func.count())
        .join(Watch, Watch.id == Incident.watch_id)
        .where(*resolved)
    ).one()
    return {
        "overallHours": rounded(overall[0]) if overall[1] else None,
        "resolved": int(overall[1]),
        "byVendor": grouped(Watch.vendor),
        "byWatchType": grouped(Watch.watch_type),
        "byResolution": grouped(Incident.resolution),
    }


def incidents(session: Session, org_id: str, filters: Filters, now: datetime) -> dict[str, int]:
    recent = now - timedelta(days=30)
    stmt = select(
        func.sum(case((Incident.status == "open", 1), else_=0)),
        func.sum(case((Incident.status == "acknowledged", 1), else_=0)),
        func.sum(
            case((and_(Incident.status == "resolved", Incident.resolved_at >= recent), 1), else_=0)
        ),
    ).where(Incident.org_id == org_id)
    row = session.execute(_narrowed(stmt, Incident.watch_id, org_id, filters)).one()
    return {
        "open": int(row[0] or 0),
        "acknowledged": int(row[1] or 0),
        "resolvedLast30d": int(row[2] or 0),
    }


def checks(session: Session, org_id: str, filters: Filters, now: datetime) -> dict[str, int]:
    """Check jobs that finished in the last 24 hours, and those whose outcome was an error
    (or that failed outright). The job table keeps a day of finished jobs at least."""
    failed = or_(Job.status == "failed", Job.result["outcome"].as_string() == "error")
    row = session.execute(
        select(func.count(), func.sum(case((failed, 1), else_=0)))
        .select_from(Job)
        .join(Watch, Job.key == literal("check:") + Watch.id)
        .where(
            Job.kind == "check",
            Job.finished_at.is_not(None),
            Job.finished_at >= now - timedelta(hours=24),
            *filters.conditions(org_id),
        )
    ).one()
    return {"last24h": int(row[0] or 0), "failedLast24h": int(row[1] or 0)}


# -- the compass -------------------------------------------------------------------------------


def coverage(session: Session, org_id: str, filters: Filters, now: datetime) -> dict[str, Any]:
    """Watches by vendor, watch type and tag, each split by drift status, with its health."""
    where = filters.conditions(org_id)

    def split(key: Any, *joins: Any) -> list[dict[str, Any]]:
        stmt = select(key, Watch.drift_status, func.count())
        for join in joins:
            stmt = stmt.join(*join)
        rows = session.execute(stmt.where(*where).group_by(key, Watch.drift_status)).all()
        table: dict[str, dict[str, Any]] = {}
        for name, status, count in rows:
            entry = table.setdefault(
                name or "", {"key": name or "", "watches": 0, "byDriftStatus": {}}
            )
            entry["watches"] += count
            entry["byDriftStatus"][status] = count
        return sorted(table.values(), key=lambda e: (-e["watches"], e["key"]))

    return {
        "byVendor": split(Watch.vendor),
        "byWatchType": split(Watch.watch_type),
        "byTag": split(WatchTag.tag, (WatchTag, WatchTag.watch_id == Watch.id)),
    }


GAP_LIST = 100


def gaps(session: Session, org_id: str, filters: Filters, now: datetime) -> dict[str, Any]:
    where = filters.conditions(org_id)
    kinds = {
        "neverRun": Watch.drift_status == "never_run",
        "staleChecks": _stale(now),
        "error": Watch.drift_status == "error",
    }
    answer: dict[str, Any] = {}
    for name, condition in kinds.items():
        count = session.scalar(select(func.count()).select_from(Watch).where(*where, condition))
        rows = session.execute(
            select(Watch.id, Watch.name, Watch.vendor, Watch.last_checked_at)
            .where(*where, condition)
            .order_by(Watch.name)
            .limit(GAP_LIST)
        ).all()
        answer[name] = {
            "count": int(count or 0),
            "watches": [
                {"watchId": i, "name": n, "vendor": v, "lastCheckedAt": c} for i, n, v, c in rows
            ],
        }
    distinct = session.scalar(
        select(func.count()).select_from(Watch).where(*where, or_(*kinds.values()))
    )
    answer["total"] = int(distinct or 0)
    return answer


def hotspots(
    session: Session,
    org_id: str,
    filters: Filters,
    now: datetime,
    limit: int = 10,
    since: datetime | None = None,
) -> list[dict[str, Any]]:
    since = since or now - timedelta(days=30)
    per_watch = _breaking_per_watch(org_id, filters, since)
    rows = session.execute(
        select(Watch.id, Watch.name, Watch.vendor, per_watch.c.changes, per_watch.c.last)
        .join(per_watch, per_watch.c.watch_id == Watch.id)
        .order_by(per_watch.c.changes.desc(), Watch.name)
        .limit(limit)
    ).all()
    return [
        {
            "watchId": i,
            "name": n,
            "vendor": v,
            "breakingCount30d": int(b or 0),
            "lastDriftAt": last,
        }
        for i, n, v, b, last in rows
    ]


def _breaking_per_watch(org_id: str, filters: Filters, since: datetime) -> Any:
    """Per watch: events with breaking changes since `since`, their breaking changes and the
    newest; aggregated on the covering index first, joined to the watches after."""
    stmt = select(
        DriftEvent.watch_id.label("watch_id"),
        func.count().label("events"),
        func.sum(DriftEvent.breaking_count).label("changes"),
        func.max(DriftEvent.detected_at).label("last"),
    ).where(
        DriftEvent.org_id == org_id,
        DriftEvent.detected_at >= since,
        DriftEvent.breaking_count > 0,
    )
    return (
        _narrowed(stmt, DriftEvent.watch_id, org_id, filters)
        .group_by(DriftEvent.watch_id)
        .subquery()
    )


def vendor_count(session: Session, org_id: str, filters: Filters) -> int:
    return int(
        session.scalar(
            select(func.count(func.distinct(Watch.vendor))).where(*filters.conditions(org_id))
        )
        or 0
    )


def breaking_by_vendor(
    session: Session, org_id: str, filters: Filters, since: datetime, limit: int = 5
) -> list[dict[str, Any]]:
    """Vendors by breaking drift since `since`: events with breaking changes, and changes."""
    per_watch = _breaking_per_watch(org_id, filters, since)
    changes = func.sum(per_watch.c.changes)
    rows = session.execute(
        select(Watch.vendor, func.sum(per_watch.c.events), changes)
        .join(per_watch, per_watch.c.watch_id == Watch.id)
        .group_by(Watch.vendor)
        .order_by(changes.desc(), Watch.vendor)
        .limit(limit)
    ).all()
    return [{"vendor": v, "events": int(n), "breakingChanges": int(c or 0)} for v, n, c in rows]


def breaking_events(
    session: Session,
    org_id: str,
    filters: Filters,
    since: datetime,
    limit: int = 5,
    *,
    with_warnings: bool = False,
) -> tuple[int, int, list[dict[str, Any]]]:
    """(events with breaking changes, their breaking changes, the newest of them); with
    `with_warnings`, events with breaking or warning changes."""
    where = (
        DriftEvent.org_id == org_id,
        DriftEvent.detected_at >= since,
        or_(DriftEvent.breaking_count > 0, DriftEvent.warning_count > 0)
        if with_warnings
        else DriftEvent.breaking_count > 0,
    )
    total = session.execute(
        _narrowed(
            select(func.count(), func.sum(DriftEvent.breaking_count)).where(*where),
            DriftEvent.watch_id,
            org_id,
            filters,
        )
    ).one()
    rows = session.execute(
        select(
            DriftEvent.id,
            DriftEvent.detected_at,
            DriftEvent.breaking_count,
            Watch.id,
            Watch.name,
            DriftEvent.warning_count,
        )
        .join(Watch, Watch.id == DriftEvent.watch_id)
        .where(*where, *filters.conditions(org_id))
        .order_by(DriftEvent.detected_at.desc(), DriftEvent.id)
        .limit(limit)
    ).all()
    newest = [
        {"id": i, "detectedAt": at, "breaking": b, "warning": wa, "watchId": w, "watchName": n}
        for i, at, b, w, n, wa in rows
    ]
    return int(total[0] or 0), int(total[1] or 0), newest


def slowest_repairs(
    session: Session,
    org_id: str,
    filters: Filters,
    since: datetime,
    until: datetime,
    limit: int = 5,
    *,
    digits: int | None = 2,
) -> list[dict[str, Any]]:
    """The longest repairs, in hours rounded to `digits` decimals (None: not rounded)."""
    hours = _repair_hours()
    rows = session.execute(
        select(Incident.id, Incident.watch_id, Watch.name, Watch.vendor, hours, Incident.resolution)
        .join(Watch, Watch.id == Incident.watch_id)
        .where(
            Incident.org_id == org_id,
            Incident.status == "resolved",
            Incident.resolved_at >= since,
            Incident.resolved_at <= until,
            *filters.conditions(org_id),
        )
        .order_by(hours.desc(), Incident.id)
        .limit(limit)
    ).all()
    return [
        {
            "id": i,
            "watchId": w,
            "watchName": n,
            "vendor": v,
            "hours": float(h) if digits is None else round(float(h), digits),
            "resolution": r,
        }
        for i, w, n, v, h, r in rows
    ]


def known_labels(session: Session, org_id: str) -> tuple[list[str], list[str]]:
    """The org's vendors and tags (what a question may name)."""
    vendors = session.scalars(select(Watch.vendor).where(Watch.org_id == org_id).distinct())
    tags = session.scalars(
        select(WatchTag.tag)
        .join(Watch, Watch.id == WatchTag.watch_id)
        .where(Watch.org_id == org_id)
        .distinct()
    )
    return [v for v in vendors if v], list(tags)


def drift_between(
    session: Session, org_id: str, since: datetime, until: datetime, limit: int = 10
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Drift events detected in `[since, until)`: counts by highest severity, and the watches
    with the most of them (their events and breaking events)."""
    window = (
        DriftEvent.org_id == org_id,
        DriftEvent.detected_at >= since,
        DriftEvent.detected_at < until,
    )
    severity = severity_class()
    counts = {"breaking": 0, "warning": 0, "info": 0}
    for name, count in session.execute(
        select(severity, func.count()).where(*window).group_by(severity)
    ).all():
        counts[name] += int(count)
    events = func.count(DriftEvent.id)
    breaking = func.sum(case((DriftEvent.breaking_count > 0, 1), else_=0))
    rows = session.execute(
        select(Watch.id, Watch.name, Watch.vendor, events, breaking)
        .join(Watch, Watch.id == DriftEvent.watch_id)
        .where(*window)
        .group_by(Watch.id, Watch.name, Watch.vendor)
        .order_by(breaking.desc(), events.desc(), Watch.name)
        .limit(limit)
    ).all()
    watches = [
        {"watchId": i, "name": n, "vendor": v or "", "events": int(e), "breaking": int(b or 0)}
        for i, n, v, e, b in rows
    ]
    return counts, watches


def unresolved_incidents(
    session: Session, org_id: str, limit: int = 10
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Open and acknowledged incidents: their counts, and the oldest with their watches."""
    unresolved = Incident.status.in_(("open", "acknowledged"))
    counts = {"open": 0, "acknowledged": 0}
    for status, count in session.execute(
        select(Incident.status, func.count())
        .where(Incident.org_id == org_id, unresolved)
        .group_by(Incident.status)
    ).all():
        counts[status] = int(count)
    rows = session.execute(
        select(Watch.id, Watch.name, Incident.status, Incident.opened_at)
        .join(Watch, Watch.id == Incident.watch_id)
        .where(Incident.org_id == org_id, unresolved)
        .order_by(Incident.opened_at, Incident.id)
        .limit(limit)
    ).all()
    oldest = [{"watchId": i, "watchName": n, "status": s, "openedAt": at} for i, n, s, at in rows]
    return counts, oldest
