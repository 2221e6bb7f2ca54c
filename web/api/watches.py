"""Watches: list, create, read, update, delete, pause and resume (org-scoped)."""

from __future__ import annotations

from controller.drift import service as drift
from controller.model.watch import WatchCreate, WatchList, WatchListQuery, WatchOut, WatchUpdate
from controller.notifications import service as notifications
from controller.watches import service
from controller.watches import types_service as watch_types
from web.api import REGISTRY
from web.routes import Call, Reply

route = REGISTRY.tagged("watches")


@route("GET /api/watches", "List watches", auth="key_or_trial", query=WatchListQuery)
def list_watches(call: Call) -> WatchList:
    """Watches of the caller's org, oldest first, filtered by tag (all given), status and type."""
    rows, cursor = service.list_watches(call.session, call.org_id, call.query)
    listing = service.watch_list_out(rows, cursor, call.now)
    incidents = drift.incidents_by_watch(call.session, [w.id for w in rows])
    for item in listing.watches:
        item.incident = incidents.get(item.id)
    return listing


@route(
    "POST /api/watches",
    "Create a watch",
    body=WatchCreate,
    out=WatchOut,
    status=201,
    errors=(409, 422),
)
def create_watch(call: Call) -> Reply:
    """Creates a watch in `never_run`. Without `watchType`, the type is inferred from the URL
    when it tells (`/openapi.json`, `.yaml`, `/mcp`), else from what the URL serves, fetched
    once (an OpenAPI or Swagger document is `openapi`, other JSON `rest`, an event stream
    `mcp`); 422 when neither tells."""
    data = watch_types.with_watch_type(call.body, call.settings)
    interval = notifications.default_interval(call.session, call.org_id)
    watch = service.create_watch(
        call.session, call.principal_required, data, call.secret_box, default_interval=interval
    )
    return Reply(
        201,
        drift.watch_out(call.session, watch, call.now),
        {"Location": f"/api/watches/{watch.id}"},
    )


@route("GET /api/watches/<watch_id>", "Read a watch")
def get_watch(call: Call) -> WatchOut:
    """One watch of the caller's org; another org's id answers 404."""
    return drift.watch_out(
        call.session, service.get_watch(call.session, call.org_id, call.path["watch_id"]), call.now
    )


@route("PATCH /api/watches/<watch_id>", "Update a watch", body=WatchUpdate, errors=(409, 422))
def update_watch(call: Call) -> WatchOut:
    """Changes only the fields sent; `headers: null` removes the stored headers."""
    watch = service.update_watch(
        call.session, call.principal_required, call.path["watch_id"], call.body, call.secret_box
    )
    return drift.watch_out(call.session, watch, call.now)


@route("DELETE /api/watches/<watch_id>", "Delete a watch", errors=(409,))
def delete_watch(call: Call) -> Reply:
    """Deletes the watch; git-managed watches answer 409 `managed_by_source`."""
    service.delete_watch(call.session, call.principal_required, call.path["watch_id"])
    return Reply(204)


@route("POST /api/watches/<watch_id>/pause", "Pause a watch", errors=(409,))
def pause_watch(call: Call) -> WatchOut:
    """Sets `driftStatus` to `disabled`; paused watches are not checked and block preflight."""
    return _moved(call, service.pause_watch)


@route("POST /api/watches/<watch_id>/resume", "Resume a watch", errors=(409,))
def resume_watch(call: Call) -> WatchOut:
    """Recomputes `driftStatus` from the last check (never_run, ok, drifted or error)."""
    return _moved(call, service.resume_watch)


def _moved(call: Call, move: service.Move) -> WatchOut:
    watch = move(call.session, call.principal_required, call.path["watch_id"])
    return drift.watch_out(call.session, watch, call.now)


@route(
    "POST /api/watches/<watch_id>/check",
    "Check a watch now",
    query=drift.CheckQuery,
    responses={200: drift.CheckOut, 202: drift.CheckOut},
    errors=(409,),
)
def check_watch(call: Call) -> Reply:
    """Queues a check (joining one already queued); with `?wait=SECONDS` waits for its result
    (200), else answers 202 with the job id. A paused watch answers 409."""
    out = drift.check_now(
        call.database, call.session, call.org_id, call.path["watch_id"], call.query.wait, call.now
    )
    return Reply(200 if out.watch is not None else 202, out)


@route("GET /api/watches/<watch_id>/status", "Status of a watch")
def watch_status(call: Call) -> drift.WatchStatus:
    """The watch, its preflight reason tokens, its last drift event and the agentActions."""
    return drift.watch_status(call.session, call.org_id, call.path["watch_id"], call.now)


@route(
    "POST /api/watches/<watch_id>/baseline",
    "Accept the current snapshot as baseline",
    body=drift.BaselineIn,
    errors=(409,),
)
def accept_baseline(call: Call) -> WatchOut:
    """Makes the last fetched snapshot the baseline (with a reason; audited) and resolves the
    open incident."""
    watch = drift.accept_baseline(
        call.session,
        call.principal_required,
        call.path["watch_id"],
        call.body.reason,
        call.secret_box,
        call.now,
    )
    return drift.watch_out(call.session, watch, call.now)


def _incident_route(
    action: str, name: str, summary: str, doc: str, errors: tuple[int, ...]
) -> None:
    """`POST /api/watches/<id>/incident/<action>` for each of the service's incident actions,
    with the body the action reads."""

    def handler(call: Call) -> drift.IncidentOut:
        incident = drift.act_on_incident(
            call.session,
            call.principal_required,
            call.path["watch_id"],
            action,
            call.body,
            call.secret_box,
            call.now,
        )
        return drift.incident_out(incident)

    handler.__name__ = name
    handler.__doc__ = doc
    route(
        f"POST /api/watches/<watch_id>/incident/{action}",
        summary,
        body=drift.INCIDENT_ACTIONS[action].body,
        errors=errors,
    )(handler)


_incident_route(
    "ack",
    "acknowledge_incident",
    "Acknowledge the open incident",
    "Marks the watch's open incident acknowledged, with an optional note (audited). The "
    "approval rules of every agent bound to the watch decide: `repository` and `branch` must "
    "match a rule of each agent that declares rules, else 403 `approval_refused` naming each "
    "agent, rule and the part that failed, and nothing is acknowledged.",
    (403,),
)
_incident_route(
    "resolve",
    "resolve_incident",
    "Resolve the open incident",
    "Resolves the watch's incident by hand (the baseline stays as it is; audited).",
    (),
)
