"""Turns every error into the JSON envelope `{error, message, details}`; never HTML or a trace.

An error that says the store cannot answer (down, frozen, past a timeout, locked: see
`controller.store.outage`) is 503 `store_unavailable` with `Retry-After`, logged once per
outage by the store rather than once per request; the console gets a readable page instead.
"""

from __future__ import annotations

import json
import logging

from flask import Flask, Response, current_app, g, request
from werkzeug.exceptions import HTTPException

from controller.errors import DriftgateError, RequestError, StoreUnavailable, TemporaryError
from controller.logs import log
from controller.store.db import Database

logger = logging.getLogger("driftgate.web")

HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def envelope(status: int, error: str, message: str, details: object = None) -> Response:
    body: dict[str, object] = {"error": error, "message": message}
    if details is not None:
        body["details"] = details
    return Response(json.dumps(body), status=status, mimetype="application/json")


def error_answer(
    exc: Exception,
    *,
    method: str,
    path: str,
    correlation: str | None,
    database: Database | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """The status, extra headers and envelope that answer an error a handler raised, logged
    as it must be: the one rendering for the Flask app and the lane (`web.lane`). `database`
    is the store the handler used: it tells (and notes) whether the error is its outage."""
    headers: dict[str, str] = {}
    unavailable = store_unavailable(exc, database)
    if unavailable is not None:
        status, code, message, details = 503, unavailable.code, unavailable.message, None
        headers["Retry-After"] = str(unavailable.retry_after)
    elif isinstance(exc, RequestError):
        status, code, message, details = exc.status, exc.code, exc.message, exc.details
        if status == 429 and isinstance(details, dict) and "retryAfter" in details:
            headers["Retry-After"] = str(details["retryAfter"])
    elif isinstance(exc, TemporaryError):
        log(
            logger,
            logging.WARNING,
            "request.temporary_error",
            error=exc.code,
            path=path,
            correlationId=correlation,
        )
        status, code, details = 503, "temporarily_unavailable", None
        message = "the service is temporarily unavailable; retry shortly"
        headers["Retry-After"] = "5"
    else:
        if isinstance(exc, DriftgateError):
            log(
                logger,
                logging.ERROR,
                "request.failed",
                error=exc.code,
                message=exc.message,
                path=path,
                correlationId=correlation,
            )
        else:
            logger.error(
                "request.crashed",
                exc_info=exc,
                extra={"fields": {"path": path, "method": method, "correlationId": correlation}},
            )
        status, code, details = 500, "internal_error", None
        message = (
            "an unexpected error occurred; it was logged with the correlation id "
            f"{correlation or ''}".strip()
        )
    body: dict[str, object] = {"error": code, "message": message}
    if details is not None:
        body["details"] = details
    return status, headers, json.dumps(body).encode()


def store_unavailable(exc: BaseException, database: Database | None) -> StoreUnavailable | None:
    """The `StoreUnavailable` that `exc` amounts to, or None: the shells' one test."""
    if isinstance(exc, StoreUnavailable):
        return exc
    return database.unavailable(exc) if database is not None else None


def _answer(exc: Exception) -> Response:
    database: Database = current_app.extensions["driftgate.database"]
    if request.blueprint == "console":
        unavailable = store_unavailable(exc, database)
        if unavailable is not None:
            return unavailable_page(unavailable)
    status, headers, body = error_answer(
        exc,
        method=request.method,
        path=request.path,
        correlation=g.get("correlation_id"),
        database=database,
    )
    response = Response(body, status=status, mimetype="application/json")
    response.headers.update(headers)
    return response


_UNAVAILABLE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>driftgate: database unavailable</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>driftgate cannot reach its database</h1>
<p>{message}</p>
<p>Reload this page in a few seconds.</p></main></body></html>
"""


def unavailable_page(unavailable: StoreUnavailable) -> Response:
    """The console's 503: a page of its own that reads nothing from the store (the console's
    layout would look the user up)."""
    html = _UNAVAILABLE_PAGE.format(message=unavailable.message.capitalize() + ".")
    response = Response(html, status=503, mimetype="text/html")
    response.headers["Retry-After"] = str(unavailable.retry_after)
    return response


DRAIN_LIMIT = 64 * 1024 * 1024


def _discard_body() -> None:
    """Read and drop an oversized body (up to a bound) so the client can read our 413 and
    its keep-alive connection stays in step; past the bound the server closes it."""
    stream = request.environ.get("wsgi.input")
    remaining = min(request.content_length or 0, DRAIN_LIMIT)
    try:
        while stream is not None and remaining > 0:
            chunk = stream.read(min(remaining, 65536))
            if not chunk:
                break
            remaining -= len(chunk)
    except OSError:
        pass


def init_app(app: Flask) -> None:
    @app.errorhandler(RequestError)
    def request_error(exc: RequestError) -> Response:
        return _answer(exc)

    @app.errorhandler(TemporaryError)
    def temporary_error(exc: TemporaryError) -> Response:
        return _answer(exc)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        code = HTTP_CODES.get(status, "http_error")
        if status == 404:
            message = f"no route {request.method} {request.path}"
        elif status == 405:
            message = f"method {request.method} is not allowed on {request.path}"
        elif status == 413:
            limit = app.config.get("MAX_CONTENT_LENGTH")
            message = f"the request body exceeds the limit of {limit} bytes"
        else:
            message = exc.description or code
        response = envelope(status, code, message)
        if status == 413:
            _discard_body()
        if status == 405 and exc.get_response().headers.get("Allow"):
            response.headers["Allow"] = exc.get_response().headers["Allow"]
        return response

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        return _answer(exc)
