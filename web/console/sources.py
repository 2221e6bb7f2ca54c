"""Git sources in the console: each source with its revisions, Ready / Stalled conditions and
the file:line problems of a bad commit (each opens the file at that line); reconcile now."""

from __future__ import annotations

from flask import current_app, request, url_for
from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.gitsources import service
from controller.settings import Settings
from web.console import action, blueprint, now, page, signed_in
from web.db import request_session


def _settings() -> Settings:
    settings: Settings = current_app.extensions["driftgate.settings"]
    return settings


@blueprint.get("/sources")
@signed_in
def sources(user: SignedIn) -> Response:
    listed = service.list_sources(request_session(), _settings(), user.org_id).sources
    return page("sources.html", user, sources=listed)


@blueprint.get("/sources/<name>")
@signed_in
def source(user: SignedIn, name: str) -> Response:
    found = service.get_source(request_session(), _settings(), user.org_id, name)
    return page("source.html", user, source=found)


@blueprint.get("/sources/<name>/file")
@signed_in
def source_file(user: SignedIn, name: str) -> Response:
    revision = request.args.get("revision", "")
    file = request.args.get("file", "")
    line = request.args.get("line", type=int)
    shown = service.source_file(request_session(), _settings(), user.org_id, name, revision, file)
    return page(
        "source_file.html", user, name=name, revision=revision, file=file, shown=shown, line=line
    )


@blueprint.post("/sources/<name>/reconcile")
@action
def reconcile(user: SignedIn, name: str) -> str:
    service.queue_reconcile(request_session(), _settings(), user.org_id, name, now())
    return url_for("console.source", name=name)
