"""The console's pages: sign-in, set password, sign-out, overview, API keys."""

from __future__ import annotations

from flask import current_app, redirect, request, url_for
from werkzeug.wrappers import Response

from controller.accounts import service as accounts
from controller.accounts.service import SignedIn
from controller.errors import NotFound, TooManyRequests, Unauthorized, Unprocessable
from controller.orgs import auth_service as key_service
from controller.orgs.service import get_org
from controller.portfolio import blocked_service as blocked
from controller.portfolio import service as portfolio
from web.console import (
    CSRF_FIELD,
    PRESESSION_COOKIE,
    SESSION_COOKIE,
    action,
    admin,
    blueprint,
    charts,
    check_csrf,
    console_path,
    current,
    now,
    page,
    presession_token,
    safe_next,
    secure_cookies,
    signed_in,
    signed_in_response,
    sso_label,
)
from web.db import database, request_session


def _client_address() -> str:
    return request.remote_addr or "unknown"


@blueprint.get("/sign-in")
def sign_in_page() -> Response:
    if current() is not None:
        return redirect(safe_next(request.args.get("next")))
    token = presession_token()
    response = page(
        "sign_in.html",
        None,
        presession=token,
        next=console_path(request.args.get("next")) or "",
        sso=sso_label(),
    )
    _set_presession(response, token)
    return response


@blueprint.post("/sign-in")
def sign_in() -> Response:
    check_csrf(request.cookies.get(PRESESSION_COOKIE, ""))
    email = request.form.get("email", "")
    target = safe_next(request.form.get("next"))
    try:
        token, _signed = accounts.sign_in(
            request_session(), email, request.form.get("password", ""), _client_address(), now()
        )
    except (Unauthorized, TooManyRequests) as exc:
        request_session().commit()  # the failed attempt counts
        fresh = presession_token()
        response = page(
            "sign_in.html",
            None,
            code=exc.status,
            presession=fresh,
            next=console_path(request.form.get("next")) or "",
            email=email,
            error=exc.message,
            sso=sso_label(),
        )
        _set_presession(response, fresh)
        return response
    request_session().commit()
    signed = signed_in_response(token, target)
    signed.delete_cookie(PRESESSION_COOKIE, path="/console")
    return signed


def _set_presession(response: Response, token: str) -> None:
    response.set_cookie(
        PRESESSION_COOKIE,
        token,
        httponly=True,
        secure=secure_cookies(),
        samesite="Strict",
        path="/console",
    )


@blueprint.get("/set-password")
def set_password_page() -> Response:
    token = request.args.get("token", "")
    user = accounts.user_for_setup(request_session(), token, now())
    fresh = presession_token()
    response = page("set_password.html", None, token=token, email=user.email, presession=fresh)
    response.headers["Referrer-Policy"] = "no-referrer"  # the link's token stays here
    _set_presession(response, fresh)
    return response


@blueprint.post("/set-password")
def set_password() -> Response:
    check_csrf(request.cookies.get(PRESESSION_COOKIE, ""))
    token = request.form.get("token", "")
    password = request.form.get("password", "")
    if password != request.form.get("confirm", ""):
        problem = "the two passwords differ"
    else:
        try:
            user = accounts.set_password(request_session(), token, password, now())
        except Unprocessable as exc:
            problem = exc.message
        else:
            request_session().commit()
            return redirect(url_for("console.sign_in_page", email=user.email, password_set=1))
    user = accounts.user_for_setup(request_session(), token, now())
    fresh = presession_token()
    response = page(
        "set_password.html",
        None,
        422,
        token=token,
        email=user.email,
        presession=fresh,
        error=problem,
    )
    _set_presession(response, fresh)
    return response


@blueprint.post("/sign-out")
@signed_in
def sign_out(user: SignedIn) -> Response:
    accounts.sign_out(request_session(), user)
    return _signed_out()


@blueprint.post("/sign-out-everywhere")
@signed_in
def sign_out_everywhere(user: SignedIn) -> Response:
    accounts.sign_out_everywhere(request_session(), user)
    return _signed_out()


