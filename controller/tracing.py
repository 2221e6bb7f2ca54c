"""Traces: OpenTelemetry spans for requests, checks, deliveries and reconciles, exported over
OTLP/HTTP when the standard variables ask for it, and nothing at all when they do not.

Tracing is on in a process that called `setup` with `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set. Everything else is the SDK's own reading of the
standard variables: the service's name and resource (`OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`), the exporter's headers, timeout, compression and certificates
(`OTEL_EXPORTER_OTLP_*`), the sampler (`OTEL_TRACES_SAMPLER`, `_ARG`) and the batching
(`OTEL_BSP_*`). `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keep it off; another
exporter, a protocol other than `http/protobuf` (only the OTLP/HTTP exporter is shipped) or an
endpoint that is not an http(s) URL is refused with a log line, and tracing stays off.

Off, `span` hands back one shared context manager around the API's invalid span: no span is
made, no context is attached, and every call a site makes on the span is a no-op. A process
that never makes a span (a CLI command) does not even import OpenTelemetry.

On, a span never carries an exception's message or traceback (either may quote a URL's
credentials or a header value): a span that ends in an exception records only its type
(`error.type`), and sites that fail on purpose say why with `failed(span, kind)`.

Each process sets up its own provider: gunicorn's workers after the fork (the batch processor's
thread does not survive one), the controller at its start. `shutdown` flushes what is queued.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import cache
from typing import TYPE_CHECKING, Any

import controller

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span as Span  # what `span` yields, for annotations
    from opentelemetry.trace import Tracer

logger = logging.getLogger("driftgate.tracing")

# Attribute names: the semantic conventions' where they have one, `driftgate.*` for the rest.
WATCH_ID = "driftgate.watch.id"
ORG_ID = "driftgate.org.id"
WATCH_TYPE = "driftgate.watch.type"
CONTROLLER_ID = "driftgate.controller.id"
CHECK_RESULT = "driftgate.check.result"
DIFF_CHANGES = "driftgate.diff.changes"
SOURCE_ID = "driftgate.source.id"
REVISION = "driftgate.source.revision"
RECONCILE_RESULT = "driftgate.reconcile.result"
MESSAGE_ID = "driftgate.message.id"
EVENT_TYPE = "driftgate.event.type"
CHANNEL = "driftgate.delivery.channel"
DESTINATION = "driftgate.delivery.destination"
ATTEMPT = "driftgate.delivery.attempt"
DELIVERY_RESULT = "driftgate.delivery.result"
OAUTH_GRANT = "driftgate.oauth.grant"
ERROR_TYPE = "error.type"
HTTP_METHOD = "http.request.method"
HTTP_ROUTE = "http.route"
HTTP_STATUS = "http.response.status_code"
URL_PATH = "url.path"
URL_SCHEME = "url.scheme"

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
SERVICE_NAME = "driftgate"

_tracer: Tracer | None = None
_provider: Any = None  # the SDK's TracerProvider of this process, when tracing is on


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the standard variables ask for traces: an OTLP endpoint is set, and neither
    `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` says otherwise."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if "none" in _exporters(env):
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def _exporters(env: Mapping[str, str]) -> list[str]:
    """`OTEL_TRACES_EXPORTER`'s names (a comma-separated list; `otlp` when unset)."""
    listed = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",")]
    return [n for n in listed if n] or ["otlp"]


