"""Replay fixtures (`/v1/replay/...`). See docs/replay.md."""

from __future__ import annotations

from flask import Response

from controller.replay import service
from web.api import REGISTRY
from web.routes import Call, Reply, requires_plan, requires_product

PRODUCT = requires_product(service.PRODUCT)


@REGISTRY.route(
    "POST",
    "/v1/replay/fixtures/from-watch",
    summary="A replay fixture of one of the org's drifts",
    tag="replay",
    body=service.FromWatchIn,
    responses={200: service.FixtureOut},
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


@REGISTRY.route(
    "GET",
    "/v1/replay/fixtures/catalog",
    summary="Browse the replay catalog",
    tag="replay",
    auth="none",
    query=service.CatalogQuery,
    responses={200: service.CatalogPage},
    errors=(429,),
)
def fixture_catalog(call: Call) -> service.CatalogPage:
    """Public: the catalog's rows (`oss-curated`: shipped with driftgate, from real MCP server
    releases; `hosted-stub`: placeholders, not vendor-verified), filtered by `vendor`,
    `watchType`, `contentKind`, `tag` and words (`q`), `limit` a page (`nextCursor`); rate
    limited per client address."""
    call.rate_limit("replay-catalog", per_minute=600, burst=120)
    return service.catalog_page(call.query)


@REGISTRY.route(
    "POST",
    "/v1/replay/fixtures/install",
    summary="Install a catalog fixture",
    tag="replay",
    body=service.InstallIn,
    responses={200: service.InstalledOut},
    guards=(requires_plan("pro"), PRODUCT),
    errors=(404,),
)
def fixture_install(call: Call) -> Reply | Response:
    """A catalog fixture's files without a watch (Pro or higher, and `replay_cloud`): a JSON
    map of path to content, or a tar.gz with `Accept: application/gzip`."""
    installed = service.install(call.body)
    if "application/gzip" in (call.headers.get("Accept") or ""):
        archive = service.tar_gz(installed.files, installed.id)
        return Response(archive, mimetype="application/gzip")
    return Reply(200, installed)
