"""A check's trace and its log line (`controller.tracing`): one `check` span with a child per
stage it ran (`fetch`, `parse`, `diff`, `record`), the watch's ids and the result on it; a
failed check's span is an error, and the check logs one line with its ids and failure class,
never the URL's credentials or a header's value."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from controller import tracing
from controller.checks.engine import run_check
from controller.logs import JsonFormatter
from controller.model.watch import WatchCreate
from controller.watches import service as watch_service
from tests.checks.conftest import Harness, serve
from tests.logrecords import Lines
from tests.traces import named, recording

CONTROLLER = "host:4242:abc"
STAGES = ["fetch", "parse", "diff", "record"]


def check(h: Harness, watch_id: str) -> list[ReadableSpan]:
    """Run one check as the controller does; the spans it made."""
    h.now += timedelta(minutes=15)
    with recording() as exporter:
        run_check(
            h.database, watch_id, box=h.box, fetcher=h.fetcher, now=h.now, controller=CONTROLLER
        )
    return list(exporter.get_finished_spans())


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[str]:
    return [
        s.name
        for s in sorted(spans, key=lambda s: s.start_time or 0)
        if s.parent is not None and s.parent.span_id == parent.context.span_id
    ]


def test_a_changed_contract_is_a_check_span_with_its_four_stages(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch()
    first = check(harness, watch_id)
    serve(harness, refunds=False)
    spans = check(harness, watch_id)
    (root,) = named(spans, "check")
    assert root.parent is None
    assert children(spans, root) == STAGES
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    assert dict(root.attributes or {}) == {
        tracing.WATCH_ID: watch_id,
        tracing.ORG_ID: harness.principal.org_id,
        tracing.WATCH_TYPE: "openapi",
        tracing.CONTROLLER_ID: CONTROLLER,
        tracing.CHECK_RESULT: "changed",
    }
    (diff,) = named(spans, "diff")
    assert (diff.attributes or {})[tracing.DIFF_CHANGES] >= 1
    assert all(s.status.status_code == StatusCode.UNSET for s in spans)
    # The first check took the baseline: the same stages, no changes.
    (baseline,) = named(first, "check")
    assert children(first, baseline) == STAGES
    assert (baseline.attributes or {})[tracing.CHECK_RESULT] == "baseline"


def test_an_unchanged_contract_is_fetched_and_recorded_only(harness: Harness) -> None:
    serve(harness)
    watch_id = harness.watch()
    check(harness, watch_id)
    spans = check(harness, watch_id)
    (root,) = named(spans, "check")
    assert children(spans, root) == ["fetch", "record"]
    assert (root.attributes or {})[tracing.CHECK_RESULT] == "unchanged"


def test_a_failed_check_is_an_error_span_and_one_log_line_without_its_secrets(
    harness: Harness,
) -> None:
    secrets = ("query-token-1", "header-value-2", "bearer-value-3")
    url = harness.server.url("/gone.json?token=query-token-1")
    headers = {"X-Api-Key": "header-value-2", "Authorization": "Bearer bearer-value-3"}
    data = WatchCreate.model_validate(
        {"name": "gone", "url": url, "watchType": "openapi", "headers": headers}
    )
    with harness.database.transaction() as session:
        watch_id = watch_service.create_watch(session, harness.principal, data, harness.box).id
    logged = Lines(JsonFormatter())
    logger = logging.getLogger("driftgate.checks")
    logger.addHandler(logged)
    try:
        spans = check(harness, watch_id)
    finally:
        logger.removeHandler(logged)
    lines = logged.lines
    (root,) = named(spans, "check")
    (fetch,) = named(spans, "fetch")
    assert (root.status.status_code, root.status.description) == (StatusCode.ERROR, "http_error")
    assert (root.attributes or {})[tracing.HTTP_STATUS] == 404
    assert (fetch.attributes or {})[tracing.HTTP_STATUS] == 404
    assert fetch.status.status_code == StatusCode.ERROR
    assert children(spans, root) == ["fetch", "record"]
    (line,) = [json.loads(line) for line in lines]
    assert line == {
        "ts": line["ts"],
        "level": "warning",
        "logger": "driftgate.checks",
        "event": "check.failed",
        "watchId": watch_id,
        "orgId": harness.principal.org_id,
        "type": "openapi",
        "failureClass": "http_error",
        "httpStatus": 404,
        "status": line["status"],
        "controller": CONTROLLER,
        "traceId": f"{root.context.trace_id:032x}",
        "spanId": f"{root.context.span_id:016x}",
    }
    assert harness.server.requests[-1][2]["X-Api-Key"] == "header-value-2"  # it was sent
    exported = json.dumps([json.loads(s.to_json()) for s in spans]) + "".join(lines)
    assert not [secret for secret in secrets if secret in exported]
