"""A tool renamed by a real MCP server (the official SDK's, on 127.0.0.1) is one breaking
`tool-renamed` finding between two fetched snapshots (issue 45, point 2); the snapshots carry
the negotiated protocol version and the capabilities the diff compares (point 6)."""

from __future__ import annotations

from pathlib import Path

from controller.diffs import diff_mcp
from controller.sources.http import make_client
from controller.sources.mcp import fetch_mcp_snapshot
from tests.mcp_servers import COUNT, DELETE, SEARCH, SdkServer, full_surface


def test_a_renamed_tool_is_one_finding_on_its_old_name(tmp_path: Path) -> None:
    surface = full_surface(tmp_path / "surface.json")
    with make_client(allow_private=True) as client, SdkServer("streamable", surface) as server:
        before = fetch_mcp_snapshot(server.url, client=client)
        full_surface(surface, tools=[SEARCH, {**DELETE, "name": "delete-item"}, COUNT])
        after = fetch_mcp_snapshot(server.url, client=client)
    assert before["protocol_version"] == after["protocol_version"]
    assert "tools" in before["capabilities"] and before["capabilities"] == after["capabilities"]
    changes = diff_mcp(before, after)
    assert [(c.rule, c.severity.value, c.location and c.location.tool) for c in changes] == [
        ("tool-renamed", "breaking", "delete_item")
    ]
    assert changes[0].summary == "tool renamed from delete_item to delete-item"
