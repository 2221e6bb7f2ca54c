"""Settings in the console: notification defaults with the weekly e-mail opt-in, overlay
products (admins; a free plan sees why it cannot), what each plan unlocks (`/console/plans`,
from the table the checks read), and the org's members: admins invite
(a one-time set-password link, as `driftgate users create` prints), change roles and
remove members; the org's last admin stays an admin."""

from __future__ import annotations

from typing import Any

from flask import current_app, request, url_for
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response

from controller.accounts import service as accounts
from controller.accounts.service import SignedIn
from controller.destinations import service as destinations
from controller.draftpr import service as products
from controller.errors import Conflict, NotFound, Unprocessable
from controller.ingress.service import quota_of
from controller.model.plans import FEATURES, PLANS, allows, quota_text
from controller.notifications import service as notifications
from controller.orgs.service import get_org
from controller.summary import service as summary
from controller.watches.service import DEFAULT_INTERVAL_MINUTES
from web.body import validate
from web.console import action, admin, blueprint, now, page, signed_in
from web.db import request_session

SEVERITIES = ("breaking", "warning", "info")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
PRODUCTS = {
    "replay_cloud": (
        "Replay fixtures",
        "structural drift fixtures, built from a watch or taken from the catalog, for testing "
        "agents (the /v1/replay routes)",
    ),
    "draftpr_repo": (
        "Draft pull requests",
        "drift events open draft pull requests on the code hosting platform",
    ),
    "toolmanifest_org": (
        "Tool-manifest lint",
        "draft pull requests carry a lint comment on the agent's tool manifest",
    ),
}


@blueprint.get("/settings")
@signed_in
def settings(user: SignedIn) -> Response:
    return _settings_page(user)


def _settings_page(
    user: SignedIn, status: int = 200, invited: tuple[str, str] | None = None, **problems: str
) -> Response:
    session = request_session()
    settings = current_app.extensions["driftgate.settings"]
    try:
        relay: summary.SmtpOut | None = summary.get_smtp(session, user.org_id, settings)
    except NotFound:  # no relay set: the page says so
        relay = None
    box = current_app.extensions["driftgate.secret_box"]
    destination = notifications.current_destination(session, user.org_id, box)
    named = destinations.list_destinations(session, user.org_id)
    return page(
        "settings.html",
        user,
        code=status,
        defaults=notifications.get_defaults(session, user.org_id),
        destination=shown_url(destination.url) if destination is not None else None,
        destination_kinds=notifications.DESTINATION_KINDS,
        default_interval=service_interval(session, user.org_id),
        product_notes=PRODUCTS,
        invited=invited,
        problems=problems,
        relay=relay,
        own_relay=relay if relay is not None and relay.source == "org" else None,
        products=products.products(session, user.org_id),
        members=accounts.members(session, user.org_id),
        severities=SEVERITIES,
        weekdays=WEEKDAYS,
        named_destinations=named.destinations,
        named_kinds=named.kinds,
    )


@blueprint.get("/plans")
@signed_in
def plans(user: SignedIn) -> Response:
    """What each plan unlocks, from the table every plan check reads
    (`controller.model.plans.FEATURES`), with the org's plan and this server's quotas."""
    settings = current_app.extensions["driftgate.settings"]
    quotas = {plan: quota_of(settings, plan) for plan in PLANS}
    return page(
        "plans.html",
        user,
        plans=PLANS,
        features=list(FEATURES.values()),
        allows=allows,
        quotas={plan: quota_text(plan, quotas) for plan in PLANS},
        default_plan=settings.default_plan,
    )


def shown_url(url: str) -> str:
    """A destination URL as the console shows it everywhere (settings, deliveries): scheme,
    host, port and path, without user info, query or token-like path segments."""
    return notifications.shown_destination(url)


def service_interval(session: Session, org_id: str) -> int:
    """The interval a new watch gets: the org's default, else the service's."""
    return notifications.default_interval(session, org_id) or DEFAULT_INTERVAL_MINUTES


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
        # Without a kind, the select's first option (what a browser sends when none is chosen).
        kind = form.get("destinationKind", notifications.DESTINATION_KINDS[0])
        data["destination"] = {"kind": kind, "url": url}
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


@blueprint.post("/settings/destinations/<destination_id>/test")
@action
def test_destination(user: SignedIn, destination_id: str) -> str:
    """Queue a test message for one of the org's named destinations (the delivery lane sends
    it; the table shows how it went)."""
    box = current_app.extensions["driftgate.secret_box"]
    destinations.send_test(request_session(), user.principal(), destination_id, box, now())
    return url_for("console.settings")


@blueprint.post("/settings/products/<product>")
@action
def toggle_product(user: SignedIn, product: str) -> str:
    enabled = request.form.get("enabled") == "true"
    products.set_product(request_session(), user.principal(), product, enabled)
    return url_for("console.settings")


# Members: invite with a one-time link, change a role, remove; admins only.


@blueprint.post("/settings/members")
@signed_in
def invite(user: SignedIn) -> Response:
    admin(user)
    session = request_session()
    email = request.form.get("email", "").strip()
    role = request.form.get("role", "viewer")
    org = get_org(session, user.org_id)
    try:
        made, token = accounts.create_user(session, org, email, role, actor=user.actor, now=now())
    except (Unprocessable, Conflict) as exc:
        session.rollback()
        return _settings_page(user, exc.status, invite_email=email, invite_error=exc.message)
    session.commit()
    # The link is shown on this answer only, as the CLI prints it once; the store keeps its hash.
    return _settings_page(user, 201, invited=(made.email, _link(token)))


@blueprint.post("/settings/members/<member_id>/link")
@signed_in
def new_link(user: SignedIn, member_id: str) -> Response:
    admin(user)
    session = request_session()
    found = accounts.member(session, user.org_id, member_id)
    token = accounts.reset_link(session, found, actor=user.actor, now=now())
    session.commit()
    return _settings_page(user, 201, invited=(found.email, _link(token)))


@blueprint.post("/settings/members/<member_id>/role")
@action
def change_role(user: SignedIn, member_id: str) -> str:
    found = accounts.member(request_session(), user.org_id, member_id)
    accounts.change_role(request_session(), found, request.form.get("role", ""), actor=user.actor)
    return url_for("console.settings", _anchor="members")


@blueprint.post("/settings/members/<member_id>/remove")
@action
def remove_member(user: SignedIn, member_id: str) -> str:
    found = accounts.member(request_session(), user.org_id, member_id)
    accounts.remove_user(request_session(), found, actor=user.actor)
    return url_for("console.settings", _anchor="members")


def _link(token: str) -> str:
    settings = current_app.extensions["driftgate.settings"]
    base = settings.public_base_url or request.host_url
    return accounts.setup_link(base, token)
