"""`controller.tracing`: on only when the standard variables ask for it, nothing when off, and
spans that carry ids and kinds but never an exception's text; the log's trace ids."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from opentelemetry.trace import INVALID_SPAN, StatusCode, get_current_span

from controller import tracing
from controller.logs import JsonFormatter, TextFormatter, log
from tests.logrecords import Lines, Records
from tests.traces import OtlpReceiver, named, recording

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        (ENDPOINT, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "true"}, False),
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "false"}, True),
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}, False),
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": ""}, True),  # unset: the default, otlp
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": "otlp, none"}, False),
    ],
)
def test_tracing_is_wanted_only_when_an_endpoint_is_set_and_nothing_turns_it_off(
    environ: dict[str, str], wanted: bool
) -> None:
    assert tracing.wanted(environ) is wanted


@pytest.mark.parametrize(
    "environ",
    [
        {**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
        {**ENDPOINT, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
        {**ENDPOINT, "OTEL_TRACES_EXPORTER": "console"},
        {**ENDPOINT, "OTEL_TRACES_EXPORTER": "otlp,console"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://collector:4317"},
    ],
)
def test_an_exporter_protocol_or_endpoint_driftgate_cannot_use_is_refused_in_one_line(
    environ: dict[str, str],
) -> None:
    records = Records()
    logger = logging.getLogger("driftgate.tracing")
    logger.addHandler(records)
    try:
        assert tracing.setup("test", environ) is False
    finally:
        logger.removeHandler(records)
    assert not tracing.enabled()
    assert [r.getMessage() for r in records.records] == ["tracing.unsupported"]


def test_off_a_span_is_the_shared_invalid_span_and_attaches_nothing() -> None:
    assert not tracing.enabled()
    with tracing.span("check", {tracing.WATCH_ID: "w_1"}) as span:
        assert span is INVALID_SPAN
        assert not get_current_span().get_span_context().is_valid
        tracing.annotate(span, {tracing.CHECK_RESULT: "error"})
        tracing.failed(span, "timeout")
        assert tracing.current_ids() is None
    assert tracing.incoming({"traceparent": f"00-{'a' * 32}-{'b' * 16}-01"}) is None


def test_spans_nest_and_leave_out_attributes_without_a_value() -> None:
    with recording() as exporter:
        with tracing.span("check", {tracing.WATCH_ID: "w_1", tracing.HTTP_STATUS: None}) as outer:
            with tracing.span("fetch"):
                pass
            tracing.annotate(outer, {tracing.CHECK_RESULT: "changed", tracing.ORG_ID: None})
    (check,) = named(exporter.get_finished_spans(), "check")
    (fetch,) = named(exporter.get_finished_spans(), "fetch")
    assert fetch.parent is not None and fetch.parent.span_id == check.context.span_id
    assert fetch.context.trace_id == check.context.trace_id
    assert dict(check.attributes or {}) == {
        tracing.WATCH_ID: "w_1",
        tracing.CHECK_RESULT: "changed",
    }
    assert check.status.status_code == StatusCode.UNSET


def test_a_span_ended_by_an_exception_records_its_type_and_never_its_text() -> None:
    secret = "Bearer s3cr3t-token"
    with recording() as exporter:
        with pytest.raises(ValueError), tracing.span("parse"):
            raise ValueError(f"header Authorization: {secret}")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "ValueError"
    assert dict(span.attributes or {}) == {tracing.ERROR_TYPE: "ValueError"}
    assert span.events == ()  # no exception event: its message and traceback stay out
    assert secret not in repr(span.to_json())


def test_a_failed_span_names_its_kind() -> None:
    with recording() as exporter:
        with tracing.span("fetch") as span:
            tracing.failed(span, "http_error")
    (ended,) = exporter.get_finished_spans()
    assert (ended.status.status_code, ended.status.description) == (StatusCode.ERROR, "http_error")
    assert (ended.attributes or {})[tracing.ERROR_TYPE] == "http_error"


def test_a_log_line_in_a_span_carries_its_trace_and_span_ids() -> None:
    as_json, as_text = Lines(JsonFormatter()), Lines(TextFormatter())
    logger = logging.getLogger("driftgate.test-tracing")
    logger.addHandler(as_json)
    logger.addHandler(as_text)
    logger.setLevel(logging.INFO)
    try:
        log(logger, logging.INFO, "outside", watchId="w_1")
        with recording() as exporter:
            with tracing.span("check"):
                log(logger, logging.INFO, "inside", watchId="w_1")
            log(logger, logging.INFO, "after", watchId="w_1")
    finally:
        logger.removeHandler(as_json)
        logger.removeHandler(as_text)
    (span,) = exporter.get_finished_spans()
    trace_id, span_id = f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"
    outside, inside, after = (json.loads(line) for line in as_json.lines)
    assert "traceId" not in outside and "spanId" not in outside
    assert (inside["traceId"], inside["spanId"], inside["watchId"]) == (trace_id, span_id, "w_1")
    assert "traceId" not in after
    assert as_text.lines[1].endswith(f"watchId=w_1 traceId={trace_id} spanId={span_id}")
    assert "traceId" not in as_text.lines[0] + as_text.lines[2]


def test_an_incoming_traceparent_is_the_parent_of_the_span_it_starts() -> None:
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with recording() as exporter:
        parent = tracing.incoming({"traceparent": f"00-{trace_id}-{parent_id}-01"})
        assert parent is not None
        with tracing.span("GET", server=True, parent=parent):
            pass
        assert tracing.incoming({"traceparent": "00-not-a-trace-01"}) is None
        assert tracing.incoming({}) is None
    (span,) = exporter.get_finished_spans()
    assert f"{span.context.trace_id:032x}" == trace_id
    assert span.parent is not None and f"{span.parent.span_id:016x}" == parent_id


SETUP = """
import sys
from controller import tracing
assert tracing.setup("probe")
with tracing.span("probe.span", {"driftgate.watch.id": "w_probe"}):
    pass
tracing.shutdown()
"""


@pytest.mark.slow
def test_setup_exports_over_otlp_http_with_the_standard_variables() -> None:
    """A process that sets up tracing from the standard variables sends its spans to the
    OTLP/HTTP endpoint, with their resource (the service's name from `OTEL_SERVICE_NAME`,
    attributes from `OTEL_RESOURCE_ATTRIBUTES`) and the exporter's headers."""
    receiver = OtlpReceiver()
    try:
        env = {
            "PATH": "/usr/bin:/bin",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-collector-token=probe",
            "OTEL_SERVICE_NAME": "driftgate-probe",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=test",
        }
        subprocess.run([sys.executable, "-c", SETUP], env=env, check=True, timeout=60)
        (span,) = receiver.wait_for(lambda spans: named(spans, "probe.span"))  # type: ignore[arg-type]
    finally:
        receiver.close()
    assert span.attributes == {tracing.WATCH_ID: "w_probe"}
    assert span.resource["service.name"] == "driftgate-probe"
    assert span.resource["deployment.environment.name"] == "test"
    assert span.resource["driftgate.process"] == "probe"
    assert receiver.headers[0]["x-collector-token"] == "probe"
