"""The lane: routes that opt in (`lane=True` in the route registry) are served in front of
Flask's per-request machinery, by the same handler.

A hot route such as `POST /api/preflight` (every agent run and CI job asks it) costs less in
its own work than Flask's per-request machinery does (request and app contexts, the URL
adapter, werkzeug's request and response objects, hooks, teardown): about 600,000 of the 1.1
million instructions of a preflight by `agentId`. This WSGI middleware runs what a laned
route needs and nothing else, with the pieces the Flask path uses: the route's body model
read by `web.body`, the API key cache, a `Call` built the same way, the route's handler, the
same `Reply` rendering, the same error envelope (`web.errors.error_answer`), the correlation
id and the `http.request` log line of `web.edge`. A header, a limit or metering added to the
handler therefore applies on both paths.

Before the handler runs, the lane hands to Flask, untouched (the body it read is put back),
any request it would not answer exactly as Flask would (before reading the body): a refused
default User-Agent,
credentials that are missing, malformed or not in this process's key cache (Flask
authenticates and caches the key, so the next request takes the lane; a trial session, on a
route that takes one, always goes to Flask), a body without a Content-Length or over the size
limit, the server's or the route's own (Flask's 413). Once the handler runs, the lane answers,
errors included.

Being the outermost layer of the app, the lane also starts every request's deadline
(`request_deadline_seconds`, from its arrival: `web.edge.ARRIVED_ENVIRON`), within which every
wait on the store ends (`controller.store.outage.bounded_by`); a request that waited its whole
deadline for a thread is answered 503 `server_busy` with `Retry-After` at once, touching
nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from flask import Flask
from pydantic import BaseModel
from sqlalchemy.orm import Session
from werkzeug.datastructures import EnvironHeaders
from werkzeug.wsgi import get_current_url

from controller.crypto import hash_token
from controller.errors import Unauthorized
from controller.model.principal import Principal
from controller.orgs.auth_service import KEY_CACHE
from controller.settings import Settings
from controller.store.db import Database
from web.auth import api_key_from
from web.body import parse_body
from web.edge import (
    ARRIVED_ENVIRON,
    ROUTE_ENVIRON,
    access_log,
    correlation_id,
    refused_user_agent,
)
from web.errors import error_answer
from web.routes import CORRELATION_HEADER, Call, Reply, Resources, Route, as_reply

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_CORRELATION_KEY = "HTTP_" + CORRELATION_HEADER.upper().replace("-", "_")
_STATUS_LINES: dict[int, str] = {}
RETRY_AFTER_SECONDS = 5


def _status_line(status: int) -> str:
    line = _STATUS_LINES.get(status)
    if line is None:
        line = _STATUS_LINES[status] = f"{status} {HTTPStatus(status).phrase}"
    return line


def _api_key(environ: dict[str, Any]) -> str | None:
    """The API key as `web.auth` reads it, or None when there is none or it is malformed
    (Flask then answers, with the route's 401)."""
    try:
        return api_key_from(
            environ.get("HTTP_AUTHORIZATION", ""), environ.get("HTTP_X_API_KEY", "")
        )
    except Unauthorized:
        return None


class _Session:
    """The handler's database session, opened on first use (as `web.db` does for Flask)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.session: Session | None = None

    def __call__(self) -> Session:
        if self.session is None:
            self.session = self.database.session(writes=True)
        return self.session


class Lane:
    """WSGI middleware over the Flask app's `wsgi_app` (see the module's docstring)."""

    def __init__(self, app: Flask, fallback: WSGIApp) -> None:
        self.fallback = fallback
        self.routes: dict[tuple[str, str], Route] = {
            (route.method, route.rule): route
            for route in app.extensions["driftgate.registry"].routes
            if route.lane
        }
        self.settings: Settings = app.extensions["driftgate.settings"]
        self.database: Database = app.extensions["driftgate.database"]
        self.resources: Resources = app.extensions["driftgate.resources"]
        self.limit: int | None = app.config.get("MAX_CONTENT_LENGTH")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        budget = self.settings.request_deadline_seconds
        arrived = environ.get(ARRIVED_ENVIRON)
        now = time.monotonic()
        deadline = (now if arrived is None else arrived) + budget
        if deadline <= now:
            return self._too_late(environ, start_response, budget)
        # Half the threads at most wait for SQLite's write lock: the others stay for readers.
        writers = max(1, self.settings.threads // 2)
        with self.database.deadline(deadline, budget, writers=writers):
            return self._dispatch(environ, start_response)

    def _too_late(
        self, environ: dict[str, Any], start_response: Callable[..., Any], budget: float
    ) -> Iterable[bytes]:
        """503 for a request that waited its whole deadline for a thread (nothing is read)."""
        started = time.perf_counter()
        correlation = correlation_id(environ.get(_CORRELATION_KEY, ""))
        body = json.dumps(
            {
                "error": "server_busy",
                "message": f"this request waited its whole deadline ({budget:g} s) for a "
                "worker thread, every one busy (most likely waiting on the database); "
                "retry shortly",
            }
        ).encode()
        start_response(
            _status_line(503),
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                ("Retry-After", str(RETRY_AFTER_SECONDS)),
                (CORRELATION_HEADER, correlation),
            ],
        )
        method, path = environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")
        access_log(method, path, 503, started, correlation, org=None, source=None)
        return [body]

    def _dispatch(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        route = self.routes.get((environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")))
        if route is None:
            return self.fallback(environ, start_response)
        started = time.perf_counter()
        principal = self._principal(environ, route.rule)
        length = _length(environ)
        limit = (
            min(x for x in (self.limit, route.max_body) if x)
            if (self.limit or route.max_body)
            else None
        )
        if principal is None or length is None or (limit and length > limit):
            return self.fallback(environ, start_response)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ[ROUTE_ENVIRON] = route.rule
        correlation = correlation_id(environ.get(_CORRELATION_KEY, ""))
        status, headers, body = self._serve(route, environ, principal, raw, started, correlation)
        response_headers = [("Content-Type", "application/json")] if body is not None else []
        response_headers.append(("Content-Length", str(len(body or b""))))
        response_headers.extend(headers.items())
        response_headers.append((CORRELATION_HEADER, correlation))
        start_response(_status_line(status), response_headers)
        access_log(
            route.method,
            route.rule,
            status,
            started,
            correlation,
            org=principal.org_id,
            source=environ.get("HTTP_X_SERVICE_SOURCE"),
        )
        return [body or b""]

    def _serve(
        self,
        route: Route,
        environ: dict[str, Any],
        principal: Principal,
        raw: bytes,
        started: float,
        correlation: str,
    ) -> tuple[int, dict[str, str], bytes | None]:
        """Run the route's handler as the Flask view does; an error gets the same envelope."""
        session = _Session(self.database)
        try:
            call = Call(
                resources=self.resources,
                principal=principal,
                trial=None,
                body=parse_body(route.body, raw) if route.body is not None else None,
                query=None,
                path={},
                now=datetime.now(UTC),
                started=started,
                correlation_id=correlation,
                client_ip=environ.get("REMOTE_ADDR") or "unknown",
                headers=EnvironHeaders(environ),
                open_session=session,
                read_body=lambda: raw,
                host_url=get_current_url(environ, host_only=True),
            )
            result = route.handler(call)
            if not isinstance(result, Reply | BaseModel):
                raise TypeError(f"{route.operation_id}: a laned handler returns a model or Reply")
            if session.session is not None:
                session.session.commit()
            reply = as_reply(route, result)
            return reply.status, reply.headers, reply.encoded()
        except Exception as exc:  # noqa: BLE001 - answered with the route's envelope
            return error_answer(
                exc,
                method=route.method,
                path=route.rule,
                correlation=correlation,
                database=self.database,
            )
        finally:
            if session.session is not None:
                session.session.close()  # rolls back anything the handler did not commit

    def _principal(self, environ: dict[str, Any], path: str) -> Principal | None:
        if refused_user_agent(self.settings, path, environ.get("HTTP_USER_AGENT", "")):
            return None
        key = _api_key(environ)
        return None if key is None else KEY_CACHE.get(hash_token(key))


def _length(environ: dict[str, Any]) -> int | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    return length if length >= 0 else None
