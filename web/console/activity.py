"""The activity timeline and the live parts of the console's pages.

The timeline (`controller.activity.service`) is a page of its own, `/console/activity`,
filterable by kind, object and time, and a part each page that shows an object includes: the
overview (the org), a watch, an agent, a source. The part is loaded by htmx after the page,
and again whenever the page's live strip sees the object change; without script it is a link
to the page.

The live strip (`/console/live/...`) is polled by htmx every few seconds: the object's state
now, in one or two indexed queries. It carries the state it last saw (`seen`) and the state
the page was drawn with (`drawn`): a change fires `dg-activity` (the timeline reloads), and
the status badge of the page's heading follows it (an out-of-band swap). A strip that cannot
read the store says so, and the badge turns to `unknown`: never a stale `ok`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Response, current_app, request, url_for

from controller.accounts.service import SignedIn
from controller.activity import service as activity
from controller.activity.service import KINDS, BadFilter, Entry, parse_filters
from controller.crypto import SecretBox
from controller.errors import ValidationFailed
from web.console import blueprint, current, now, page, signed_in
from web.db import database, request_session
from web.errors import store_unavailable

PART_LIMIT = 10
POLL = "every 5s"


@blueprint.app_template_global("activity_link")
def activity_link(entry: Entry) -> str | None:
    """The console page of an entry's object, or None when it has none (deleted, the org)."""
    if entry.object_type == "event" and entry.watch_id and entry.object_id:
        return url_for("console.event", watch_id=entry.watch_id, event_id=entry.object_id)
    if entry.object_type == "watch" and entry.object_id:
        return url_for("console.watch", watch_id=entry.object_id)
    if entry.object_type == "agent" and entry.object_id:
        return url_for("console.agent", agent_id=entry.object_id)
    if entry.object_type == "source" and entry.object_id:
        return url_for("console.source", name=entry.object_id)
    if entry.object_type == "org" and entry.action.startswith("api_key."):
        return url_for("console.keys")
    return None


def _filters(limit: int | None = None) -> Any:
    args = request.args
    try:
        return parse_filters(
            args.getlist("kind"),
            args.get("object") or None,
            args.get("since") or None,
            args.get("until") or None,
            args.get("cursor") or None,
            str(limit) if limit else args.get("limit"),
        )
    except BadFilter as exc:
        raise ValidationFailed(str(exc)) from None


@blueprint.get("/activity")
@signed_in
def activity_page(user: SignedIn) -> Response:
    filters = _filters()
    found = activity.read(request_session(), user.org_id, filters, _box())
    scope = activity.resolve_scope(request_session(), user.org_id, filters)
    return page(
        "activity.html",
        user,
        timeline=found,
        kinds=KINDS,
        chosen=set(filters.kinds),
        scope=scope,
        args=request.args,
        next_url=_page_url(found.next_cursor) if found.next_cursor else None,
    )


def _box() -> SecretBox:
    """The secret box: deliveries name their destination from the encrypted URL."""
    box: SecretBox = current_app.extensions["driftgate.secret_box"]
    return box


def _page_url(cursor: str) -> str:
    return url_for("console.activity_page", **_args_but("cursor"), cursor=cursor)


def _args_but(*names: str) -> dict[str, Any]:
    """The request's query string without `names`, for links to another page of it."""
    return {k: v for k, v in request.args.to_dict(flat=False).items() if k not in names}


@blueprint.get("/activity/part")
def activity_part() -> Response:
    """The newest entries of a page's timeline, for htmx (no layout)."""

    def draw(user: SignedIn) -> Response:
        filters = _filters(PART_LIMIT)
        found = activity.read(request_session(), user.org_id, filters, _box())
        return page(
            "_activity_part.html",
            user,
            timeline=found,
            more_url=url_for("console.activity_page", **_args_but("cursor", "limit")),
        )

    return _part(draw, "_activity_unavailable.html")


# -- live strips -----------------------------------------------------------------------------


@blueprint.get("/live/overview")
def live_overview() -> Response:
    return _part(
        lambda user: _strip(
            user, "overview", None, activity.live_overview(request_session(), user.org_id)
        )
    )


@blueprint.get("/live/watches/<watch_id>")
def live_watch(watch_id: str) -> Response:
    def draw(user: SignedIn) -> Response:
        live = activity.live_watch(request_session(), user.org_id, watch_id)
        status = live.facts["watch"].drift_status
        shown = "paused" if status == "disabled" else status
        return _strip(user, "watch", (shown, shown), live)

    return _part(draw)


@blueprint.get("/live/agents/<agent_id>")
def live_agent(agent_id: str) -> Response:
    def draw(user: SignedIn) -> Response:
        live = activity.live_agent(request_session(), user.org_id, agent_id)
        state = live.facts["agent"].runtime_state
        return _strip(user, "agent", ("drifted" if state == "killed" else "ok", state), live)

    return _part(draw)


@blueprint.get("/live/sources/<name>")
def live_source(name: str) -> Response:
    return _part(
        lambda user: _strip(
            user, "source", None, activity.live_source(request_session(), user.org_id, name)
        )
    )


def _strip(
    user: SignedIn, scope: str, badge: tuple[str, str] | None, live: activity.Live
) -> Response:
    stamp, facts = live.stamp, live.facts
    seen = request.args.get("seen") or stamp
    drawn = request.args.get("drawn") or stamp
    answer = page(
        "_live.html",
        user,
        scope=scope,
        badge=badge,
        facts=facts,
        poll=POLL,
        url=url_for(request.endpoint or "", **(request.view_args or {}), seen=stamp, drawn=drawn),
        changed=drawn != stamp,
        as_of=now(),
    )
    if seen != stamp:
        answer.headers["HX-Trigger"] = "dg-activity"
    return answer


def _part(draw: Callable[[SignedIn], Response], unavailable: str = "_live.html") -> Response:
    """A part for htmx: 401 without a session (the page's script marks the part unavailable;
    a redirect would swap the sign-in page in), and while the store cannot be read, the part
    saying so (200, so that htmx swaps it in place of what it showed before)."""
    try:
        user = current()
        if user is None:
            return Response("signed out", status=401, mimetype="text/plain")
        return draw(user)
    except Exception as exc:
        down = store_unavailable(exc, database())
        if down is None:
            raise
        return page(
            unavailable,
            None,
            unavailable=down.message,
            scope=request.endpoint,
            badge=None,
            url=request.full_path,
            poll=POLL,
            as_of=now(),
            has_badge=request.endpoint in ("console.live_watch", "console.live_agent"),
        )
