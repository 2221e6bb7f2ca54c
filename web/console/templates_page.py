"""Templates and watch sets in the console; launching a watch from a template."""

from __future__ import annotations

from flask import current_app, redirect, request, url_for
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.agents import templates_service as service
from controller.notifications import service as notifications
from controller.watches import sets_service as watch_sets
from web.body import validate
from web.console import action, blueprint, page, signed_in
from web.db import request_session


@blueprint.get("/templates")
@signed_in
def templates(user: SignedIn) -> Response:
    session = request_session()
    return page(
        "templates.html",
        user,
        templates=service.list_templates(session, user.org_id).templates,
        sets=watch_sets.list_sets(session, user.org_id).watch_sets,
    )


@blueprint.post("/templates/launch")
@action
def launch(user: SignedIn) -> Response:
    form = request.form
    data = validate(
        service.LaunchFromTemplate,
        {
            key: value
            for key, value in {
                "templateId": form.get("templateId", ""),
                "name": form.get("name", "").strip() or None,
                "url": form.get("url", "").strip() or None,
            }.items()
            if value is not None
        },
        "form",
    )
    session = request_session()
    interval = notifications.default_interval(session, user.org_id)
    box = current_app.extensions["driftgate.secret_box"]
    watch, _ref, _agent = service.launch(
        session, user.principal(), data, box, default_interval=interval
    )
    return redirect(url_for("console.watch", watch_id=watch.id))
