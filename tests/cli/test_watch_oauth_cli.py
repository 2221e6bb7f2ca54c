"""`driftgate watches create --oauth-...`: an MCP watch behind OAuth from the command line,
its secret taken from the environment and never printed."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cli.main import main
from tests.cli.conftest import cli
from tests.conftest import OrgKey
from tests.servers import WsgiServer

SECRET = "client-secret-from-the-environment"


def test_an_oauth_watch_takes_its_secret_from_the_environment(
    api_server: WsgiServer, acme: OrgKey
) -> None:
    env = {
        "DRIFTGATE_URL": api_server.url,
        "DRIFTGATE_API_KEY": acme.key,
        "DRIFTGATE_CONFIG": None,
        "DRIFTGATE_OAUTH_CLIENT_SECRET": SECRET,
    }
    args = ["watches", "create", "crm", "https://mcp.crm.example.com/mcp", "--type", "mcp"]
    args += ["--oauth-client-id", "driftgate", "--oauth-scope", "mcp:read", "--format", "json"]
    created = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    assert created.exit_code == 0, (created.output, created.stderr)
    assert SECRET not in created.output
    oauth = json.loads(created.output)["oauth"]
    assert oauth["clientId"] == "driftgate" and oauth["clientSecret"] == "<redacted>"
    assert oauth["scope"] == "mcp:read"


def test_oauth_without_its_secret_is_exit_2(api_server: WsgiServer, acme: OrgKey) -> None:
    args = ("watches", "create", "crm", "https://mcp.crm.example.com/mcp", "--type", "mcp")
    missing = cli(api_server.url, acme.key, *args, "--oauth-client-id", "driftgate")
    assert missing.exit_code == 2
    assert "grant client_credentials needs clientSecret" in missing.stderr
    lonely = cli(api_server.url, acme.key, *args, "--oauth-scope", "mcp:read")
    assert lonely.exit_code == 2 and "need --oauth-client-id" in lonely.stderr
