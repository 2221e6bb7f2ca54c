"""Small OpenAPI documents for tests, with the knobs the tests turn."""

from __future__ import annotations

import json
from typing import Any


def charges_spec(
    *,
    required: tuple[str, ...] = ("id", "amount"),
    status_enum: tuple[str, ...] = ("paid", "failed"),
    refunds: bool = True,
    description: str = "A charge",
) -> dict[str, Any]:
    paths: dict[str, Any] = {
        "/v1/charges/{id}": {
            "get": {
                "operationId": "getCharge",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Charge"}}
                        },
                    }
                },
            }
        }
    }
    if refunds:
        paths["/v1/refunds"] = {"get": {"responses": {"200": {"description": "ok"}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "pay", "version": "1"},
        "paths": paths,
        "components": {
            "schemas": {
                "Charge": {
                    "type": "object",
                    "description": description,
                    "required": list(required),
                    "properties": {
                        "id": {"type": "string"},
                        "amount": {"type": "integer"},
                        "status": {"type": "string", "enum": list(status_enum)},
                        "parent": {"$ref": "#/components/schemas/Charge"},
                    },
                }
            }
        },
    }


def as_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc)
