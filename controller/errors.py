"""The error tree every layer of driftgate raises and one place per layer translates.

    DriftgateError                 base; carries a stable machine `code` and a human message
     ├── ConfigError               a setting or a config file is wrong (file:line when known)
     ├── RequestError              the caller asked for something that cannot be done
     │    ├── ValidationFailed     400: the input does not match the declared shape
     │    ├── Unprocessable        422: well-formed input that cannot be acted on
     │    ├── Unauthorized         401: missing, invalid or revoked credentials
     │    ├── Forbidden            403: plan or product does not allow it
     │    ├── NotFound             404: missing, or owned by another org (never told apart)
     │    ├── Conflict             409: duplicate names, managed objects, state clashes
     │    ├── PayloadTooLarge      413: a body, a file set or a document over its limit
     │    ├── TooManyRequests      429: a limit on the caller (sign-in attempts, a route's rate)
     │    └── NotSelfHosted        501: a hosted product's route driftgate refuses by design
     ├── TemporaryError            worth retrying with backoff (network, lock timeouts)
     │    └── StoreUnavailable     503: the database cannot be reached or did not answer
     └── PermanentError            retrying will not help; mark the thing stalled

`web/errors.py` turns these into the JSON envelope, `cli` into exit codes, the reconciler
into status conditions. Messages never contain credentials.
"""

from __future__ import annotations

from typing import Any


class DriftgateError(Exception):
    """Base of every error driftgate raises on purpose."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details


class ConfigError(DriftgateError):
    """A setting or a configuration file is invalid; the message names the setting or file:line."""

    code = "config_error"


class RequestError(DriftgateError):
    """An error the caller can fix; `status` is the HTTP status it maps to."""

    status = 400


class ValidationFailed(RequestError):
    code = "validation_error"
    status = 400


class NotSelfHosted(RequestError):
    """A route of the hosted product that a self-hosted driftgate refuses by design; the
    message says why and what to use instead (docs/compat.md)."""

    code = "not_self_hosted"
    status = 501


class Unprocessable(RequestError):
    code = "validation_error"
    status = 422


class Unauthorized(RequestError):
    code = "unauthorized"
    status = 401


class Forbidden(RequestError):
    code = "forbidden"
    status = 403


class NotFound(RequestError):
    code = "not_found"
    status = 404


def agent_not_found(id_or_slug: str) -> NotFound:
    """The 404 of an agent the org does not have, naming what was looked for."""
    return NotFound(f"Agent not found: no agent with id or slug {id_or_slug!r} in this org")


class Conflict(RequestError):
    code = "conflict"
    status = 409


class PayloadTooLarge(RequestError):
    """A request body, or a part of it (a profile, metadata, a set of files), is over its
    limit; the message names the limit."""

    code = "payload_too_large"
    status = 413


class TooManyRequests(RequestError):
    """A limit on the caller was reached (sign-in attempts, a public route's rate limit);
    `details.retryAfter` says when to retry."""

    code = "rate_limited"
    status = 429


class TemporaryError(DriftgateError):
    """A failure that may go away on its own; callers retry with backoff."""

    code = "temporary_error"


class StoreUnavailable(TemporaryError):
    """The database cannot be reached, did not answer in time, or is locked by another
    writer (`controller.store.outage`); `reason` is `unreachable`, `timeout` or `busy`."""

    code = "store_unavailable"
    status = 503
    retry_after = 5

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or _STORE_MESSAGES.get(reason, _STORE_MESSAGES["unreachable"]))
        self.reason = reason


_STORE_MESSAGES = {
    "unreachable": "the database cannot be reached; retry shortly",
    "timeout": "the database did not answer in time; retry shortly",
    "busy": "the database is busy (another writer holds it); retry shortly",
}


class PermanentError(DriftgateError):
    """A failure that retrying cannot fix."""

    code = "permanent_error"


class UpstreamError(RequestError):
    """A service driftgate called on the caller's behalf (GitHub) refused or failed; the
    message names the cause (installation gone, repository not accessible, permissions)."""

    code = "upstream_error"
    status = 502
