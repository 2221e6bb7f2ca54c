"""Request authentication: API keys (`Authorization: Bearer` or `X-Api-Key`), trial sessions,
and the console's signed-in sessions (cookie) on the routes a browser calls.

Routes declare what they accept; this module reads the headers, resolves the principal
through `controller.orgs.auth_service`, and raises `Unauthorized` with a message that never
echoes the credential.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from flask import current_app, request
from sqlalchemy.exc import SQLAlchemyError

from controller.accounts.service import SignedIn
from controller.compat import service as compat
from controller.crypto import hash_token
from controller.errors import StoreUnavailable, Unauthorized
from controller.model.principal import Principal
from controller.orgs import auth_service
from controller.store.models import TrialSession
from web.db import database, request_session
from web.routes import TRIAL_SESSIONS, Auth

TRIAL_HEADER = "X-Service-Trial"
logger = logging.getLogger("driftgate.web")


def api_key_from(authorization: str, x_api_key: str) -> str | None:
    """The API key of the `Authorization` and `X-Api-Key` header values (None when neither
    carries one); a malformed `Authorization` header is a 401."""
    header = authorization.strip()
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized(
                "the Authorization header must be `Bearer <API key>`", code="invalid_api_key"
            )
        return value.strip()
    return x_api_key.strip() or None


def api_key_from_headers() -> str | None:
    return api_key_from(
        request.headers.get("Authorization", ""), request.headers.get("X-Api-Key", "")
    )


def authenticate(auth: Auth) -> tuple[Principal | None, TrialSession | None]:
    """Resolve the caller for a route that accepts `auth`; raise 401 when that fails."""
    if auth == "none":
        return None, None
    now = datetime.now(UTC)
    key = api_key_from_headers()
    if key is not None:
        return _api_key_principal(key, now), None
    signed = _console_session()
    if signed is not None:
        return signed.principal(), None
    if auth == "key_or_trial":
        if not TRIAL_SESSIONS.enabled(current_app.extensions["driftgate.settings"]):
            # Trial sessions are off (the default of a self-hosted server): the header is
            # not read, and a token minted while they were on no longer opens anything.
            raise Unauthorized(
                "an API key is required: send `Authorization: Bearer dg_...` (trial sessions "
                f"are off on this server: {TRIAL_SESSIONS.variable})",
                code="missing_credentials",
            )
        # The hosted clients send their name of the header (`X-DriftGuard-Trial`).
        token = (compat.header(request.headers, TRIAL_HEADER) or "").strip()
        if token:
            return auth_service.authenticate_trial(request_session(), token, now)
        raise Unauthorized(
            "an API key (Authorization: Bearer dg_...) or a trial session (X-Service-Trial)"
            " is required",
            code="missing_credentials",
        )
    if auth == "optional_key":
        return None, None
    raise Unauthorized(
        "an API key is required: send `Authorization: Bearer dg_...`", code="missing_credentials"
    )


# A console session reaches the read routes and the run gate (SPEC.md Authentication 3:
# preflight by agent id from a signed-in console); every other write needs an API key.
SESSION_WRITES = frozenset({("POST", "/api/preflight")})


def _console_session() -> SignedIn | None:
    """The console session of the request's cookie, on a route a session may call; a write
    must carry the session's CSRF token in `X-CSRF-Token` (403 otherwise)."""
    from web.console import SESSION_COOKIE, check_csrf, current

    if not request.cookies.get(SESSION_COOKIE):
        return None
    write = request.method not in ("GET", "HEAD")
    if write and (request.method, request.path) not in SESSION_WRITES:
        return None
    signed = current()
    if signed is not None and write:
        check_csrf(signed.csrf_token)
    return signed


def _api_key_principal(key: str, now: datetime) -> Principal:
    """The key's principal: from this process' cache (`api_key_cache_seconds`), else read in a
    transaction of its own that ends at once. The request's session does not begin here, so a
    route that never needs it (the run gate) opens no transaction on it, and on SQLite no read
    snapshot stays open for the whole request (one would hold back WAL checkpoints)."""
    cached = auth_service.KEY_CACHE.get(hash_token(key))
    if cached is not None:
        return cached
    with database().session() as session:
        principal = auth_service.authenticate_api_key(session, key, now)
        session.commit()
    if principal.touch:
        _touch(principal.credential_id, now)
    return principal


def _touch(key_id: str, now: datetime) -> None:
    # Its own short transaction, at most once a minute per key: it never holds the write lock
    # for the request, and does not wait for it either (a read must not wait on a writer): a
    # busy store costs a missed timestamp, taken again at the key's next lookup, never a
    # failed or a slow request.
    try:
        with database().transaction(lock_wait=0) as session:
            auth_service.touch_api_key(session, key_id, now)
    except (SQLAlchemyError, StoreUnavailable) as exc:
        if database().is_busy(exc):
            return
        if database().unavailable(exc) is None:  # an outage is logged once, by the store
            logger.warning("api_key.touch_failed", extra={"fields": {"keyId": key_id}})
