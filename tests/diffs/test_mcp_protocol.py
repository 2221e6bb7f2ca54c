"""MCP protocol drift: the server's protocol version and capabilities, with their sub-flags,
are compared; a snapshot without them (stored before, or a bare tool list) is no evidence of
a change (issue 45, point 6)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.diffs import diff_mcp
from tests.diffs.conftest import snap, tool

TOOLS = [tool("a")]


def found(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (c.rule, c.severity.value, c.path)
        for c in diff_mcp(before, after)
        if not c.rule.startswith("tool-")
    ]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param(
            {"protocol_version": "2025-06-18"},
            {"protocol_version": "2025-11-25"},
            [("protocol-version-changed", "info", "/protocol_version")],
            id="newer-version-info",
        ),
        pytest.param(
            {"protocol_version": "2025-11-25"},
            {"protocol_version": "2025-03-26"},
            [("protocol-version-downgraded", "warning", "/protocol_version")],
            id="older-version-warning",
        ),
        pytest.param(
            {"protocol_version": None},
            {"protocol_version": "2025-11-25"},
            [],
            id="stored-without-version",
        ),
        pytest.param(
            {"capabilities": {"tools": {}, "logging": {}}},
            {"capabilities": {"tools": {}}},
            [("capability-removed-minor", "warning", "/capabilities/logging")],
            id="logging-removed-warning",
        ),
        pytest.param(
            {"capabilities": {"tools": {}, "completions": {}}},
            {"capabilities": {"tools": {}}},
            [("capability-removed-minor", "warning", "/capabilities/completions")],
            id="completions-removed-warning",
        ),
        pytest.param(
            {"capabilities": {"tools": {}, "prompts": {}}, "prompts": []},
            {"capabilities": {"tools": {}}},
            [("capability-removed", "breaking", "/capabilities/prompts")],
            id="prompts-removed-breaking",
        ),
        pytest.param(
            {"capabilities": {"tools": {"listChanged": True}}},
            {"capabilities": {"tools": {}}},
            [("capability-flag-removed", "warning", "/capabilities/tools/listChanged")],
            id="list-changed-off-warning",
        ),
        pytest.param(
            {"capabilities": {"tools": {}, "resources": {"subscribe": True, "listChanged": True}}},
            {"capabilities": {"tools": {}, "resources": {"listChanged": True}}},
            [("capability-flag-removed", "warning", "/capabilities/resources/subscribe")],
            id="subscribe-off-warning",
        ),
        pytest.param(
            {"capabilities": {"tools": {}}},
            {"capabilities": {"tools": {"listChanged": True}}},
            [("capability-flags-changed", "info", "/capabilities/tools")],
            id="list-changed-on-info",
        ),
        pytest.param(
            {"capabilities": {"tools": {"listChanged": True}}},
            {"capabilities": {"tools": {"listChanged": False, "x": True}}},
            [
                ("capability-flag-removed", "warning", "/capabilities/tools/listChanged"),
                ("capability-flags-changed", "info", "/capabilities/tools"),
            ],
            id="one-off-one-on",
        ),
        pytest.param(
            {"capabilities": {"tools": {}, "tasks": {"cancel": {}, "list": {}}}},
            {"capabilities": {"tools": {}, "tasks": {"list": {}}}},
            [("capability-flag-removed", "warning", "/capabilities/tasks/cancel")],
            id="nested-flag-off",
        ),
        pytest.param(
            {"capabilities": None},
            {"capabilities": {"tools": {}, "logging": {}}},
            [],
            id="stored-without-capabilities",
        ),
    ],
)
def test_protocol_and_capabilities(
    before: dict[str, Any], after: dict[str, Any], expected: list[Any]
) -> None:
    assert found(snap(TOOLS, **before), snap(TOOLS, **after)) == expected


def test_a_bare_tool_list_against_a_snapshot_compares_the_tools_only() -> None:
    full = snap(TOOLS, instructions="Use a.", serverInfo={"name": "s", "version": "2"})
    assert diff_mcp({"tools": TOOLS}, full) == []
    assert diff_mcp(full, {"tools": TOOLS}) == []
    (removed,) = diff_mcp(full, {"tools": []})
    assert removed.rule == "tool-removed"
