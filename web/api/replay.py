"""Replay fixtures (`/v1/replay/...`). See docs/replay.md."""

from __future__ import annotations

from flask import Response

from controller.replay import service
from web.api import REGISTRY
from web.routes import Call, Reply, requires_plan, requires_product

route = REGISTRY.tagged("replay")

PRODUCT = requires_product(service.PRODUCT)


@route(
    "POST /v1/replay/fixtures/from-watch",
    "A replay fixture of one of the org's drifts",
    body=service.FromWatchIn,
    guards=(PRODUCT,),
    errors=(404, 422),
)
def fixture_from_watch(call: Call) -> service.FixtureOut:
    """The fixture of the watch's drift event (`driftEventId`, or `eventId`; default: the
    latest): before and after contracts from the stored snapshots, mock responses shaped by
    the after contract, `cloud-meta.json`, and the digest of the files (the same drift, the
    same bytes). A watch with no drift gives before = after = the baseline. 404 `Watch not
    found` / `Drift event not found` for another org's or an unknown one."""
    return service.from_watch(call.session, call.org_id, call.body)


@route(
    "GET /v1/replay/fixtures/catalog",
    "Browse the replay catalog",
    auth="optional_key",
    query=service.CatalogQuery,
    errors=(429,),
)
def fixture_catalog(call: Call) -> service.CatalogPage:
    """Public: the catalog's rows (`oss-curated`: shipped with driftgate, from real MCP server
    releases; `hosted-curated`: fixtures orgs published from their drifts, the public ones and,
    with a key, the caller's org's own; `hosted-stub`: placeholders, not vendor-verified),
    filtered by `vendor`, `watchType`, `contentKind`, `tag` and words (`q`), `limit` a page
    (`nextCursor`); rate limited per client address."""
    call.rate_limit("replay-catalog", per_minute=600, burst=120)
    org_id = call.principal.org_id if call.principal is not None else None
    return service.catalog_page(call.session, call.query, org_id)


@route(
    "POST /v1/replay/fixtures/install",
    "Install a catalog fixture",
    body=service.InstallIn,
    out=service.InstalledOut,
    guards=(requires_plan("replay_install"), PRODUCT),
    errors=(404,),
)
def fixture_install(call: Call) -> Reply | Response:
    """A catalog fixture's files without a watch (Pro or higher, and `replay_cloud`): a JSON
    map of path to content, or a tar.gz with `Accept: application/gzip`."""
    installed = service.install(call.session, call.body, call.org_id)
    if "application/gzip" in (call.headers.get("Accept") or ""):
        archive = service.tar_gz(installed.files, installed.id)
        return Response(archive, mimetype="application/gzip")
    return Reply(200, installed)


@route(
    "POST /v1/replay/fixtures/publish",
    "Publish a drift's fixture to the catalog",
    body=service.PublishIn,
    guards=(PRODUCT,),
    errors=(404, 422),
)
def fixture_publish(call: Call) -> service.PublishedOut:
    """Publish the fixture of one of the org's drift events (`driftEventId`/`eventId`, default
    the latest) to the catalog as `hosted-curated`: visible to the org alone, or to every
    caller with `public: true`. Publishing the same drift again updates its row."""
    return service.publish(call.session, call.principal_required, call.body, call.now)


@route("GET /v1/replay/fixtures/published", "The org's published fixtures", guards=(PRODUCT,))
def fixtures_published(call: Call) -> service.PublishedList:
    """The fixtures the org published, newest first, public or not."""
    return service.published(call.session, call.org_id)


@route(
    "DELETE /v1/replay/fixtures/published/<row_id>",
    "Withdraw a published fixture",
    guards=(PRODUCT,),
)
def fixture_unpublish(call: Call) -> Reply:
    """Remove one of the org's published fixtures from the catalog (`hosted-<id>`); another
    org's is 404."""
    service.unpublish(call.session, call.principal_required, call.path["row_id"])
    return Reply(204)
