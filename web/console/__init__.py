"""The console: server-rendered pages for people, under `/console` (docs/console.md).

A page reads and changes things through the same services as the API. Sign-in makes a
server-side session (`controller.accounts`); its token travels in the `driftgate_session`
cookie (`HttpOnly`, `SameSite=Lax`, `Secure` when served over HTTPS). Every state-changing
form carries the session's CSRF token (`csrf_token`), checked before anything is read; the
sign-in form, which has no session yet, carries a token matched against a cookie of its own
(double submit). Admin-only actions answer 403 to viewers. Pages answer with a strict
Content-Security-Policy: no inline script, nothing from elsewhere.
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    Response,
    abort,
    current_app,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.wrappers import Response as BaseResponse

from controller.accounts import service as accounts
from controller.accounts.service import SignedIn
from controller.checks.heartbeats_service import ControllerHealth, controller_health
from controller.errors import (
    DriftgateError,
    Forbidden,
    NotFound,
    StoreUnavailable,
    ValidationFailed,
)
from web.db import database, request_session
from web.errors import unavailable_page

SESSION_COOKIE = "driftgate_session"
PRESESSION_COOKIE = "driftgate_csrf"
CSRF_FIELD = "csrf_token"

blueprint = Blueprint(
    "console",
    __name__,
    url_prefix="/console",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)

F = TypeVar("F", bound=Callable[..., Any])


def now() -> datetime:
    return datetime.now(UTC)


def secure_cookies() -> bool:
    base = (g.settings.public_base_url or "") if "settings" in g else ""
    return request.is_secure or base.startswith("https://")


def current() -> SignedIn | None:
    """The request's console session, looked up once."""
    if "console_user" not in g:
        token = request.cookies.get(SESSION_COOKIE, "")
        g.console_user = _look_up(token) if token else None
    signed: SignedIn | None = g.console_user
    return signed


def _look_up(token: str) -> SignedIn | None:
    """The session of a cookie's token, in transactions of its own that end here.

    Not in the request's session: on SQLite a writing request's transaction holds the write
    lock from its start, and a route that then writes on another connection (the run gate
    records its decision on its own) would wait on its own request until the busy timeout.
    The lookup reads without the write lock; only when it has something to write (the idle
    clock's touch, an expired session's removal) is it done again in a short writing
    transaction, committed at once, that does not wait for the lock: while another writer
    holds it, the page is served on what was read (the touch comes with a later request, an
    expired session is ended anyway and removed by the hourly prune).
    """
    db = database()
    # Without autoflush, what the lookup would write stays pending, where `dirty` sees it.
    with db.session() as session, session.no_autoflush:
        signed = accounts.authenticate(session, token, now())
        if not (session.dirty or session.deleted):
            return signed
    try:
        with db.transaction(lock_wait=0) as session:
            return accounts.authenticate(session, token, now())
    except (SQLAlchemyError, StoreUnavailable) as exc:
        if not db.is_busy(exc):
            raise
        return signed


