"""Watches in the console: the filterable list, a watch's page with its actions, and a drift
event's changes side by side."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from flask import current_app, request, url_for
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.errors import NotFound
from controller.model.watch import WatchListQuery
from controller.services import drift
from controller.services import watches as service
from web.body import validate
from web.console import action, blueprint, now, page, signed_in
from web.db import request_session

STATUSES = ("ok", "drifted", "error", "disabled", "never_run")  # disabled: paused
TYPES = ("openapi", "mcp", "rest")
PAGE = 25


@blueprint.get("/watches")
@signed_in
def watches(user: SignedIn) -> Response:
    args = request.args
    filters = {
        "driftStatus": args.get("status") or None,
        "watchType": args.get("type") or None,
        "tag": [t for t in args.getlist("tag") if t],
        "vendor": args.get("vendor") or None,
        "cursor": args.get("cursor") or None,
        "limit": PAGE,
    }
    query = validate(WatchListQuery, {k: v for k, v in filters.items() if v}, "query")
    rows, cursor = service.list_watches(request_session(), user.org_id, query)
    listing = service.to_list(rows, cursor, now())
    incidents = drift.incidents_by_watch(request_session(), [w.id for w in rows])
    vendors = {w.id: w.vendor for w in rows}
    return page(
        "watches.html",
        user,
        watches=listing.watches,
        incidents=incidents,
        vendors=vendors,
        next_cursor=listing.next_cursor,
        statuses=STATUSES,
        types=TYPES,
        current=args,
    )


@blueprint.get("/watches/<watch_id>")
@signed_in
def watch(user: SignedIn, watch_id: str) -> Response:
    status = drift.watch_status(request_session(), user.org_id, watch_id, now())
    history = drift.list_events(
        request_session(), user.org_id, drift.DriftQuery(watch_id=watch_id, limit=20)
    )
    return page("watch.html", user, status=status, events=history.events)


@blueprint.get("/watches/<watch_id>/events/<event_id>")
@signed_in
def event(user: SignedIn, watch_id: str, event_id: str) -> Response:
    found = drift.get_event(request_session(), user.org_id, event_id)
    if found.watch_id != watch_id:
        raise NotFound("no such drift event on this watch")
    return page("event.html", user, event=found, groups=grouped(found.changes))


SHARED = "Shared schemas"
WHOLE = "the contract as a whole"


def grouped(changes: list[Any]) -> OrderedDict[str, list[Any]]:
    """Changes by the operation or tool they touch, breaking first within each; a change to
    a shared schema (it has a `cause`) is told once, under the shared schemas, first, whose
    most far-reaching causes come first; the document itself last."""
    order = {"breaking": 0, "warning": 1, "info": 2}
    groups: OrderedDict[str, list[Any]] = OrderedDict()
    ranked = sorted(
        changes,
        key=lambda c: (order.get(c.severity.value, 3), -(c.affectedCount or 1), c.path),
    )
    for change in ranked:
        where = change.location.operation or change.location.tool if change.location else None
        groups.setdefault(SHARED if change.cause else where or WHOLE, []).append(change)
    return OrderedDict(sorted(groups.items(), key=lambda kv: (kv[0] != SHARED, kv[0] == WHOLE)))


# The actions of a watch's page: each a form posting here; admins only.


@blueprint.post("/watches/<watch_id>/check")
@action
def check(user: SignedIn, watch_id: str) -> str:
    database = current_app.extensions["driftgate.database"]
    drift.check_now(database, request_session(), user.org_id, watch_id, 10.0, now())
    return url_for("console.watch", watch_id=watch_id)


@blueprint.post("/watches/<watch_id>/pause")
@action
def pause(user: SignedIn, watch_id: str) -> str:
    service.pause_watch(request_session(), user.principal(), watch_id)
    return url_for("console.watch", watch_id=watch_id)


@blueprint.post("/watches/<watch_id>/resume")
@action
def resume(user: SignedIn, watch_id: str) -> str:
    service.resume_watch(request_session(), user.principal(), watch_id)
    return url_for("console.watch", watch_id=watch_id)


@blueprint.post("/watches/<watch_id>/baseline")
@action
def baseline(user: SignedIn, watch_id: str) -> str:
    reason = request.form.get("reason", "").strip() or "accepted in the console"
    form = validate(drift.BaselineIn, {"reason": reason}, "form")
    box = current_app.extensions["driftgate.secret_box"]
    drift.accept_baseline(request_session(), user.principal(), watch_id, form.reason, box, now())
    return url_for("console.watch", watch_id=watch_id)


@blueprint.post("/watches/<watch_id>/incident/<step>")
@action
def incident(user: SignedIn, watch_id: str, step: str) -> str:
    if step not in drift.INCIDENT_ACTIONS:
        raise NotFound("no such incident action")
    note = request.form.get("note", "").strip() or None
    form = validate(drift.IncidentAction, {"note": note}, "form")
    box = current_app.extensions["driftgate.secret_box"]
    drift.act_on_incident(
        request_session(), user.principal(), watch_id, step, form.note, box, now()
    )
    return url_for("console.watch", watch_id=watch_id)
