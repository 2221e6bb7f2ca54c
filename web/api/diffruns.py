"""Diff runs: two OpenAPI documents diffed on request and kept (`controller.diffruns`)."""

from __future__ import annotations

from controller.diffruns import service
from web.api import REGISTRY
from web.routes import Call, Reply


@REGISTRY.route(
    "POST",
    "/api/openapi/diffs",
    summary="Diff two OpenAPI documents and keep the result",
    tag="diffs",
    body=service.DiffRunIn,
    responses={201: service.DiffRunOut},
    errors=(413, 422),
)
def create_diff_run(call: Call) -> Reply:
    """Diffs `before` against `after` with the engine of `driftgate diff` (grouped by cause,
    each change with its hint) and keeps the run: 201 with the changes and `url`, the run's
    page in the console. Nothing outside the two documents is read: a `$ref` to another file
    or URL is 422 `invalid_contract`, as is a document that is not OpenAPI 2 or 3."""
    run = service.create(call.session, call.principal_required, call.body, call.base_url, call.now)
    return Reply(201, run)


@REGISTRY.route(
    "GET",
    "/api/openapi/diffs/<run_id>",
    summary="A diff run",
    tag="diffs",
    responses={200: service.DiffRunOut},
    errors=(404,),
)
def get_diff_run(call: Call) -> service.DiffRunOut:
    """The run as `POST /api/openapi/diffs` answered it; another org's run is a 404."""
    run = service.get(call.session, call.org_id, call.path["run_id"])
    return service.run_out(run, call.base_url)
