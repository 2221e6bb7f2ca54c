"""Ask in the console: a question box, the answer in words, its figures and its citations as
links to the console's pages."""

from __future__ import annotations

from flask import redirect, request, url_for
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.portfolio import service as portfolio
from controller.services import drift
from web.body import validate
from web.console import blueprint, now, page, signed_in
from web.db import request_session


@blueprint.get("/ask")
@signed_in
def ask(user: SignedIn) -> Response:
    question = request.args.get("q", "").strip()
    answer = None
    if question:
        data = validate(portfolio.AskIn, {"question": question}, "query")
        answer = portfolio.ask(request_session(), user.org_id, user.plan, False, data, now())
    return page("ask.html", user, question=question, answer=answer, links=_links(answer))


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
