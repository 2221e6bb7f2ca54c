"""The run gate: `POST /api/preflight`."""

from __future__ import annotations

import time

import orjson
from flask import Response, g

from controller.services import preflight as service
from web.api import REGISTRY
from web.db import database
from web.routes import Call


@REGISTRY.route(
    "POST",
    "/api/preflight",
    summary="Preflight: may this run start?",
    tag="preflight",
    body=service.PreflightRequest,
    responses={200: service.PreflightResult, 409: service.PreflightResult},
    errors=(404,),
)
def preflight(call: Call) -> Response:
    """`allowed`, or the blocked watches with stable reason tokens and `agentActions`.

    `watchIds` (at most 100) has no policy: 200 with `allowed` true or false; ids the org does
    not have are blocked with `not_found`. `agentId` applies the agent's policy: 409 with
    `policyBlocked: true` when an enforcing policy blocks (never with `dryRun`); an unknown
    agent is 404. Every decision is recorded for the audit export (`decisionId`)."""
    started = g.get("started") or time.perf_counter()
    status, answer = service.preflight(
        database(), call.principal_required, call.body, call.now, started
    )
    return Response(orjson.dumps(answer), status=status, mimetype="application/json")
