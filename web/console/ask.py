"""Ask in the console: a question box with suggested questions, the answer in words, its
figures and its citations as links to the console's pages.

Live answers need the Pro plan. A free org's console gives no fixture figures (they would
sit beside its real incidents): it says plainly that live answers need Pro and shows how
the question was read, what it would count and over which window and filters.
"""

from __future__ import annotations

from flask import redirect, request, url_for
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.drift import service as drift
from controller.model.plans import allows, minimum_plan
from controller.portfolio import service as portfolio
from web.body import validate
from web.console import blueprint, now, page, signed_in
from web.db import request_session

USES = {
    "breaking_drift": "drift events with breaking changes, by vendor, the newest cited",
    "mcp_health": "the health of the MCP watches: failing, stale and never-checked servers",
    "mttr": "incidents resolved in the window, from opening to resolution, by vendor",
    "hotspots": "breaking changes by vendor, and the watches with the most",
    "coverage_gaps": "watches never run, with stale checks, or failing",
}
SUGGESTED = (
    "which watches drifted this week?",
    "what broke in the last 30 days?",
    "is any MCP server unhealthy?",
    "MTTR this quarter",
    "which vendors broke us most this quarter?",
    "which watches are stale?",
)


@blueprint.get("/ask")
@signed_in
def ask(user: SignedIn) -> Response:
    question = request.args.get("q", "").strip()
    live = allows(user.plan, "live_ask")
    answer = reading = None
    if question:
        data = validate(portfolio.AskIn, {"question": question}, "query")
        if live:
            answer = portfolio.ask(request_session(), user.org_id, user.plan, False, data, now())
        else:
            reading = portfolio.read_question(request_session(), user.org_id, data.question)
    return page(
        "ask.html",
        user,
        question=question,
        live=live,
        minimum=minimum_plan("live_ask"),
        answer=answer,
        reading=reading,
        uses=_uses(reading),
        intents=portfolio.INTENTS,
        examples=portfolio.EXAMPLES,
        suggested=SUGGESTED,
        links=_links(answer),
    )


def _uses(reading: portfolio.Reading | None) -> str:
    """What a read question would count, in words."""
    if reading is None or reading.intent is None:
        return ""
    if reading.any_severity:
        return "drift events with breaking or warning changes, the newest cited"
    return USES[reading.intent]


def _links(answer: portfolio.AskOut | None) -> dict[str, str]:
    if answer is None:
        return {}
    targets = {
        "watch": lambda i: url_for("console.watch", watch_id=i),
        "drift_event": lambda i: url_for("console.event_by_id", event_id=i),
        "incident": lambda i: url_for("console.incident_by_id", incident_id=i),
    }
    return {c.id: targets[c.kind](c.id) for c in answer.citations if c.kind in targets}


@blueprint.get("/events/<event_id>")
@signed_in
def event_by_id(user: SignedIn, event_id: str) -> Response:
    found = drift.get_event(request_session(), user.org_id, event_id)
    return redirect(url_for("console.event", watch_id=found.watch_id, event_id=event_id))


@blueprint.get("/incidents/<incident_id>")
@signed_in
def incident_by_id(user: SignedIn, incident_id: str) -> Response:
    watch_id = drift.incident_watch(request_session(), user.org_id, incident_id)
    return redirect(url_for("console.watch", watch_id=watch_id))
