"""Helpers of the replay tests (and of bench/replay_serve_bench.py): a payments API's OpenAPI
document, and files written into a fixture directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHARGE = {
    "type": "object",
    "required": ["amount", "currency"],
    "properties": {
        "id": {"type": "string", "readOnly": True},
        "amount": {"type": "integer", "minimum": 1},
        "currency": {"type": "string", "enum": ["usd", "eur"]},
        "note": {"type": "string", "nullable": True},
    },
}


def payments_spec(*, server: str = "https://api.example.com/api") -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "payments", "version": "2"},
        "servers": [{"url": server}],
        "paths": {
            "/v1/charges": {
                "get": {
                    "parameters": [
                        {
                            "name": "limit",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "integer", "maximum": 100},
                        }
                    ],
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/Charge"},
                                    }
                                }
                            },
                        }
                    },
                },
                "post": {
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Charge"}}
                        },
                    },
                    "responses": {
                        "201": {
                            "description": "created",
                            "content": {
                                "application/json": {
                                    "example": {"id": "ch_1", "amount": 500, "currency": "usd"}
                                }
                            },
                        }
                    },
                },
            },
            "/v1/charges/{id}": {
                "get": {
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Charge"}
                                }
                            },
                        }
                    },
                },
                "delete": {"responses": {"204": {"description": "gone"}}},
            },
            "/v1/charges/search": {
                "get": {
                    "security": [{"bearer": []}, {"apiKey": []}],
                    "responses": {"200": {"description": "ok", "content": {}}},
                },
            },
        },
        "components": {
            "schemas": {"Charge": CHARGE},
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
            },
        },
    }


def write(directory: Path, files: dict[str, str]) -> Path:
    for path, content in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    return directory
