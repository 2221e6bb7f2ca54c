"""The HTTP API, one module per resource family; each declares its routes on `REGISTRY`
through its `route = REGISTRY.tagged(tag)`."""

from web.routes import Registry

REGISTRY = Registry()

from web.api import (  # noqa: E402,F401  (registration)
    agents,
    compat,
    destinations,
    diffruns,
    discovery,
    draftpr,
    drift,
    fuse,
    gitops,
    health,
    ingress,
    manifest,
    meta,
    org,
    portfolio,
    preflight,
    public,
    replay,
    summary,
    templates,
    trial,
    waivers,
    watches,
)