def _signed_out() -> Response:
    """Commit the ended session(s), drop the cookie, and go to the sign-in page."""
    request_session().commit()
    response = redirect(url_for("console.sign_in_page"))
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


def _dashboard_filters(user: SignedIn) -> tuple[object, dict[str, object]]:
    chosen = request.args.get("dashboard", "")
    if not chosen:
        return None, {}
    dashboard = portfolio.get_dashboard(request_session(), user.org_id, chosen)
    return dashboard, dashboard.filters.model_dump(by_alias=True, exclude_none=True)


@blueprint.get("/")
@signed_in
def overview(user: SignedIn) -> Response:
    dashboard, filters = _dashboard_filters(user)
    query = portfolio.OverviewQuery.model_validate(filters)
    data = portfolio.overview(request_session(), user.org_id, query, now(), exact=True).model_dump(
        by_alias=True, mode="json"
    )
    stuck = blocked.blocked_now(
        request_session(),
        database(),
        current_app.extensions["driftgate.settings"],
        current_app.extensions["driftgate.secret_box"],
        user.org_id,
        now(),
    )
    weeks = data["analytics"]["driftEventsByWeek"]
    mttr = [(r["key"], r["hours"]) for r in data["analytics"]["mttr"]["byVendor"][:10]]
    return page(
        "overview.html",
        user,
        overview=data,
        blocked=stuck,
        dashboard=dashboard,
        scope=_list_scope(filters),
        weeks_chart=charts.stacked_weeks(weeks),
        mttr_chart=charts.durations(mttr) if mttr else "",
    )


def _list_scope(filters: dict[str, object]) -> dict[str, str]:
    """The watch list's filters for a dashboard's (type, vendor, tag): a tile opens the list
    of the watches it counted."""
    names = {"watchType": "type", "vendor": "vendor", "tag": "tag"}
    return {names[k]: str(v) for k, v in filters.items() if k in names and v}


@blueprint.get("/compass")
@signed_in
def compass_part(user: SignedIn) -> Response:
    """The coverage map, hotspots and gaps: loaded into the overview by htmx after the page
    (each answer stays fast), or a page of its own without script."""
    dashboard, filters = _dashboard_filters(user)
    query = portfolio.CompassQuery.model_validate(filters)
    data = portfolio.compass(request_session(), user.org_id, query, now()).model_dump(
        by_alias=True, mode="json"
    )
    coverage = data["coverage"]["byVendor"][:15]
    partial = request.headers.get("HX-Request") == "true"
    return page(
        "_compass.html" if partial else "compass.html",
        user,
        compass=data,
        dashboard=dashboard,
        coverage_chart=charts.coverage(coverage) if coverage else "",
    )


@blueprint.get("/settings/keys")
@signed_in
def keys(user: SignedIn) -> Response:
    return _keys_page(user)


def _keys_page(user: SignedIn, created: str | None = None, status: int = 200) -> Response:
    org = get_org(request_session(), user.org_id)
    listed = key_service.list_api_keys(request_session(), org)
    return page("keys.html", user, code=status, keys=listed, created=created)


@blueprint.post("/settings/keys")
@signed_in
def create_key(user: SignedIn) -> Response:
    admin(user)
    name = request.form.get("name", "").strip()[:100]
    org = get_org(request_session(), user.org_id)
    issued = key_service.create_api_key(request_session(), org, name, actor=user.actor)
    request_session().commit()
    # Shown once, on this answer only; the store keeps its hash.
    return _keys_page(user, created=issued.secret, status=201)


@blueprint.post("/settings/keys/<key_id>/revoke")
@action
def revoke_key(user: SignedIn, key_id: str) -> str:
    org = get_org(request_session(), user.org_id)
    if key_id not in {k.id for k in key_service.list_api_keys(request_session(), org)}:
        raise NotFound("no such API key in this org")
    key_service.revoke_api_key(request_session(), key_id, now(), actor=user.actor)
    return url_for("console.keys")


__all__ = ["CSRF_FIELD", "check_csrf"]
