"""Each request is a server span (`web.edge.traced`, when tracing is on): named by its method
and route template, with its status, a child of the caller's W3C `traceparent`; the same on
the lane and through Flask; the request's log line carries its trace id. Off, the app is not
wrapped at all."""

from __future__ import annotations

import json
import logging

from opentelemetry.trace import SpanKind, StatusCode

from controller import tracing
from controller.logs import JsonFormatter
from controller.orgs.auth_service import KEY_CACHE
from controller.settings import Settings
from controller.store.db import Database
from tests.conftest import OrgKey
from tests.factories import make_watch
from tests.logrecords import Lines
from tests.traces import recording
from web.app import create_app
from web.lane import Lane

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{CALLER}-01"


def test_requests_are_server_spans_named_by_their_route_under_the_callers_trace(
    live_settings: Settings, database: Database, acme: OrgKey
) -> None:
    KEY_CACHE.clear()
    logged = Lines(JsonFormatter())
    logger = logging.getLogger("driftgate.web")
    with recording() as exporter:
        client = create_app(live_settings, database=database).test_client()
        watch_id = make_watch(client, acme, "stripe")
        exporter.clear()
        logger.addHandler(logged)  # after create_app, which configures the loggers
        try:
            traced = {**acme.headers, "traceparent": TRACEPARENT}
            read = client.get(f"/api/watches/{watch_id}?secret=q-token-9", headers=traced)
            missing = client.get("/api/nowhere", headers=acme.headers)
            by_flask = client.post("/api/preflight", json={"watchIds": []}, headers=traced)
            by_lane = client.post("/api/preflight", json={"watchIds": []}, headers=traced)
        finally:
            logger.removeHandler(logged)
    assert [r.status_code for r in (read, missing, by_flask, by_lane)] == [200, 404, 200, 200]
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [
        "GET /api/watches/<watch_id>",
        "GET",
        "POST /api/preflight",
        "POST /api/preflight",
    ]
    first, unrouted, flask_span, lane_span = spans
    assert first.kind == SpanKind.SERVER
    assert f"{first.context.trace_id:032x}" == TRACE
    assert first.parent is not None and f"{first.parent.span_id:016x}" == CALLER
    assert dict(first.attributes or {}) == {
        tracing.HTTP_METHOD: "GET",
        tracing.URL_PATH: f"/api/watches/{watch_id}",
        tracing.URL_SCHEME: "http",
        tracing.HTTP_ROUTE: "/api/watches/<watch_id>",
        tracing.HTTP_STATUS: 200,
    }
    assert unrouted.parent is None  # no traceparent: a trace of its own
    assert (unrouted.attributes or {})[tracing.HTTP_STATUS] == 404
    assert unrouted.status.status_code == StatusCode.UNSET  # a 4xx is the caller's
    for span in (flask_span, lane_span):
        assert (span.attributes or {})[tracing.HTTP_ROUTE] == "/api/preflight"
        assert f"{span.context.trace_id:032x}" == TRACE
    lines = [json.loads(line) for line in logged.lines]
    assert [line["event"] for line in lines] == ["http.request"] * 4
    assert lines[0]["traceId"] == TRACE and lines[0]["spanId"] == f"{first.context.span_id:016x}"
    assert "q-token-9" not in json.dumps([json.loads(s.to_json()) for s in spans])


def test_off_the_app_is_not_wrapped(live_settings: Settings, database: Database) -> None:
    assert not tracing.enabled()
    app = create_app(live_settings, database=database)
    assert isinstance(app.wsgi_app, Lane)
