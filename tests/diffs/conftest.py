"""Documents the diff tests build: an A2A agent card and its skills, an MCP snapshot and its
tools (each with a default shape a test overrides)."""

from __future__ import annotations

from typing import Any


def skill(skill_id: str, **kw: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return {
        "id": skill_id,
        "name": skill_id.title(),
        "description": f"{skill_id} skill",
        "tags": ["billing"],
        "examples": ["refund order 42"],
        "inputSchema": schema,
        **kw,
    }


def card(skills: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    base = {
        "protocolVersion": "0.3.0",
        "name": "Billing agent",
        "description": "Refunds and invoices",
        "url": "https://billing.example/a2a",
        "version": "1.0.0",
        "capabilities": {"streaming": True, "pushNotifications": True},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": skills,
    }
    return {**base, **kw}


def snap(tools: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    base = {
        "server_info": {"name": "s", "version": "1"},
        "protocol_version": "2025-06-18",
        "capabilities": {"tools": {}},
        "tools": tools,
    }
    return {**base, **kw}


def tool(name: str, **kw: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return {"name": name, "description": f"{name} tool", "inputSchema": schema, **kw}
