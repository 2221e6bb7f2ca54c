"""Request authentication: API keys (`Authorization: Bearer` or `X-Api-Key`) and trial sessions.

Routes declare what they accept; this module reads the headers, resolves the principal
through `controller.services.auth`, and raises `Unauthorized` with a message that never
echoes the credential.
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask import request

from controller.errors import Unauthorized
from controller.services import auth as auth_service
from controller.services.auth import Principal
from controller.store.models import TrialSession
from web.db import request_session
from web.routes import Auth

TRIAL_HEADER = "X-Service-Trial"


def api_key_from_headers() -> str | None:
    header = request.headers.get("Authorization", "").strip()
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized(
                "the Authorization header must be `Bearer <API key>`", code="invalid_api_key"
            )
        return value.strip()
    value = request.headers.get("X-Api-Key", "").strip()
    return value or None


def authenticate(auth: Auth) -> tuple[Principal | None, TrialSession | None]:
    """Resolve the caller for a route that accepts `auth`; raise 401 when that fails."""
    if auth == "none":
        return None, None
    now = datetime.now(UTC)
    key = api_key_from_headers()
    if key is not None:
        return auth_service.authenticate_api_key(request_session(), key, now), None
    if auth == "key_or_trial":
        token = request.headers.get(TRIAL_HEADER, "").strip()
        if token:
            return auth_service.authenticate_trial(request_session(), token, now)
        raise Unauthorized(
            "an API key (Authorization: Bearer dg_...) or a trial session (X-Service-Trial)"
            " is required",
            code="missing_credentials",
        )
    raise Unauthorized(
        "an API key is required: send `Authorization: Bearer dg_...`", code="missing_credentials"
    )
