"""Traces in tests: spans recorded in memory by the SDK (`recording`), and a real OTLP/HTTP
receiver on loopback that decodes what a driftgate process exports (`OtlpReceiver`)."""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from controller import tracing
from tests.servers import Loopback, QuietHandler


@contextmanager
def recording() -> Iterator[InMemorySpanExporter]:
    """Trace into memory while the block runs (each span kept as it ends), then turn tracing
    off again."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.install(None)
        provider.shutdown()


def named(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


@dataclass
class Received:
    """One span as an OTLP receiver decoded it: ids in hex (the parent's empty for a root)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int  # the protobuf enum: 1 internal, 2 server, 3 client
    status: int  # 0 unset, 1 ok, 2 error
    status_message: str
    attributes: dict[str, Any]
    resource: dict[str, Any] = field(default_factory=dict)


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


def decode(body: bytes) -> list[Received]:
    """The spans of one OTLP/HTTP protobuf export request."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    Received(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        status=span.status.code,
                        status_message=span.status.message,
                        attributes=_attributes(span.attributes),
                        resource=resource,
                    )
                )
    return spans


class OtlpReceiver:
    """An OTLP/HTTP collector on 127.0.0.1: accepts `POST /v1/traces` (protobuf, plain or
    gzip/deflate), decodes the spans and keeps them; anything else is 404."""

    def __init__(self) -> None:
        self.spans: list[Received] = []
        self.requests = 0
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/traces":
                    self.answer(404, b"")
                    return
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                spans = decode(body)
                with receiver.arrived:
                    receiver.requests += 1
                    receiver.headers.append(dict(self.headers))
                    receiver.spans.extend(spans)
                    receiver.arrived.notify_all()
                answer = ExportTraceServiceResponse().SerializeToString()
                self.answer(200, answer, content_type="application/x-protobuf")

        self._loopback = Loopback(Handler).start()
        self.endpoint = self._loopback.url("")

    def wait_for(self, found: Any, timeout: float = 60.0) -> Any:
        """Wait until `found(spans)` returns something true (spans arrive in batches); return
        it. Fails with the names received after `timeout` seconds."""
        with self.arrived:
            result = found(list(self.spans))
            if not result:
                self.arrived.wait_for(lambda: found(list(self.spans)), timeout)
                result = found(list(self.spans))
            assert result, sorted({span.name for span in self.spans})
            return result

    def close(self) -> None:
        self._loopback.stop()
