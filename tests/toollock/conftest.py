"""Helpers of the tool-lock tests: an MCP surface as driftgate's fetcher stores it, and a
hosted lock written as the hosted client writes it (`McpLockfileV1`: whole descriptions and
input schemas, sorted by name, two-space JSON)."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def tool(name: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "description": f"{name} things", "inputSchema": SCHEMA, **kw}


def surface(tools: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    base = {
        "server_info": {"name": "catalog", "version": "1"},
        "protocol_version": "2025-06-18",
        "capabilities": {"tools": {"listChanged": True}},
        "instructions": None,
        "tools": tools,
        "prompts": None,
        "resources": None,
        "resource_templates": None,
    }
    return {**base, **kw}


def hosted_lock(servers: dict[str, tuple[str, list[dict[str, Any]]]]) -> bytes:
    """The hosted client's lock of `servers` (name -> (url, tools))."""
    document = {
        "lockfileVersion": 1,
        "generator": "@drift-guard/driftguard",
        "generatedAt": "2026-11-30T10:00:00.000Z",
        "servers": [
            {
                "name": name,
                "transport": "streamable-http",
                "url": url,
                "tools": [
                    {k: t[k] for k in ("name", "description", "inputSchema") if k in t}
                    for t in sorted(tools, key=lambda t: str(t["name"]))
                ],
            }
            for name, (url, tools) in sorted(servers.items())
        ],
    }
    return (json.dumps(document, indent=2) + "\n").encode()
