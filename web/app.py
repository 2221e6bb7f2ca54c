"""The Flask application factory: `create_app(settings)` builds the HTTP API."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from flask import Flask, Response, g, request

from controller.crypto import load_secret_box
from controller.logs import configure_logging, log
from controller.services.auth import KEY_CACHE
from controller.settings import Settings, load_settings
from controller.store.db import Database
from controller.store.models import request_id
from web import db, errors
from web.api import REGISTRY
from web.auth import authenticate
from web.ratelimit import RateLimiter
from web.routes import CORRELATION_HEADER

logger = logging.getLogger("driftgate.web")
_CORRELATION = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Default user agents of HTTP libraries; refused with code 1010 when the edge rule is on.
_DEFAULT_AGENTS = re.compile(
    r"^(python-requests|python-httpx|python-urllib|aiohttp|go-http-client|node-fetch|axios|okhttp|java/|libwww-perl)",
    re.IGNORECASE,
)


def create_app(settings: Settings | None = None, *, database: Database | None = None) -> Flask:
    """Build the app for `settings` (read from the environment when omitted)."""
    settings = settings or load_settings()
    configure_logging(settings)
    app = Flask("driftgate")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["driftgate.settings"] = settings
    # One pooled connection per request thread: a request beyond the pool would open (and
    # close) a connection of its own, and a new SQLite connection reads the schema again.
    app.extensions["driftgate.database"] = database or Database(
        settings.effective_database_url,
        pool_size=settings.threads + 2,
        synchronous_autocommit=settings.decision_synchronous_commit,
    )
    app.extensions["driftgate.secret_box"] = load_secret_box(settings, create=True)
    app.extensions["driftgate.ratelimiter"] = RateLimiter()
    KEY_CACHE.ttl = settings.api_key_cache_seconds
    app.extensions["driftgate.registry"] = REGISTRY

    db.init_app(app)
    errors.init_app(app)
    REGISTRY.install(app, authenticate)

    @app.before_request
    def start_request() -> Response | None:
        g.settings = settings
        g.started = time.perf_counter()
        incoming = request.headers.get(CORRELATION_HEADER, "")
        g.correlation_id = incoming if _CORRELATION.match(incoming) else request_id()
        agent = request.headers.get("User-Agent", "")
        if (
            settings.refuse_default_user_agents
            and not request.path.startswith("/health")
            and _DEFAULT_AGENTS.match(agent)
        ):
            return errors.envelope(
                403,
                "1010",
                "requests with a default HTTP-library User-Agent are refused; "
                "send a product-identifying User-Agent",
            )
        return None

    @app.after_request
    def finish_request(response: Response) -> Response:
        correlation_id = g.get("correlation_id") or request_id()
        response.headers[CORRELATION_HEADER] = correlation_id
        fields: dict[str, Any] = {
            "method": request.method,
            "path": request.path,
            "status": response.status_code,
            "durationMs": round(
                (time.perf_counter() - g.get("started", time.perf_counter())) * 1000, 2
            ),
            "correlationId": correlation_id,
        }
        if g.get("org_id"):
            fields["org"] = g.org_id
        source = request.headers.get("X-Service-Source")
        if source:
            fields["source"] = source[:100]
        log(logger, logging.INFO, "http.request", **fields)
        return response

    return app