def signed_in(view: F) -> F:
    """The page needs a session: without one, the sign-in page (and back here after)."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        user = current()
        if user is None:
            return redirect(url_for("console.sign_in_page", next=request.full_path.rstrip("?")))
        g.org_id = user.org_id
        if request.method == "POST":
            check_csrf(user.csrf_token)
        return view(user, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def action(view: Callable[..., str | BaseResponse]) -> Callable[..., BaseResponse]:
    """A form post that changes something: signed in, CSRF checked, admins only. The view
    makes the change and names the page to show after it (or answers a response of its
    own); the change is committed and the browser goes back to the page it posted from."""

    @wraps(view)
    def act(user: SignedIn, *args: Any, **kwargs: Any) -> BaseResponse:
        admin(user)
        target = view(user, *args, **kwargs)
        request_session().commit()
        return target if isinstance(target, BaseResponse) else redirect_back(target)

    return signed_in(act)


def admin(user: SignedIn) -> None:
    if not user.is_admin:
        raise Forbidden(
            "this needs the admin role; viewers can look, not change", code="admin_required"
        )


def check_csrf(expected: str) -> None:
    sent = request.form.get(CSRF_FIELD, "") or request.headers.get("X-CSRF-Token", "")
    if not expected or not sent or not hmac.compare_digest(sent, expected):
        raise Forbidden(
            "the form's CSRF token is missing or stale: reload the page and try again",
            code="csrf_failed",
        )


def page(template: str, user: SignedIn | None, code: int = 200, **context: Any) -> Response:
    html = render_template(
        f"console/{template}",
        user=user,
        csrf_token=user.csrf_token if user else "",
        nav=NAV,
        active=request.endpoint,
        controller=_controller_down() if user else None,
        **context,
    )
    return Response(html, status=code, mimetype="text/html")


def _controller_down() -> ControllerHealth | None:
    """The controllers' heartbeat when none is alive (the banner of every page), else None;
    None too while the store is unavailable (the page says so itself)."""
    try:
        health = controller_health(database(), now())
    except Exception as error:
        if database().unavailable(error) is None:
            raise
        return None
    return None if health.state == "alive" else health


NAV = (
    ("console.overview", "Overview"),
    ("console.activity_page", "Activity"),
    ("console.watches", "Watches"),
    ("console.agents", "Agents"),
    ("console.sources", "Sources"),
    ("console.templates", "Templates"),
    ("console.ask", "Ask"),
    ("console.settings", "Settings"),
    ("console.keys", "API keys"),
)


def redirect_back(default: str) -> Response:
    """After a form: back where it was posted from (a console page), else `default`."""
    referrer = request.referrer or ""
    host = request.host_url.rstrip("/")
    if referrer.startswith(host + "/console"):
        return redirect(referrer[len(host) :])  # type: ignore[return-value]
    return redirect(default)  # type: ignore[return-value]


def console_path(target: str | None) -> str | None:
    """`target` when it is a console path to come back to after sign-in, else None: never
    another site, and nothing that is not a plain path (a CR or LF would end the `Location`
    header it goes into)."""
    if not target or _CONTROL.search(target) or "\\" in target:
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return None
    return target if parts.path == "/console" or parts.path.startswith("/console/") else None


def safe_next(target: str | None) -> str:
    """Where to go after sign-in: the console path asked for, else the overview."""
    return console_path(target) or url_for("console.overview")


@blueprint.after_request
def headers(response: Response) -> Response:
    response.headers.setdefault(
        "Content-Security-Policy",
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    )
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("Cache-Control", "no-store")
    return response


@blueprint.before_request
def refuse_what_no_store_holds() -> None:
    """The API's input rules, for pages: no id, slug or name holds a control character
    (Postgres text cannot even hold NUL), so a path with one names nothing (404); a query or
    form value with NUL is refused (400) before anything looks it up or stores it."""
    path_values = (request.view_args or {}).values()
    if any(isinstance(v, str) and _CONTROL.search(v) for v in path_values):
        raise NotFound("no such page")
    for where, fields in (("query", request.args), ("form", request.form)):
        for name, value in fields.items(multi=True):
            if "\x00" in name or "\x00" in value:
                raise ValidationFailed(f"the {where} field {name!r} holds a NUL character")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@blueprint.errorhandler(DriftgateError)
def failed(exc: DriftgateError) -> Response:
    if isinstance(exc, StoreUnavailable):
        return unavailable_page(exc)
    status = getattr(exc, "status", 500)
    if request.method == "POST" and g.get("db_session") is not None:
        g.db_session.rollback()  # nothing of a refused action is kept
    return page(
        "error.html", g.get("console_user"), code=status, message=exc.message, why=_why(exc)
    )


def _why(exc: DriftgateError) -> list[str]:
    """What a refused acknowledgement needs, in words: each agent's rule and what failed."""
    if exc.code != "approval_refused" or not isinstance(exc.details, list):
        return []
    return [
        f"agent {d.get('agentId')}: rule {d['rule'].get('repository')} on "
        f"{', '.join(d['rule'].get('branches') or ['*'])}: the {d.get('failed')} does not match"
        for d in exc.details
        if isinstance(d, dict) and isinstance(d.get("rule"), dict)
    ]


def init_app(app: Flask) -> None:
    from web.console import (  # noqa: F401  (registers the views)
        activity,
        agents,
        ask,
        contract,
        destinations,
        diffruns,
        pages,
        search,
        settings,
        sources,
        sso,
        templates_page,
        timefmt,
        watches,
    )

    app.register_blueprint(blueprint)
    timefmt.register(app, now)

    @app.route("/favicon.ico")
    def favicon() -> Response:
        """Browsers ask for it on every page before they read the page's icon link."""
        target = url_for("console.static", filename="favicon.svg")
        return redirect(target, 301)  # type: ignore[return-value]

    @app.route("/")
    def root() -> Response:
        return redirect(url_for("console.overview"))  # type: ignore[return-value]


def signed_in_response(token: str, target: str) -> Response:
    """A redirect to `target` that hands the browser its new session's cookie."""
    response = redirect(target)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(accounts.SESSION_TTL.total_seconds()),
        httponly=True,
        secure=secure_cookies(),
        samesite="Lax",
        path="/",
    )
    return response  # type: ignore[return-value]


def sso_label() -> str | None:
    """The SSO button's text when single sign-on is configured, else None."""
    settings = current_app.extensions["driftgate.settings"]
    return settings.oidc_label if accounts.sso_configured(settings) else None


def presession_token() -> str:
    return request.cookies.get(PRESESSION_COOKIE) or secrets.token_urlsafe(24)


def not_found() -> None:
    abort(404)
