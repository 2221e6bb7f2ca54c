"""A diff run's page: the link `POST /api/openapi/diffs` answers (the hosted CLI's
`openapi-diff --remote` prints it), with the changes told as a drift event's are."""

from __future__ import annotations

from werkzeug.wrappers import Response

from controller.accounts.service import SignedIn
from controller.diffruns import service
from web.console import blueprint, page, signed_in
from web.console.watches import grouped
from web.db import request_session


@blueprint.get("/diffs/<run_id>")
@signed_in
def diff_run(user: SignedIn, run_id: str) -> Response:
    run = service.run_out(service.get(request_session(), user.org_id, run_id), "/")
    return page("diff_run.html", user, run=run, groups=grouped(run.changes))
