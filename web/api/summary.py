"""The weekly summary e-mail: the org's SMTP relay, a preview of this week's summary, and the
unsubscribe link its e-mails carry (`/api/summary/unsubscribe`, no key: the link is signed).
See docs/portfolio.md."""

from __future__ import annotations

from html import escape
from typing import Annotated

from flask import Response
from pydantic import StringConstraints

from controller.model.base import RequestModel
from controller.model.watch import TEXT_PATTERN
from controller.summary import service
from web.api import REGISTRY
from web.routes import Call, Reply

route = REGISTRY.tagged("org")


@route("GET /api/org/smtp", "The SMTP relay the org's e-mail goes through", errors=(404,))
def get_smtp(call: Call) -> service.SmtpOut:
    """Host, port, security, user and sender of the relay the weekly summary is sent through:
    the org's own (`source: org`), else the server's (`source: server`, the operator's
    settings; its user is not shown); 404 with neither. `passwordSet` says whether a password
    is stored (it is never shown)."""
    return service.get_smtp(call.session, call.org_id, call.settings)


@route("PUT /api/org/smtp", "Set the org's SMTP relay", body=service.SmtpIn, errors=(422,))
def put_smtp(call: Call) -> service.SmtpOut:
    """Replaces the relay (audited). The password is stored encrypted; omitted, the stored one
    is kept while host and user are unchanged, and dropped otherwise."""
    return service.put_smtp(
        call.session, call.principal_required, call.body, call.secret_box, call.now, call.settings
    )


@route("DELETE /api/org/smtp", "Remove the org's SMTP relay", errors=(404, 409))
def delete_smtp(call: Call) -> Reply:
    """Removes the org's relay and its password; the server's relay applies from then on, if
    it has one (409 while the weekly summary is on and the server has none)."""
    service.delete_smtp(call.session, call.principal_required, call.settings)
    return Reply(204)


@route("GET /api/summary/weekly", "This week's summary, as the e-mail would say it")
def weekly_preview(call: Call) -> service.WeeklyFigures:
    """The figures of the weekly summary e-mail computed now: drift of the last 7 days, open
    and acknowledged incidents, MTTR over 30 days, hotspots."""
    return service.preview(call.session, call.org_id, call.now)


class TokenQuery(RequestModel):
    token: Annotated[str, StringConstraints(max_length=2000, pattern=TEXT_PATTERN)]


@route(
    f"GET {service.UNSUBSCRIBE_PATH}",
    "The unsubscribe page of a weekly summary e-mail",
    query=TokenQuery,
    auth="none",
    responses={200: None},
    errors=(404,),
    raw_response={"text/html": {"schema": {"type": "string"}}},
)
def unsubscribe_page(call: Call) -> Response:
    """A page with one button that unsubscribes the link's address (a GET changes nothing:
    mail scanners follow links)."""
    who = service.unsubscribe_target(call.secret_box, call.query.token)
    page = (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        "<title>Unsubscribe from the driftgate weekly summary</title>"
        "<body style='font-family:sans-serif'>"
        f"<p>Stop sending the driftgate weekly summary to {escape(who)}?</p>"
        f"<form method=post action='{escape(service.UNSUBSCRIBE_PATH)}?token="
        f"{escape(call.query.token)}'>"
        "<button type=submit>Unsubscribe</button></form></body></html>"
    )
    return Response(page, mimetype="text/html")


@route(
    f"POST {service.UNSUBSCRIBE_PATH}",
    "Unsubscribe from the weekly summary (one click)",
    query=TokenQuery,
    auth="none",
    errors=(404,),
)
def unsubscribe(call: Call) -> service.UnsubscribeOut:
    """RFC 8058 one-click unsubscribe: the mail client POSTs `List-Unsubscribe=One-Click` to
    the link; the address comes off its org's list (idempotent), and the summary turns off
    with the last one."""
    return service.unsubscribe(call.session, call.secret_box, call.query.token)
