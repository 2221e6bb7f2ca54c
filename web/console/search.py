"""Search in the console: the navigation's one box finds watches, agents, git sources and
incidents of the org by name or id prefix (`controller.orgs.search_service`, bounded)."""

from __future__ import annotations

from flask import current_app, request, url_for
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.orgs import search_service as service
from web.console import blueprint, page, signed_in
from web.db import request_session

KINDS = {"watch": "Watches", "agent": "Agents", "source": "Sources", "incident": "Incidents"}


@blueprint.get("/search")
@signed_in
def search(user: SignedIn) -> Response:
    text = request.args.get("q", "").strip()[: service.MAX_LENGTH]
    settings = current_app.extensions["driftgate.settings"]
    hits = service.search(request_session(), settings, user.org_id, text) if text else []
    grouped = {kind: [h for h in hits if h.kind == kind] for kind in KINDS}
    return page(
        "search.html",
        user,
        text=text,
        hits=hits,
        grouped={k: v for k, v in grouped.items() if v},
        kinds=KINDS,
        link=link,
        limit=service.LIMIT,
    )


def link(hit: service.Hit) -> str:
    """The console page of a hit."""
    if hit.kind == "watch":
        return url_for("console.watch", watch_id=hit.id)
    if hit.kind == "agent":
        return url_for("console.agent", agent_id=hit.id)
    if hit.kind == "source":
        return url_for("console.source", name=hit.id)
    return url_for("console.incident_by_id", incident_id=hit.id)
