"""The org's waivers (`.driftgate/waivers.yaml` of its git sources): read only, since they
live in git. See docs/gitops-files.md, "waivers.yaml"."""

from __future__ import annotations

from controller.waivers import service
from web.api import REGISTRY
from web.routes import Call

route = REGISTRY.tagged("sources")


@route("GET /api/waivers", "The org's waivers, with what each covers")
def list_waivers(call: Call) -> service.WaiverList:
    """Every waiver the org's git sources declare: its watch glob, rule and where, owner,
    reason and expiry, whether it has expired (from its `expires` day, 00:00 UTC, it no longer
    applies), the org's watches it applies to and the findings of their current comparisons
    it matches."""
    return service.list_waivers(call.session, call.principal_required, call.now)
