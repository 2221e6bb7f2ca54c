"""The HTTP API, one module per resource family; each registers its routes on `REGISTRY`."""

from web.routes import Registry

REGISTRY = Registry()

from web.api import drift, gitops, health, meta, org, public, templates, trial, watches  # noqa: E402,F401  (registration)
