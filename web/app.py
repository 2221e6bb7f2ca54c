"""The Flask application factory: `create_app(settings)` builds the HTTP API."""

from __future__ import annotations

import time

from flask import Flask, Response, g, request
from werkzeug.middleware.proxy_fix import ProxyFix

from controller import tracing
from controller.crypto import load_secret_box
from controller.logs import configure_logging
from controller.orgs.auth_service import KEY_CACHE
from controller.settings import Settings, load_settings
from controller.store.db import Database
from controller.store.models import request_id
from web import console, db, errors
from web.api import REGISTRY
from web.auth import authenticate
from web.edge import (
    ROUTE_ENVIRON,
    access_log,
    correlation_id,
    refused_user_agent,
    route_template,
    traced,
)
from web.lane import Lane
from web.metrics import MetricsEndpoint
from web.ratelimit import RateLimiter
from web.routes import CORRELATION_HEADER, Resources


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
    # Every wait on the store is bounded (`docs/operations.md`, "When the database is down").
    app.extensions["driftgate.database"] = database or Database(
        settings.effective_database_url,
        pool_size=settings.threads + 2,
        synchronous_autocommit=settings.decision_synchronous_commit,
        connect_timeout=settings.database_connect_timeout_seconds,
        statement_timeout=settings.database_statement_timeout_seconds,
    )
    app.extensions["driftgate.secret_box"] = load_secret_box(settings, create=True)
    app.extensions["driftgate.ratelimiter"] = RateLimiter()
    KEY_CACHE.ttl = settings.api_key_cache_seconds
    app.extensions["driftgate.registry"] = REGISTRY
    app.extensions["driftgate.resources"] = Resources(
        settings,
        app.extensions["driftgate.database"],
        app.extensions["driftgate.secret_box"],
        app.extensions["driftgate.ratelimiter"],
    )

    db.init_app(app)
    errors.init_app(app)
    REGISTRY.install(app, authenticate)
    console.init_app(app)

    @app.before_request
    def start_request() -> Response | None:
        g.settings = settings
        g.started = time.perf_counter()
        g.correlation_id = correlation_id(request.headers.get(CORRELATION_HEADER, ""))
        if refused_user_agent(settings, request.path, request.headers.get("User-Agent", "")):
            return errors.envelope(
                403,
                "1010",
                "requests with a default HTTP-library User-Agent are refused; "
                "send a product-identifying User-Agent",
            )
        return None

    @app.after_request
    def finish_request(response: Response) -> Response:
        correlation = g.get("correlation_id") or request_id()
        response.headers[CORRELATION_HEADER] = correlation
        if request.url_rule is not None:
            request.environ[ROUTE_ENVIRON] = route_template(request.url_rule.rule)
        access_log(
            request.method,
            request.path,
            response.status_code,
            g.get("started", time.perf_counter()),
            correlation,
            org=g.get("org_id"),
            source=request.headers.get("X-Service-Source"),
        )
        return response

    # Routes that opt in (the run gate's hot path) skip Flask's per-request machinery
    # (`web.lane`).
    # `/metrics` (Prometheus) is served ahead of Flask, behind the lane's deadline.
    endpoint = MetricsEndpoint(settings, app.extensions["driftgate.database"], app.wsgi_app)
    app.wsgi_app = Lane(app, endpoint)  # type: ignore[method-assign]
    if settings.trusted_proxy_hops:
        # Outermost, so the lane and Flask alike see the client's address and scheme. Each
        # trusted proxy appends what it saw; the value `hops` from the right is the one the
        # outermost trusted proxy saw, and anything a client put before it is ignored.
        hops = settings.trusted_proxy_hops
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops, x_port=hops
        )
    if tracing.enabled():
        # A span per request, around everything (`web.edge.traced`); none when tracing is off.
        app.wsgi_app = traced(app.wsgi_app)  # type: ignore[method-assign, assignment]
    return app
