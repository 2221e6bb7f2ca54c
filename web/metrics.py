"""`GET /metrics` on the serving port: the Prometheus exposition of every process of this host's
`driftgate serve` or `up` (`controller.monitoring.service`), ahead of Flask.

A WSGI middleware rather than a route: it is for Prometheus, not a part of the API (it is not
in `/openapi.json`, takes no API key, and answers the exposition format, not JSON), and it
needs none of Flask's per-request machinery. Behind the lane, so a scrape has the request
deadline every wait on the store has. Each scrape is logged as any request is (`http.request`);
the token never is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from controller.monitoring.service import WSGIApp, configure, metrics_app
from controller.settings import Settings
from controller.store.db import Database
from web.edge import access_log, correlation_id

PATH = "/metrics"


class MetricsEndpoint:
    """`/metrics` here, everything else to `app`."""

    def __init__(self, settings: Settings, database: Database, app: WSGIApp) -> None:
        self.app = app
        configure(settings)  # this worker's instruments, with the org label or not
        self.metrics = metrics_app(settings, database)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != PATH:
            return self.app(environ, start_response)
        started = time.perf_counter()
        answered: list[int] = []

        def recording(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            answered.append(int(status.split(" ", 1)[0]))
            return start_response(status, headers, *rest)

        body: Iterable[bytes] = self.metrics(environ, recording)
        access_log(
            environ.get("REQUEST_METHOD", ""),
            PATH,
            answered[0] if answered else 500,
            started,
            correlation_id(environ.get("HTTP_X_SERVICE_CORRELATION_ID", "")),
            org=None,
            source=environ.get("HTTP_X_SERVICE_SOURCE"),
        )
        return body
