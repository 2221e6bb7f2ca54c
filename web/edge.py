"""What every request passes on its way in and out, for the Flask app's hooks and the run
gate's lane (`web.fastlane`) alike: the correlation id, the refusal of default HTTP-library
User-Agents, the `http.request` log line, and (tracing on) the request's span."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from controller import tracing
from controller.logs import log
from controller.settings import Settings
from controller.store.models import request_id

logger = logging.getLogger("driftgate.web")
# The WSGI environ key of the time (monotonic) a request arrived whole, set by the server front
# (`web.front`); a request without it (another WSGI server, the test client) starts its
# deadline when the app first sees it.
ARRIVED_ENVIRON = "driftgate.arrived"
# The WSGI environ key of the route template that answered (`/api/watches/<watch_id>`), set by
# the lane and the Flask app for the request's span (`traced`).
ROUTE_ENVIRON = "driftgate.route"
_CONVERTER = re.compile(r"<[^<>]*:(\w+)>")
_CORRELATION = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Default user agents of HTTP libraries; refused with code 1010 when the edge rule is on.
_DEFAULT_AGENTS = re.compile(
    r"^(python-requests|python-httpx|python-urllib|aiohttp|go-http-client|node-fetch|axios|okhttp|java/|libwww-perl)",
    re.IGNORECASE,
)


def correlation_id(incoming: str) -> str:
    """The caller's correlation id when it is well formed, else a new one."""
    return incoming if _CORRELATION.match(incoming) else request_id()


def refused_user_agent(settings: Settings, path: str, agent: str) -> bool:
    """True when the edge rule refuses this User-Agent here (never on `/health`)."""
    return (
        settings.refuse_default_user_agents
        and not path.startswith("/health")
        and _DEFAULT_AGENTS.match(agent) is not None
    )


def route_template(rule: str) -> str:
    """A URL rule as its route is declared, without converters (`<except(...):watch_id>`
    is `<watch_id>`)."""
    return _CONVERTER.sub(r"<\1>", rule)


def access_log(
    method: str,
    path: str,
    status: int,
    started: float,
    correlation: str,
    *,
    org: str | None,
    source: str | None,
) -> None:
    """The `http.request` line of one answered request."""
    if not logger.isEnabledFor(logging.INFO):
        return
    fields: dict[str, Any] = {
        "method": method,
        "path": path,
        "status": status,
        "durationMs": round((time.perf_counter() - started) * 1000, 2),
        "correlationId": correlation,
    }
    if org:
        fields["org"] = org
    if source:
        fields["source"] = source[:100]
    log(logger, logging.INFO, "http.request", **fields)


WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def traced(app: WSGIApp) -> WSGIApp:
    """`app` with a server span around each request (`controller.tracing`): a child of the
    caller's W3C `traceparent` when it sent one, named by its method and route template,
    with its status (a 5xx is an error). Only the path is recorded, never the query string
    or a header's value."""

    def traced_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "")
        carrier = {
            name: environ[key]
            for name, key in (
                ("traceparent", "HTTP_TRACEPARENT"),
                ("tracestate", "HTTP_TRACESTATE"),
            )
            if key in environ
        }
        attributes = {
            tracing.HTTP_METHOD: method,
            tracing.URL_PATH: environ.get("PATH_INFO", ""),
            tracing.URL_SCHEME: environ.get("wsgi.url_scheme"),
        }
        with tracing.span(
            method, attributes, server=True, parent=tracing.incoming(carrier)
        ) as span:

            def answering(status: str, headers: Any, exc_info: Any = None) -> Any:
                code = int(status.split(" ", 1)[0])
                tracing.annotate(span, {tracing.HTTP_STATUS: code})
                if code >= 500:
                    tracing.failed(span, str(code))
                return start_response(status, headers, exc_info)

            answer = app(environ, answering)
            route = environ.get(ROUTE_ENVIRON)
            if route:
                span.update_name(f"{method} {route}")
                tracing.annotate(span, {tracing.HTTP_ROUTE: route})
            return answer

    return traced_app
