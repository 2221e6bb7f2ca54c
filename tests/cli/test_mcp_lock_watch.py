"""`driftgate mcp lock --server NAME` and `verify --server NAME` without a configuration: the
org's MCP watch of that name, looked up through the API (a live server on 127.0.0.1), is the
server locked and verified (the official SDK on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli.commands.mcp  # noqa: F401 - loaded before the test changes directory
from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.mcp_servers import COUNT, SEARCH, SdkServer, full_surface
from tests.servers import WsgiServer


def test_a_watch_names_the_server(
    api_server: WsgiServer, acme: OrgKey, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    surface = full_surface(tmp_path / "surface.json")
    monkeypatch.chdir(tmp_path)
    with SdkServer("streamable", surface) as server:
        created = cli(
            api_server.url, acme.key, "watches", "create", "catalog", server.url, "--type", "mcp"
        )
        assert created.exit_code == 0, created.output
        locked = cli(api_server.url, acme.key, "mcp", "lock", "--server", "catalog")
        assert locked.exit_code == 0, locked.output
        lock = json.loads((tmp_path / ".driftgate" / "mcp.lock").read_text())
        assert sorted(lock["servers"]["catalog"]["tools"]) == ["count", "delete_item", "search"]
        assert cli(api_server.url, acme.key, "mcp", "verify", "--server", "catalog").exit_code == 0
        full_surface(surface, tools=[SEARCH, COUNT])
        drifted = cli(api_server.url, acme.key, "mcp", "verify", "--server", "catalog")
        assert drifted.exit_code == 1
        assert "tool delete_item of the lock is not listed" in drifted.output
        unknown = cli(api_server.url, acme.key, "mcp", "lock", "--server", "nope")
        assert unknown.exit_code == 2 and "no watch" in unknown.output
