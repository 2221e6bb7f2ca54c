"""Settings in the console: notification defaults with the weekly e-mail opt-in, overlay
products (admins; a free plan sees why it cannot), and the org's members."""

from __future__ import annotations

from typing import Any

from flask import current_app, request, url_for
from werkzeug.wrappers import Response

from controller.accounts import service as accounts
from controller.accounts.service import SignedIn
from controller.draftpr import service as products
from controller.errors import NotFound
from controller.services import notifications
from controller.summary import service as summary
from web.body import validate
from web.console import action, blueprint, now, page, signed_in
from web.db import request_session

SEVERITIES = ("breaking", "warning", "info")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@blueprint.get("/settings")
@signed_in
def settings(user: SignedIn) -> Response:
    session = request_session()
    settings = current_app.extensions["driftgate.settings"]
    try:
        relay: summary.SmtpOut | None = summary.get_smtp(session, user.org_id, settings)
    except NotFound:  # no relay set: the page says so
        relay = None
    return page(
        "settings.html",
        user,
        defaults=notifications.get_defaults(session, user.org_id),
        relay=relay,
        own_relay=relay if relay is not None and relay.source == "org" else None,
        products=products.products(session, user.org_id),
        members=accounts.members(session, user.org_id),
        severities=SEVERITIES,
        weekdays=WEEKDAYS,
    )


def _number(text: str) -> int | str:
    """A form's number as an integer; anything else as typed, so the model refuses it with a
    message naming the field (never a silent default)."""
    text = text.strip()
    return int(text) if text.isdigit() else text


@blueprint.post("/settings/notifications")
@action
def save_notifications(user: SignedIn) -> str:
    form = request.form
    box = current_app.extensions["driftgate.secret_box"]
    session = request_session()
    data: dict[str, Any] = {
        "alertPolicy": {"severities": form.getlist("severity") or ["breaking"]},
    }
    if form.get("interval"):
        data["intervalMinutes"] = _number(form["interval"])
    url = form.get("destinationUrl", "").strip()
    if url:
        data["destination"] = {"kind": form.get("destinationKind", "webhook"), "url": url}
    elif form.get("keepDestination"):
        kept = notifications.current_destination(session, user.org_id, box)
        if kept is not None:
            data["destination"] = kept.model_dump(by_alias=True)
    recipients = [r.strip() for r in form.get("recipients", "").replace(",", "\n").splitlines()]
    data["weeklySummary"] = {
        "enabled": bool(form.get("weeklyEnabled")),
        "recipients": [r for r in recipients if r],
        "weekday": form.get("weekday", "monday"),
        "hourUtc": _number(form.get("hour", "") or "8"),
    }
    body = validate(notifications.NotificationDefaultsIn, data, "form")
    settings = current_app.extensions["driftgate.settings"]
    notifications.put_defaults(
        session, user.principal(), body, box, server_relay=settings.smtp_host is not None
    )
    return url_for("console.settings")


@blueprint.post("/settings/smtp")
@action
def save_smtp(user: SignedIn) -> str:
    form = request.form
    data: dict[str, Any] = {
        "host": form.get("host", "").strip(),
        "port": _number(form.get("port", "") or "587"),
        "security": form.get("security", "starttls"),
        "fromAddress": form.get("fromAddress", "").strip(),
        "username": form.get("username", "").strip() or None,
    }
    if form.get("password"):
        data["password"] = form["password"]  # left empty: the stored one stays (same host, user)
    body = validate(summary.SmtpIn, data, "form")
    box = current_app.extensions["driftgate.secret_box"]
    settings = current_app.extensions["driftgate.settings"]
    summary.put_smtp(request_session(), user.principal(), body, box, now(), settings)
    return url_for("console.settings")


@blueprint.post("/settings/products/<product>")
@action
def toggle_product(user: SignedIn, product: str) -> str:
    enabled = request.form.get("enabled") == "true"
    products.set_product(request_session(), user.principal(), product, enabled)
    return url_for("console.settings")
