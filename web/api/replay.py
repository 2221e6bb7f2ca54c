"""Replay fixtures (`/v1/replay/...`). See docs/replay.md."""

from __future__ import annotations

from controller.replay import service
from web.api import REGISTRY
from web.routes import Call, requires_product

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
