"""Single sign-on to the console through OpenID Connect (`controller.accounts.oidc`): the
sign-in page's button starts it; the provider sends the browser back to the callback."""

from __future__ import annotations

from flask import current_app, redirect, request
from werkzeug.wrappers import Response

from controller.accounts import service as accounts
from controller.settings import Settings
from web.console import blueprint, not_found, now, safe_next, secure_cookies, signed_in_response
from web.db import request_session

FLOW_COOKIE = "driftgate_oidc"


def _provider() -> accounts.SsoProvider:
    settings: Settings = current_app.extensions["driftgate.settings"]
    if not accounts.sso_configured(settings):
        not_found()
    cached = current_app.extensions.get("driftgate.oidc")
    if cached is None:
        cached = current_app.extensions["driftgate.oidc"] = accounts.SsoProvider(settings)
    provider: accounts.SsoProvider = cached
    return provider


def _redirect_uri() -> str:
    settings: Settings = current_app.extensions["driftgate.settings"]
    base = (settings.public_base_url or request.host_url).rstrip("/")
    return f"{base}{accounts.SSO_CALLBACK_PATH}"


@blueprint.get("/sso")
def sso_start() -> Response:
    provider = _provider()
    box = current_app.extensions["driftgate.secret_box"]
    url, flow = provider.start(box, _redirect_uri(), safe_next(request.args.get("next")))
    response = redirect(url)
    response.set_cookie(
        FLOW_COOKIE,
        flow,
        max_age=accounts.SSO_FLOW_TTL,
        httponly=True,
        secure=secure_cookies(),
        samesite="Lax",  # the provider's redirect back is a top-level GET
        path="/console/sso",
    )
    return response


@blueprint.get("/sso/callback")
def sso_callback() -> Response:
    provider = _provider()
    box = current_app.extensions["driftgate.secret_box"]
    identity, target = provider.finish(
        box,
        request.cookies.get(FLOW_COOKIE, ""),
        request.args.get("state", ""),
        request.args.get("code", ""),
        _redirect_uri(),
    )
    token, _signed = accounts.sign_in_verified(
        request_session(), identity.email, request.remote_addr or "unknown", now(), via="oidc"
    )
    request_session().commit()
    response = signed_in_response(token, safe_next(target))
    response.delete_cookie(FLOW_COOKIE, path="/console/sso")
    return response
