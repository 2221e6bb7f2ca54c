"""Diff runs: two OpenAPI documents diffed on request and kept (`controller.diffruns`)."""

from __future__ import annotations

from controller.diffruns import service
from web.api import REGISTRY
from web.routes import Call

route = REGISTRY.tagged("diffs")


@route(
    "POST /api/openapi/diffs",
    "Diff two OpenAPI documents and keep the result",
    body=service.DiffRunIn,
    status=201,
    errors=(413, 422),
)
def create_diff_run(call: Call) -> service.DiffRunOut:
    """Diffs `before` against `after` with the engine of `driftgate diff` (grouped by cause,
    each change with its hint) and keeps the run: 201 with the changes and `url`, the run's
    page in the console. Nothing outside the two documents is read: a `$ref` to another file
    or URL is 422 `invalid_contract`, as is a document that is not OpenAPI 2 or 3."""
    return service.create(call.session, call.principal_required, call.body, call.base_url, call.now)


@route("GET /api/openapi/diffs/<run_id>", "A diff run", errors=(404,))
def get_diff_run(call: Call) -> service.DiffRunOut:
    """The run as `POST /api/openapi/diffs` answered it; another org's run is a 404."""
    run = service.get(call.session, call.org_id, call.path["run_id"])
    return service.run_out(run, call.base_url)
