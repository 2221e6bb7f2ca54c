"""The hosted product's routes, mapped onto driftgate's services (`controller.compat`).

Each route here is an alias a hosted client calls (`fuseguard`, `mockdrift`, the MCP server's
`trigger_remediation`); its handler calls the same service as driftgate's own route and, where
the client reads another shape, maps the answer. Published with `x-driftgate-compat:
{client, aliasOf}`. Routes of the hosted control plane that a self-hosted driftgate does not
serve answer 501 `not_self_hosted` with the reason. See docs/compat.md.
"""

from __future__ import annotations

from controller.compat import service as compat
from controller.diffruns import service as diffruns
from controller.draftpr import service as draftpr
from controller.errors import NotSelfHosted
from controller.fuse import service as fuse
from controller.replay import service as replay
from web.api import REGISTRY
from web.api.replay import PRODUCT, fixture_catalog
from web.routes import Call, Reply, requires_plan, requires_product

route = REGISTRY.tagged("compat")


def alias(client: str, route: str) -> dict[str, str]:
    return {"client": client, "aliasOf": route}


@route(
    "POST /v1/fuseguard/events/batch",
    "fuseguard: record trip events in a batch",
    body=fuse.TripBatchIn,
    compat=alias("fuseguard", "POST /v1/fuse/trips/batch"),
)
def fuseguard_events_batch(call: Call) -> fuse.TripBatchOut:
    """`POST /v1/fuse/trips/batch` under fuseguard's name: each event is a trip, idempotent
    by its `idempotencyKey`."""
    return fuse.record_trip_batch(call.session, call.principal_required, call.body, call.now)


@route(
    "POST /v1/mockdrift/fixtures/from-watch",
    "mockdrift: a replay fixture of one of the org's drifts",
    body=replay.FromWatchIn,
    guards=(PRODUCT,),
    errors=(404, 422),
    compat=alias("mockdrift", "POST /v1/replay/fixtures/from-watch"),
)
def mockdrift_from_watch(call: Call) -> compat.HostedFixture:
    """`POST /v1/replay/fixtures/from-watch`, with the ids mockdrift caches beside the files
    (`watchId`, `fixtureId`, `eventId`)."""
    return compat.from_watch(call.session, call.org_id, call.body)


@route(
    "GET /v1/mockdrift/fixtures/catalog",
    "mockdrift: browse the replay catalog",
    auth="optional_key",
    query=replay.CatalogQuery,
    errors=(429,),
    compat=alias("mockdrift", "GET /v1/replay/fixtures/catalog"),
)
def mockdrift_catalog(call: Call) -> compat.HostedCatalog:
    """`GET /v1/replay/fixtures/catalog` as mockdrift reads it: the rows are `fixtures`, each
    with its `lane` (`oss` or `hosted`). The same rate limit, the same rows."""
    page = fixture_catalog(call)
    assert isinstance(page, replay.CatalogPage)
    return compat.hosted_catalog(page)


@route(
    "POST /v1/mockdrift/fixtures/install",
    "mockdrift: install a catalog fixture",
    body=replay.InstallIn,
    guards=(requires_plan("replay_install"), PRODUCT),
    errors=(404,),
    compat=alias("mockdrift", "POST /v1/replay/fixtures/install"),
)
def mockdrift_install(call: Call) -> compat.HostedFixture:
    """`POST /v1/replay/fixtures/install`, answered as mockdrift writes it to disk:
    `{fixture: {beforeSchema, afterSchema, mockResponses, metadata, expect}, files, digest}`."""
    return compat.install(call.session, call.body, call.org_id)


@route(
    "POST /api/watches/<watch_id>/trigger_remediation",
    "driftguard MCP server: open a watch's remediation draft pull requests",
    body=compat.TriggerRemediationIn,
    responses={200: draftpr.RemediationOut, 202: draftpr.RemediationOut},
    guards=(requires_product(draftpr.PRODUCT),),
    errors=(422,),
    compat=alias("driftguard-mcp", "POST /v1/draftpr/remediate"),
)
def trigger_remediation(call: Call) -> Reply:
    """`POST /v1/draftpr/remediate` for the watch in the path (`driftEventId` optional)."""
    answer, made = compat.trigger_remediation(
        call.session, call.principal_required, call.path["watch_id"], call.body, call.now
    )
    return Reply(202 if made else 200, answer)


@route(
    "POST /api/openapi/diff/remote",
    "driftguard CLI: diff two OpenAPI documents and keep the result",
    body=diffruns.DiffRunIn,
    status=201,
    errors=(413, 422),
    compat=alias("driftguard-cli", "POST /api/openapi/diffs"),
)
def openapi_diff_remote(call: Call) -> compat.HostedDiffRun:
    """`POST /api/openapi/diffs` under the name `openapi-diff --remote` calls, with `runId`."""
    run = diffruns.create(call.session, call.principal_required, call.body, call.base_url, call.now)
    return compat.hosted_diff_run(run)


def _hosted_only(method: str, path: str, client: str, name: str) -> None:
    def refuse(call: Call) -> Reply:
        raise NotSelfHosted(
            f"{method} {path} is a route of the hosted control plane, refused by design: "
            f"{compat.HOSTED_ONLY[path]} (docs/compat.md)"
        )

    refuse.__name__ = name
    refuse.__doc__ = f"Refused by design (501 `not_self_hosted`): {compat.HOSTED_ONLY[path]}."
    route(
        f"{method} {path}",
        f"{client}: refused by design on a self-hosted driftgate",
        auth="none",
        responses={},
        errors=(501,),
        compat={"client": client, "refused": "not_self_hosted"},
    )(refuse)


_hosted_only("POST", "/v1/fuseguard/devices/enroll", "fuseguard", "fuseguard_device_enroll")
_hosted_only("POST", "/v1/fuseguard/devices/heartbeat", "fuseguard", "fuseguard_heartbeat")
_hosted_only("POST", "/v1/fuseguard/devices/trace", "fuseguard", "fuseguard_trace_upload")
_hosted_only("GET", "/v1/fuseguard/policy/bundle", "fuseguard", "fuseguard_policy_bundle")
_hosted_only("POST", "/api/usage/events", "mockdrift", "mockdrift_usage_events")
