"""Org-wide views: the caller, notification defaults, alert delivery stats, and the portfolio
status."""

from __future__ import annotations

from controller.notifications import alerts_service as alerts
from controller.notifications import service as notifications
from controller.orgs import auth_service as auth
from controller.portfolio import status_service as portfolio
from web.api import REGISTRY
from web.routes import Call

route = REGISTRY.tagged("org")


@route("GET /api/me", "The caller: org, plan and products", auth="key_or_trial")
def whoami(call: Call) -> auth.MeOut:
    """Whom the credential belongs to: a way to check a key (the hosted CLI's `login` calls
    it). Never the key itself."""
    return auth.whoami(call.principal_required)


@route("GET /api/org/notification-defaults", "Notification defaults")
def get_notification_defaults(call: Call) -> notifications.NotificationDefaultsOut:
    """The org's default destination (host only), interval and alert policy."""
    return notifications.get_defaults(call.session, call.org_id)


@route(
    "PUT /api/org/notification-defaults",
    "Replace the notification defaults",
    body=notifications.NotificationDefaultsIn,
    errors=(422,),
)
def put_notification_defaults(call: Call) -> notifications.NotificationDefaultsOut:
    """Replaces the defaults: new watches inherit the interval; every event goes to the
    destination when its severity is in the alert policy (audited)."""
    return notifications.put_defaults(
        call.session,
        call.principal_required,
        call.body,
        call.secret_box,
        server_relay=call.settings.smtp_host is not None,
    )


@route("GET /api/alerts/stats", "Alert delivery statistics")
def alert_stats(call: Call) -> alerts.AlertStats:
    """Deliveries by channel and event type (successful, failed, retrying, pending) and the
    last attempts with their status, latency and error."""
    return alerts.alert_stats(call.session, call.org_id)


@route(
    "GET /api/portfolio/status",
    "Per-watch drift status, a page at a time",
    query=portfolio.PortfolioStatusQuery,
)
def portfolio_status(call: Call) -> portfolio.PortfolioStatus:
    """A page of watches (oldest first, `limit` 1-200, default 50; `cursor` from
    `nextCursor`) with each one's `driftStatus` and reason tokens, and `counts` by status and
    `total` over every watch of the org."""
    return portfolio.portfolio_status(call.session, call.org_id, call.query, call.now)
