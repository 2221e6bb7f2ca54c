"""Watches in the console: the filterable list (with the overview's health and incident
filters) and its add-watch form, a watch's page with its actions, and a drift event's
changes side by side."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from flask import current_app, redirect, request, url_for
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.contracts.kinds import CONTRACT_KINDS
from controller.drift import acknowledgement_service as acknowledgement
from controller.drift import service as drift
from controller.errors import NotFound, RequestError
from controller.model.watch import Health, WatchCreate, WatchListQuery
from controller.notifications import service as notifications
from controller.portfolio import blocked_service as blocked
from controller.portfolio import service as portfolio
from controller.waivers import service as waivers
from controller.watches import service
from controller.watches import types_service as watch_types
from web.body import validate
from web.console import action, admin, blueprint, now, page, signed_in
from web.console.settings import service_interval
from web.db import database, request_session

STATUSES = ("ok", "drifted", "error", "disabled", "never_run")  # disabled: paused
# (watch type, label) in the order people pick from.
TYPES = tuple((kind.name, kind.label) for kind in CONTRACT_KINDS.shown())
PAGE = 25


@blueprint.get("/watches")
@signed_in
def watches(user: SignedIn) -> Response:
    return _list_page(user)


def _list_page(
    user: SignedIn, status: int = 200, form: dict[str, str] | None = None, **problems: str
) -> Response:
    """The list with its filters; `form` and `problems` redraw the add-watch form refused."""
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
    rows, cursor = service.list_watches(
        request_session(),
        user.org_id,
        query,
        portfolio.tile_conditions(args.get("health"), args.get("incident"), now()),
    )
    listing = service.watch_list_out(rows, cursor, now())
    incidents = drift.incidents_by_watch(request_session(), [w.id for w in rows])
    vendors = {w.id: w.vendor for w in rows}
    return page(
        "watches.html",
        user,
        code=status,
        watches=listing.watches,
        incidents=incidents,
        vendors=vendors,
        next_cursor=listing.next_cursor,
        statuses=STATUSES,
        types=TYPES,
        bands=portfolio.HEALTH_BANDS,
        current=args,
        add=form or {},
        problems=problems,
        default_interval=service_interval(request_session(), user.org_id),
    )


@blueprint.post("/watches")
@signed_in
def add_watch(user: SignedIn) -> Response:
    """A watch made here as `POST /api/watches` makes it (same model, same service); a
    refused form comes back with each problem at its field, and nothing is stored."""
    admin(user)
    form = {k: request.form.get(k, "").strip() for k in ("name", "url", "type", "interval", "tags")}
    data: dict[str, Any] = {"name": form["name"], "url": form["url"]}
    if form["type"]:
        data["watchType"] = form["type"]
    if form["interval"]:
        data["intervalMinutes"] = _number(form["interval"])
    if form["tags"]:
        data["tags"] = [t.strip() for t in form["tags"].split(",") if t.strip()]
    session = request_session()
    try:
        body = validate(WatchCreate, data, "form")
        body = watch_types.with_watch_type(body, current_app.extensions["driftgate.settings"])
        watch = service.create_watch(
            session,
            user.principal(),
            body,
            current_app.extensions["driftgate.secret_box"],
            default_interval=notifications.default_interval(session, user.org_id),
        )
    except RequestError as exc:
        session.rollback()  # nothing of a refused form is kept
        return _list_page(user, exc.status, form, **field_problems(exc))
    session.commit()
    return redirect(url_for("console.watch", watch_id=watch.id))


FIELDS = {
    "/name": "name",
    "/label": "name",
    "/url": "url",
    "/watchType": "type",
    "/intervalMinutes": "interval",
    "/tags": "tags",
}


def field_problems(exc: RequestError) -> dict[str, str]:
    """Each problem of a refused form under its field (`name`, `url`, `type`, `interval`,
    `tags`), the rest under `form`."""
    problems: dict[str, str] = {}
    details = exc.details if isinstance(exc.details, list) else []
    for detail in details:
        pointer = str(detail.get("path", ""))
        field = next(
            (f for p, f in FIELDS.items() if pointer == p or pointer.startswith(p + "/")), "form"
        )
        problems.setdefault(field, str(detail.get("message", "")))
    if not problems:
        field = "name" if exc.code == "duplicate_name" else "form"
        problems[field] = exc.message
    return problems


def _number(text: str) -> int | str:
    return int(text) if text.isdigit() else text


@blueprint.get("/watches/<watch_id>")
@signed_in
def watch(user: SignedIn, watch_id: str) -> Response:
    status = drift.watch_status(request_session(), user.org_id, watch_id, now())
    history = drift.list_events(
        request_session(), user.org_id, drift.DriftQuery(watch_id=watch_id, limit=20)
    )
    rules = acknowledgement.approval_rules(request_session(), status.watch_id)
    agents = blocked.watch_agents(
        request_session(), database(), user.org_id, status.watch_id, now()
    )
    covering = waivers.describe(request_session(), user.org_id, now(), watch_id=status.watch_id)
    return page(
        "watch.html",
        user,
        status=status,
        events=history.events,
        approvals=rules,
        agents=agents,
        waivers=covering,
    )


@blueprint.app_template_global("checks_state")
def checks_state(drift_status: str, health: Health) -> tuple[str, str]:
    """How a watch's checks are doing, as (badge class, word): `working`, `failing`,
    `stale`, `none yet`, `paused`. It says nothing of the contract (its `driftStatus` does),
    so a drifted watch reads "Checks: working", never "healthy" beside "drifted"."""
    if drift_status == "disabled":
        return "paused", "paused"
    if health.is_stale_check:
        return "error", "stale"
    if drift_status == "error":
        return "error", "failing"
    if drift_status == "never_run" or health.minutes_since_last_check is None:
        return "never_run", "none yet"
    return "ok", "working"


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
    found = drift.INCIDENT_ACTIONS.get(step)
    if found is None:
        raise NotFound("no such incident action")
    fields = {name: request.form.get(name, "").strip() or None for name in found.body.model_fields}
    form = validate(found.body, fields, "form")
    box = current_app.extensions["driftgate.secret_box"]
    drift.act_on_incident(request_session(), user.principal(), watch_id, step, form, box, now())
    return url_for("console.watch", watch_id=watch_id)