def setup(process: str, environ: Mapping[str, str] | None = None) -> bool:
    """Start exporting this process's spans when the variables ask for it (see the module's
    docstring); True when tracing is on. `process` (`web`, `controller`) names the process
    in the resource (`driftgate.process`). Safe to call again: a second call does nothing."""
    env = os.environ if environ is None else environ
    if _provider is not None or not wanted(env):
        return _provider is not None
    exporters = _exporters(env)
    protocol = next((env[n].strip() for n in PROTOCOL_VARIABLES if env.get(n, "").strip()), "")
    endpoint = _endpoint(env)
    if exporters != ["otlp"] or protocol not in ("", "http/protobuf") or endpoint is None:
        logger.warning(
            "tracing.unsupported",
            extra={
                "fields": {
                    "exporter": ",".join(exporters),
                    "protocol": protocol,
                    "endpoint": endpoint,
                    "supported": "OTEL_TRACES_EXPORTER=otlp, http/protobuf, an http(s) endpoint",
                }
            },
        )
        return False
    # The SDK and the exporter load only in a process that traces.
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    defaults = Resource.create(
        {
            "service.name": SERVICE_NAME,
            "service.version": controller.__version__,
            "driftgate.process": process,
        }
    )
    # What the variables say wins over the defaults (`Resource.create` lets its own
    # arguments win, so the variables are merged again on top).
    provider = TracerProvider(resource=defaults.merge(OTELResourceDetector().detect()))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    # The global provider too, so that libraries that trace (the MCP client) join our traces.
    trace.set_tracer_provider(provider)
    install(provider)
    logger.info(
        "tracing.started",
        extra={"fields": {"process": process, "endpoint": endpoint}},
    )
    return True


def install(provider: Any) -> None:
    """Trace with `provider` (an SDK `TracerProvider`): what `setup` does once it has built
    one; tests install one with an in-memory exporter. None turns tracing off again."""
    global _provider, _tracer
    _provider = provider
    _tracer = None if provider is None else provider.get_tracer("driftgate", controller.__version__)


def shutdown() -> None:
    """Export what is queued and stop (the process is ending)."""
    provider = _provider
    install(None)
    if provider is not None:
        provider.shutdown()


def enabled() -> bool:
    return _tracer is not None


def span(
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    server: bool = False,
    parent: Context | None = None,
) -> AbstractContextManager[Span]:
    """A span named `name`, current while the block runs, a child of the current one (or of
    `parent`); `server` for a request's. Attributes whose value is None are left out. Off,
    nothing at all."""
    tracer = _tracer
    if tracer is None:
        return _off()
    return _recording(tracer, name, attributes, server, parent)


@cache
def _off() -> AbstractContextManager[Span]:
    from opentelemetry.trace import INVALID_SPAN

    return nullcontext(INVALID_SPAN)


def annotate(target: Span, attributes: Mapping[str, Any]) -> None:
    """Set `attributes` (those not None) on `target`; nothing when it does not record."""
    if target.is_recording():
        target.set_attributes({k: v for k, v in attributes.items() if v is not None})


def failed(target: Span, kind: str) -> None:
    """Mark `target` as failed for the reason `kind` (a failure class, never a message)."""
    if target.is_recording():
        _error(target, kind)


def _error(target: Span, kind: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    target.set_attribute(ERROR_TYPE, kind)
    target.set_status(Status(StatusCode.ERROR, kind))


def incoming(headers: Mapping[str, str]) -> Context | None:
    """The trace context a caller sent (W3C `traceparent`, or what `OTEL_PROPAGATORS` names),
    with `headers` keyed in lower case; None when it sent none (or tracing is off)."""
    if _tracer is None or not headers:
        return None
    from opentelemetry import propagate, trace

    context = propagate.extract(headers)
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def current_ids() -> tuple[str, str] | None:
    """The current trace and span ids (hex, as the W3C header writes them), for the log."""
    if _tracer is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)


@contextmanager
def _recording(
    tracer: Tracer,
    name: str,
    attributes: Mapping[str, Any] | None,
    server: bool,
    parent: Context | None,
) -> Iterator[Span]:
    from opentelemetry.trace import SpanKind

    values = {k: v for k, v in (attributes or {}).items() if v is not None}
    with tracer.start_as_current_span(
        name,
        context=parent,
        kind=SpanKind.SERVER if server else SpanKind.INTERNAL,
        attributes=values,
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            if current.is_recording():
                _error(current, type(exc).__qualname__)
            raise


def _endpoint(env: Mapping[str, str]) -> str | None:
    """Where spans go, without userinfo or query (for the log line that says so); None for
    what is not an http(s) URL."""
    from urllib.parse import urlsplit

    raw = next(env[n].strip() for n in ENDPOINT_VARIABLES if env.get(n, "").strip())
    parts = urlsplit(raw)
    host = parts.netloc.rpartition("@")[2]
    if parts.scheme not in ("http", "https") or not host:
        return None
    return f"{parts.scheme}://{host}{parts.path}"
