"""Turns every error into the JSON envelope `{error, message, details}`; never HTML or a trace."""

from __future__ import annotations

import json
import logging

from flask import Flask, Response, g, request
from werkzeug.exceptions import HTTPException

from controller.errors import DriftgateError, RequestError, TemporaryError
from controller.logs import log

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
    exc: Exception, *, method: str, path: str, correlation: str | None
) -> tuple[int, dict[str, str], bytes]:
    """The status, extra headers and envelope that answer an error a handler raised, logged
    as it must be: the one rendering for the Flask app and the lane (`web.lane`)."""
    headers: dict[str, str] = {}
    if isinstance(exc, RequestError):
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


def _answer(exc: Exception) -> Response:
    status, headers, body = error_answer(
        exc, method=request.method, path=request.path, correlation=g.get("correlation_id")
    )
    response = Response(body, status=status, mimetype="application/json")
    response.headers.update(headers)
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
