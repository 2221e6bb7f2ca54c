"""`driftgate coverage` and `driftgate suggest` against a live server: exit 1 while a contract
the checkout depends on is not watched, 0 once `suggest --create` watched it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.servers import WsgiServer

REMOTE = json.dumps(
    {"mcpServers": {"billing": {"type": "http", "url": "https://mcp.billing.example/mcp"}}}
)


def test_coverage_fails_until_suggest_creates_the_watch(
    api_server: WsgiServer,
    acme: OrgKey,
    tmp_path: Path,
) -> None:
    (tmp_path / ".mcp.json").write_text(REMOTE)
    missing = cli(api_server.url, acme.key, "coverage", str(tmp_path))
    assert missing.exit_code == 1, missing.output
    assert ".mcp.json:1  billing  https://mcp.billing.example/mcp" in missing.output
    github = cli(api_server.url, acme.key, "coverage", str(tmp_path), "--format", "github")
    assert github.output.startswith("::error file=.mcp.json,line=1::billing")
    created = cli(
        api_server.url, acme.key, "suggest", "--config", str(tmp_path / ".mcp.json"), "--create"
    )
    assert created.exit_code == 0 and "created 1 watch(es)" in created.output
    covered = cli(api_server.url, acme.key, "coverage", str(tmp_path))
    assert covered.exit_code == 0 and covered.output.startswith("covered")
    unreachable = cli("http://127.0.0.1:9", acme.key, "coverage", str(tmp_path))
    assert unreachable.exit_code == 2
