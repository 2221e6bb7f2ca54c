"""The vendor simulator's contracts and the script of their changes (pure data).

Two vendors: a payments REST API described by OpenAPI (stripe-like, served at
`/specs/stripe.json`) and a code-hosting MCP server (github-like, at `/mcp`). The script moves
them through one change of each kind driftgate classifies, then a vendor revert:

| stage | payments API | MCP server | what driftgate does |
|---|---|---|---|
| 0 baseline | v1 | v1 | first checks: the baselines |
| 1 breaking | refunds removed | v1 | drifted, incident, production agent killed, 409 |
| 2 warning | refunds removed | a tool's description rewritten | warning kept open |
| 3 info | refunds removed | a tool added | baseline advances by itself |
| 4 revert | v1 again | as in 3 | incident resolved by the revert |
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Stage:
    number: int
    name: str
    says: str  # what the vendor did, for the console
    api_version: int  # 1: with refunds, 2: without
    mcp_version: int  # 1, 2 (description rewritten) or 3 (plus a tool)


STAGES: tuple[Stage, ...] = (
    Stage(0, "baseline", "the vendors serve their first contracts", 1, 1),
    Stage(1, "breaking", "the payments API removed GET /v1/refunds/{refund}", 2, 1),
    Stage(2, "warning", "the MCP server rewrote the description of tool create_issue", 2, 2),
    Stage(3, "info", "the MCP server added tool list_pull_requests", 2, 3),
    Stage(4, "revert", "the payments API put GET /v1/refunds/{refund} back", 1, 3),
)
LAST = STAGES[-1].number


def _schema_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _get(summary: str, schema: str, *, param: str | None = None) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": summary,
        "responses": {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": _schema_ref(schema)}},
            }
        },
    }
    if param is not None:
        operation["parameters"] = [
            {"name": param, "in": "path", "required": True, "schema": {"type": "string"}}
        ]
    return operation


_API_V1: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Payments API (driftgate demo)", "version": "2024-06-20"},
    "servers": [{"url": "http://127.0.0.1:8090"}],
    "paths": {
        "/v1/charges": {
            "get": _get("List charges", "ChargeList"),
            "post": {
                "summary": "Create a charge",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {
                                "type": "object",
                                "required": ["amount", "currency"],
                                "properties": {
                                    "amount": {"type": "integer"},
                                    "currency": {"type": "string"},
                                    "customer": {"type": "string"},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {"application/json": {"schema": _schema_ref("Charge")}},
                    }
                },
            },
        },
        "/v1/charges/{charge}": {"get": _get("Retrieve a charge", "Charge", param="charge")},
        "/v1/refunds/{refund}": {"get": _get("Retrieve a refund", "Refund", param="refund")},
    },
    "components": {
        "schemas": {
            "Charge": {
                "type": "object",
                "required": ["id", "amount", "currency", "status"],
                "properties": {
                    "id": {"type": "string"},
                    "amount": {"type": "integer"},
                    "currency": {"type": "string"},
                    "status": {"type": "string", "enum": ["succeeded", "pending", "failed"]},
                },
            },
            "ChargeList": {
                "type": "object",
                "properties": {"data": {"type": "array", "items": _schema_ref("Charge")}},
            },
            "Refund": {
                "type": "object",
                "required": ["id", "amount", "charge"],
                "properties": {
                    "id": {"type": "string"},
                    "amount": {"type": "integer"},
                    "charge": {"type": "string"},
                },
            },
        }
    },
}


def openapi_document(version: int, base_url: str) -> dict[str, Any]:
    """The payments API's OpenAPI document at `version` (2: the refunds path removed)."""
    document = copy.deepcopy(_API_V1)
    document["servers"] = [{"url": base_url}]
    if version >= 2:
        del document["paths"]["/v1/refunds/{refund}"]
    return document


_TOOLS_V1: list[dict[str, Any]] = [
    {
        "name": "search_issues",
        "description": "Search issues in a repository.",
        "inputSchema": {
            "type": "object",
            "properties": {"repo": {"type": "string"}, "query": {"type": "string"}},
            "required": ["repo", "query"],
        },
    },
    {
        "name": "create_issue",
        "description": "Open an issue in a repository.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "repo": {"type": "string"},
                "title": {"type": "string"},
                "body": {"type": "string"},
            },
            "required": ["repo", "title"],
        },
    },
]

_NEW_TOOL: dict[str, Any] = {
    "name": "list_pull_requests",
    "description": "List the open pull requests of a repository.",
    "inputSchema": {
        "type": "object",
        "properties": {"repo": {"type": "string"}},
        "required": ["repo"],
    },
}


def mcp_tools(version: int) -> list[dict[str, Any]]:
    """The MCP server's tools at `version` (2: a description rewritten, 3: plus a tool)."""
    tools = copy.deepcopy(_TOOLS_V1)
    if version >= 2:
        tools[1]["description"] = (
            "Open an issue in a repository. Also closes every other open issue with the same title."
        )
    if version >= 3:
        tools.append(copy.deepcopy(_NEW_TOOL))
    return tools
