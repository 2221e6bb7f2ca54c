"""Portfolio status of an org: each watch's drift status and reason tokens, a page at a time,
and the counts by status over all of the org's watches.

Pages follow the other lists (`GET /api/watches`): oldest first, a keyset cursor
`<creation µs>.<id>`, `limit` 1-200. A page reads at most `limit + 1` rows by the index on
(org, creation, id); the counts are one aggregate by the index on (org, status). Neither
reads every watch.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import Field, StringConstraints
from sqlalchemy import select
from sqlalchemy.orm import Session, load_only, raiseload

from controller.drift.service import change_reasons_of, reasons_of, status_counts
from controller.model import paging
from controller.model.base import ApiModel, RequestModel, utc_iso
from controller.model.watch import CURSOR_PATTERN, DriftStatus
from controller.store.models import Watch

PAGE_LIMIT = 50
MAX_PAGE_LIMIT = 200


class PortfolioStatusQuery(RequestModel):
    limit: int = Field(default=PAGE_LIMIT, ge=1, le=MAX_PAGE_LIMIT)
    cursor: Annotated[str, StringConstraints(pattern=CURSOR_PATTERN)] | None = Field(
        default=None, description="the nextCursor of the previous page"
    )


class WatchStatusRow(ApiModel):
    id: str
    name: str
    watch_type: str
    drift_status: DriftStatus
    reasons: list[str]
    last_checked_at: str | None = Field(description="ISO 8601")
    open_breaking: int


class PortfolioStatus(ApiModel):
    counts: dict[str, int] = Field(
        description="every watch of the org by `driftStatus` (all pages, not only this one)"
    )
    total: int = Field(description="how many watches the org has (all pages)")
    watches: list[WatchStatusRow] = Field(description="this page, oldest first")
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null at the end"
    )


def portfolio_status(
    session: Session, org_id: str, query: PortfolioStatusQuery, now: datetime | None = None
) -> PortfolioStatus:
    """One page of watches with their `driftStatus` and reason tokens at `now` (the clock's
    when not given), and the org's counts."""
    now = now or datetime.now(UTC)
    stmt = (
        select(Watch)
        .where(Watch.org_id == org_id)
        .options(
            load_only(
                Watch.id,
                Watch.name,
                Watch.watch_type,
                Watch.drift_status,
                Watch.failure_class,
                Watch.last_checked_at,
                Watch.interval_minutes,
                Watch.open_breaking,
                Watch.created_at,
                Watch.waived_until,  # a waiver that ended blocks (`reasons_of`)
                Watch.incident_id,  # the drift's own reason tokens (`change_reasons_of`)
                raiseload=True,
            ),
            raiseload(Watch.tag_rows),  # not shown here: no second query for the tags
        )
    )
    rows, cursor = paging.oldest_first(
        session, stmt, Watch.created_at, Watch.id, query.cursor, query.limit
    )
    counts = status_counts(session, org_id)
    found = change_reasons_of(session, rows)
    return PortfolioStatus(
        counts=counts,
        total=sum(counts.values()),
        watches=[
            WatchStatusRow(
                id=w.id,
                name=w.name,
                watch_type=w.watch_type,
                drift_status=DriftStatus(w.drift_status),
                reasons=reasons_of(w, now, found.get(w.id, ())),
                last_checked_at=utc_iso(w.last_checked_at) if w.last_checked_at else None,
                open_breaking=w.open_breaking,
            )
            for w in rows
        ],
        next_cursor=cursor,
    )
