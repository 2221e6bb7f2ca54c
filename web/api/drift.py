"""Drift explanation: `POST /api/drift/explain` turns change objects into hints (no key needed)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from flask import Response
from sqlalchemy.orm import Session

from controller.drift import explain_service as explain
from controller.drift import export_service as export
from controller.drift import service as drift_service
from controller.store.db import Database
from web.api import REGISTRY
from web.routes import CORRELATION_HEADER, Call

route = REGISTRY.tagged("drift")


@route(
    "POST /api/drift/explain",
    "Explain changes",
    auth="none",
    body=explain.ExplainRequest,
    errors=(429,),
)
def explain_drift(call: Call) -> explain.ExplainOut:
    """Per change: its summary, the `agentAction` token and a human hint; plus counts and an
    overall summary. Unknown rules get a hint by severity. No key is needed; rate limited."""
    call.rate_limit("explain", per_minute=600, burst=120)
    return explain.explain(call.body)


@route("GET /api/drift", "List drift events", query=drift_service.DriftQuery)
def list_drift(call: Call) -> drift_service.DriftPage:
    """Drift events of the org, newest first, at most 50 a page; filter by `watchId`."""
    return drift_service.list_events(call.session, call.org_id, call.query)


@route("GET /api/drift/events/<event_id>", "One drift event with its changes")
def get_drift_event(call: Call) -> drift_service.DriftEventOut:
    """The event, its counts and every change object."""
    return drift_service.get_event(call.session, call.org_id, call.path["event_id"])


@route("GET /api/incidents", "List incidents", query=drift_service.IncidentQuery)
def list_incidents(call: Call) -> drift_service.IncidentPage:
    """Incidents of the org, newest opened first, at most 50 a page: open and acknowledged
    ones unless `status` says otherwise; filter by `watchId`. Acknowledge or resolve one with
    `POST /api/watches/<watchId>/incident/ack` or `/resolve`."""
    return drift_service.list_incidents(call.session, call.org_id, call.query)


@route("GET /api/incidents/<incident_id>", "One incident")
def get_incident(call: Call) -> drift_service.IncidentListed:
    """The incident with its watch's name, who acknowledged or resolved it, and how."""
    return drift_service.get_incident(call.session, call.org_id, call.path["incident_id"])


@route(
    "GET /api/drift/export",
    "Export the drift history",
    query=export.ExportQuery,
    responses={200: None},
    raw_response={
        "application/json": {"schema": {"type": "object"}},
        "text/csv": {"schema": {"type": "string"}},
    },
)
def export_drift(call: Call) -> Response:
    """Streams every drift event: `json` (driftgate-drift-export-v1), `csv` (one row per event,
    `changesJson` column) or `audit` (events, acknowledgement trail and preflight decisions,
    signed with HMAC-SHA256; `driftgate audit verify FILE` checks it)."""
    org_id, now, fmt, box = call.org_id, call.now, call.query.format, call.secret_box
    mimetype, extension = export.media(fmt)

    def produce(session: Session) -> Iterator[str]:
        return export.stream(session, org_id, fmt, now, box)

    body = _streamed(call.database, produce)
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="driftgate-drift.{extension}"'
    response.headers[CORRELATION_HEADER] = call.correlation_id
    return response


def _streamed(store: Database, produce: Callable[[Session], Iterator[str]]) -> Iterator[str]:
    """Run `produce` in a read session of its own that lives exactly as long as the stream
    (a client that disconnects closes the generator, and so the session)."""
    session = store.session()
    try:
        yield from produce(session)
    finally:
        session.close()
