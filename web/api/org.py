"""Org-wide views: notification defaults, alert delivery stats, and the portfolio status."""

from __future__ import annotations

from pydantic import Field

from controller.model.base import ApiModel
from controller.model.watch import DriftStatus
from controller.services import alerts, drift, notifications
from controller.services.drift import reasons_of
from controller.store.models import Watch
from web.api import REGISTRY
from web.routes import Call


@REGISTRY.route(
    "GET",
    "/api/org/notification-defaults",
    summary="Notification defaults",
    tag="org",
    responses={200: notifications.NotificationDefaultsOut},
)
def get_notification_defaults(call: Call) -> notifications.NotificationDefaultsOut:
    """The org's default destination (host only), interval and alert policy."""
    return notifications.get_defaults(call.session, call.org_id)


@REGISTRY.route(
    "PUT",
    "/api/org/notification-defaults",
    summary="Replace the notification defaults",
    tag="org",
    body=notifications.NotificationDefaultsIn,
    responses={200: notifications.NotificationDefaultsOut},
    errors=(422,),
)
def put_notification_defaults(call: Call) -> notifications.NotificationDefaultsOut:
    """Replaces the defaults: new watches inherit the interval; every event goes to the
    destination when its severity is in the alert policy (audited)."""
    return notifications.put_defaults(
        call.session, call.principal_required, call.body, call.secret_box
    )


@REGISTRY.route(
    "GET",
    "/api/alerts/stats",
    summary="Alert delivery statistics",
    tag="org",
    responses={200: alerts.AlertStats},
)
def alert_stats(call: Call) -> alerts.AlertStats:
    """Deliveries by channel and event type (successful, failed, retrying, pending) and the
    last attempts with their status, latency and error."""
    return alerts.alert_stats(call.session, call.org_id)


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


@REGISTRY.route(
    "GET",
    "/api/portfolio/status",
    summary="Per-watch drift status",
    tag="org",
    responses={200: PortfolioStatus},
)
def portfolio_status(call: Call) -> PortfolioStatus:
    """Every watch's `driftStatus` and reason tokens, and the counts by status."""
    from sqlalchemy import select

    rows = call.session.scalars(
        select(Watch).where(Watch.org_id == call.org_id).order_by(Watch.name)
    )
    return PortfolioStatus(
        counts=drift.status_counts(call.session, call.org_id),
        watches=[
            WatchStatusRow(
                id=w.id,
                name=w.name,
                watch_type=w.watch_type,
                drift_status=DriftStatus(w.drift_status),
                reasons=reasons_of(w),
                last_checked_at=w.last_checked_at.isoformat() if w.last_checked_at else None,
                open_breaking=w.open_breaking,
            )
            for w in rows
        ],
    )
