"""Portfolio views of an org: every watch's drift status and reason tokens, counted by status."""

from __future__ import annotations

from pydantic import Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.model.base import ApiModel, utc_iso
from controller.model.watch import DriftStatus
from controller.services.drift import reasons_of, status_counts
from controller.store.models import Watch


class WatchStatusRow(ApiModel):
    id: str
    name: str
    watch_type: str
    drift_status: DriftStatus
    reasons: list[str]
    last_checked_at: str | None = Field(description="ISO 8601")
    open_breaking: int


class PortfolioStatus(ApiModel):
    counts: dict[str, int]
    watches: list[WatchStatusRow]


def portfolio_status(session: Session, org_id: str) -> PortfolioStatus:
    """Every watch's `driftStatus` and reason tokens (by name), and the counts by status."""
    rows = session.scalars(select(Watch).where(Watch.org_id == org_id).order_by(Watch.name))
    return PortfolioStatus(
        counts=status_counts(session, org_id),
        watches=[
            WatchStatusRow(
                id=w.id,
                name=w.name,
                watch_type=w.watch_type,
                drift_status=DriftStatus(w.drift_status),
                reasons=reasons_of(w),
                last_checked_at=utc_iso(w.last_checked_at) if w.last_checked_at else None,
                open_breaking=w.open_breaking,
            )
            for w in rows
        ],
    )
