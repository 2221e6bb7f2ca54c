"""The run gate's lane: `POST /api/preflight` answered in front of Flask.

Preflight is the hot path (every agent run and CI job asks it), and Flask's per-request
machinery (request and app contexts, the URL adapter, werkzeug's request and response
objects, hooks, teardown) cost more than the gate's own work: about 600,000 of the 1.1 million
instructions of a preflight by `agentId`. This WSGI middleware answers the common request
itself, with the same pieces the Flask route uses: the registry's body model, the API key
cache, `controller.services.preflight`, the correlation id and the `http.request` log line of
`web.app`.

It answers only a request it can answer exactly as the route would, and hands everything else
to Flask untouched (the body it read is put back): another method or path, a refused default
User-Agent, credentials that are missing, malformed or not in this process' key cache (Flask
authenticates and caches the key, so the next request takes the lane), a body without a
Content-Length or over the size limit, a body the model refuses, and any error the gate
raises (an unknown agent, a store that is busy or down). An error therefore gets the route's
own envelope, and a request never has two ways to fail. Handing over after an error is safe:
the gate raises before it records a decision or records it in its last statement, so Flask's
run of the same request never records one twice.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

import orjson
from flask import Flask

from controller.crypto import hash_token
from controller.errors import Unauthorized
from controller.services import preflight as service
from controller.services.auth import KEY_CACHE, Principal
from controller.settings import Settings
from controller.store.db import Database
from web.auth import api_key_from
from web.edge import access_log, correlation_id, refused_user_agent
from web.routes import CORRELATION_HEADER, Route

PATH = "/api/preflight"
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_CORRELATION_KEY = "HTTP_" + CORRELATION_HEADER.upper().replace("-", "_")
_STATUS_LINES = {status: f"{status} {HTTPStatus(status).phrase}" for status in (200, 409)}


def _api_key(environ: dict[str, Any]) -> str | None:
    """The API key as `web.auth` reads it, or None when there is none or it is malformed
    (Flask then answers, with the route's 401)."""
    try:
        return api_key_from(
            environ.get("HTTP_AUTHORIZATION", ""), environ.get("HTTP_X_API_KEY", "")
        )
    except Unauthorized:
        return None


class PreflightLane:
    """WSGI middleware over the Flask app's `wsgi_app` (see the module's docstring)."""

    def __init__(self, app: Flask, fallback: WSGIApp) -> None:
        route = next(
            r
            for r in app.extensions["driftgate.registry"].routes
            if (r.method, r.rule) == ("POST", PATH)
        )
        if not _takes_lane(route):
            raise ValueError(f"{PATH} needs more than an API key; the lane cannot answer it")
        self.fallback = fallback
        self.model = route.body
        self.settings: Settings = app.extensions["driftgate.settings"]
        self.database: Database = app.extensions["driftgate.database"]
        self.limit: int | None = app.config.get("MAX_CONTENT_LENGTH")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != PATH or environ.get("REQUEST_METHOD") != "POST":
            return self.fallback(environ, start_response)
        started = time.perf_counter()
        principal = self._principal(environ)
        length = _length(environ)
        if principal is None or length is None or (self.limit and length > self.limit):
            return self.fallback(environ, start_response)
        raw = environ["wsgi.input"].read(length) if length else b""
        try:
            status, answer = self._answer(principal, raw, started)
        except Exception:  # noqa: BLE001 - Flask answers it, with the route's envelope
            environ["wsgi.input"] = io.BytesIO(raw)
            return self.fallback(environ, start_response)
        body = orjson.dumps(answer)
        correlation = correlation_id(environ.get(_CORRELATION_KEY, ""))
        start_response(
            _STATUS_LINES[status],
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                (CORRELATION_HEADER, correlation),
            ],
        )
        access_log(
            "POST",
            PATH,
            status,
            started,
            correlation,
            org=principal.org_id,
            source=environ.get("HTTP_X_SERVICE_SOURCE"),
        )
        return [body]

    def _principal(self, environ: dict[str, Any]) -> Principal | None:
        if refused_user_agent(self.settings, PATH, environ.get("HTTP_USER_AGENT", "")):
            return None
        key = _api_key(environ)
        return None if key is None else KEY_CACHE.get(hash_token(key))

    def _answer(
        self, principal: Principal, raw: bytes, started: float
    ) -> tuple[int, dict[str, Any]]:
        assert self.model is not None
        request = self.model.model_validate_json(raw)  # refused: Flask explains why (400)
        return service.preflight(self.database, principal, request, datetime.now(UTC), started)


def _takes_lane(route: Route) -> bool:
    return route.auth == "key" and not route.guards and route.body is service.PreflightRequest


def _length(environ: dict[str, Any]) -> int | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    return length if length >= 0 else None
