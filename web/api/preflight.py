"""The run gate: `POST /api/preflight`."""

from __future__ import annotations

import orjson

from controller.gate import service
from web.api import REGISTRY
from web.routes import Call, Reply

route = REGISTRY.tagged("preflight")


@route(
    "POST /api/preflight",
    "Preflight: may this run start?",
    body=service.PreflightRequest,
    responses={200: service.PreflightResult, 409: service.PreflightResult},
    errors=(404,),
    lane=True,
)
def preflight(call: Call) -> Reply:
    """`allowed`, or the blocked watches with stable reason tokens and `agentActions`.

    `watchIds` (at most 100) has no policy: 200 with `allowed` true or false; ids the org does
    not have are blocked with `not_found`. `agentId` applies the agent's policy: 409 with
    `policyBlocked: true` when an enforcing policy blocks (never with `dryRun`); an unknown
    agent is 404. Every decision is recorded for the audit export (`decisionId`); a `dryRun`,
    the gate's break-glass, is also written to the audit log (`preflight.dry_run`)."""
    outcome = service.preflight(
        call.database, call.principal_required, call.body, call.now, call.started
    )
    return Reply(service.answer_status(outcome.decision), raw=orjson.dumps(outcome.answer()))
