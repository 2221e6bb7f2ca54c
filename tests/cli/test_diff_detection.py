"""`driftgate diff` tells an MCP tool list by its shape: a bare `tools/list` result, that
result in its JSON-RPC answer, and the surface capture are MCP, so a removed tool is breaking
without `--type` (issue 45, point 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import main
from controller.diffruns.offline_service import detect_type

SEARCH = {"name": "search", "description": "Search", "inputSchema": {"type": "object"}}
FETCH = {"name": "fetch", "description": "Fetch a URL", "inputSchema": {"type": "object"}}


def rpc(result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "result": result}


def capture(tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "mcp-surface-capture/v1", "tools": tools, "prompts": None}


@pytest.mark.parametrize(
    ("document", "kind"),
    [
        pytest.param({"tools": [SEARCH, FETCH]}, "mcp", id="tools-list-result"),
        pytest.param({"tools": [SEARCH], "nextCursor": "2"}, "mcp", id="one-page"),
        pytest.param({"tools": []}, "mcp", id="empty-list"),
        pytest.param(rpc({"tools": [SEARCH]}), "mcp", id="json-rpc-answer"),
        pytest.param(capture([SEARCH]), "mcp", id="surface-capture"),
        pytest.param({"serverInfo": {"name": "s"}, "tools": []}, "mcp", id="snapshot"),
        # What is not an MCP tool list stays a JSON sample.
        pytest.param({"tools": [{"name": "hammer"}]}, "json", id="no-input-schema"),
        pytest.param({"tools": [], "count": 0}, "json", id="empty-with-other-keys"),
        pytest.param({"tools": "none"}, "json", id="not-a-list"),
        pytest.param(rpc({"items": []}), "json", id="other-json-rpc-result"),
        pytest.param({"jsonrpc": "2.0", "id": 1, "error": {"code": -1}}, "json", id="rpc-error"),
    ],
)
def test_detection_by_shape(document: Any, kind: str) -> None:
    assert detect_type(document) == kind


def run(tmp_path: Path, before: Any, after: Any, *args: str) -> Result:
    paths = []
    for name, doc in (("before", before), ("after", after)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    return CliRunner().invoke(
        main, ["diff", *paths, "--format", "json", *args], catch_exceptions=False
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param({"tools": [SEARCH, FETCH]}, {"tools": [SEARCH]}, id="bare-lists"),
        pytest.param(rpc({"tools": [SEARCH, FETCH]}), rpc({"tools": [SEARCH]}), id="json-rpc"),
        pytest.param(capture([SEARCH, FETCH]), {"tools": [SEARCH]}, id="capture-to-list"),
        pytest.param({"tools": [SEARCH, FETCH]}, rpc({"tools": [SEARCH]}), id="list-to-rpc"),
    ],
)
def test_a_removed_tool_is_breaking_without_type(tmp_path: Path, before: Any, after: Any) -> None:
    result = run(tmp_path, before, after)
    body = json.loads(result.output)
    assert result.exit_code == 1 and body["type"] == "mcp"
    assert [(c["rule"], c["location"]) for c in body["changes"]] == [
        ("tool-removed", {"tool": "fetch"})
    ]


def test_type_mcp_forces_the_reading(tmp_path: Path) -> None:
    # An empty list beside other keys is not told an MCP list; `--type mcp` reads it as one.
    before, after = {"tools": [SEARCH], "count": 1}, {"tools": [], "count": 0}
    assert run(tmp_path, before, after).exit_code == 2  # mcp and json: told apart
    forced = run(tmp_path, before, after, "--type", "mcp")
    assert forced.exit_code == 1 and json.loads(forced.output)["type"] == "mcp"
