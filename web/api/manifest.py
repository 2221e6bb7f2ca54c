"""A2A coverage: the hosted agents manifest's watches against the org's
(`controller.agentmanifest`). See docs/api.md."""

from __future__ import annotations

from pydantic import RootModel

from controller.agentmanifest import service
from web.api import REGISTRY
from web.routes import Call, ErrorEnvelope, Reply, requires_plan

route = REGISTRY.tagged("discovery")


class A2aCoverageRefusal(RootModel[service.A2aCoverageMissing | ErrorEnvelope]):
    """422: manifest watches the org does not have (`missing_watches`), or a manifest that
    matches the schema but fails a check no schema states (`validation_error`, with details)."""


@route(
    "POST /api/a2a/coverage/assert",
    "Fail when a watch of an agents manifest is not a watch of the org",
    body=service.A2aCoverageIn,
    responses={200: service.A2aCoverageOk, 422: A2aCoverageRefusal},
    guards=(requires_plan("a2a_coverage_assert"),),
    errors=(400,),
)
def a2a_coverage_assert(call: Call) -> Reply:
    """200 `{ok: true, ...}` when every watch the manifest (the hosted `agents.yaml` as JSON)
    declares is a watch of the org, matched by URL and type family (`openapi`, `rest` and `api`
    are one), a reference by name, id or URL;
    else 422 `{ok: false, error: "missing_watches", missingWatchUrls, agents[].missingWatches}`.
    Read-only. A manifest that `driftgate validate` would refuse is `validation_error` with
    each problem's pointer (`/manifest/agents/0/policy`) and message: 400 when it does not
    match the published schema, 422 for what no schema states (a duplicate id, an unknown
    policy, an a2a.cardUrl without its a2a_card watch). `repo` (or the
    `X-DriftGuard-CI-Repo` header) is echoed, not stored."""
    answer = service.assert_a2a_coverage(
        call.session, call.org_id, call.body, call.headers.get(service.REPO_HEADER)
    )
    return Reply(200 if isinstance(answer, service.A2aCoverageOk) else 422, answer)
