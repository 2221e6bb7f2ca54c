"""`GET /openapi.json`: the interface description, built from the route registry."""

from __future__ import annotations

from typing import Any

from pydantic import RootModel

from web.api import REGISTRY
from web.routes import Call

route = REGISTRY.tagged("meta")


class JsonDocument(RootModel[dict[str, Any]]):
    pass


@route(
    "GET /openapi.json",
    "OpenAPI 3.1 description of this API",
    auth="none",
    responses={200: None},
    raw_response={"application/json": {"schema": {"type": "object"}}},
)
def openapi_document(call: Call) -> JsonDocument:
    """The machine-readable description of every route, generated from the code."""
    return JsonDocument(REGISTRY.openapi(call.settings))
