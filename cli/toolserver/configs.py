"""`driftgate mcp --print-config CLIENT`: the entry that adds driftgate's tool server to an MCP
client, in that client's configuration format (the formats discovery reads,
../shared/MCP-CLIENT-CONFIGS.md), ready to paste.

The entry launches `driftgate mcp` over stdio with `DRIFTGATE_URL`; the API key is never
printed: each format gets its own way to refer to a secret (an environment variable, a VS
Code input), or a placeholder where it has none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

NAME = "driftgate"
COMMAND = "driftgate"
ARGS = ["mcp"]
KEY_PLACEHOLDER = "dg_your_org_api_key"


@dataclass(frozen=True)
class Client:
    file: str  # where the entry goes (the name discovery recognises)
    key: str  # how the API key is referred to in this format
    root: str = "mcpServers"
    stdio_type: str | None = None  # a `type` the format wants on stdio entries


CLIENTS: dict[str, Client] = {
    "claude-desktop": Client("claude_desktop_config.json", KEY_PLACEHOLDER),
    "claude-code": Client(".mcp.json", "${DRIFTGATE_API_KEY}", stdio_type="stdio"),
    "cursor": Client(".cursor/mcp.json", "${env:DRIFTGATE_API_KEY}"),
    "vscode": Client(
        ".vscode/mcp.json", "${input:driftgate-api-key}", root="servers", stdio_type="stdio"
    ),
    "windsurf": Client("~/.codeium/windsurf/mcp_config.json", "${env:DRIFTGATE_API_KEY}"),
    "cline": Client("cline_mcp_settings.json", KEY_PLACEHOLDER),
    "zed": Client(".zed/settings.json", KEY_PLACEHOLDER, root="context_servers"),
    "codex": Client("~/.codex/config.toml", "", root="mcp_servers"),
    "gemini": Client(".gemini/settings.json", "$DRIFTGATE_API_KEY"),
    "kiro": Client(".kiro/settings/mcp.json", "${DRIFTGATE_API_KEY}"),
    "amazon-q": Client("~/.aws/amazonq/mcp.json", KEY_PLACEHOLDER),
    "copilot-cli": Client("~/.copilot/mcp-config.json", "${DRIFTGATE_API_KEY}"),
    "roo": Client(".roo/mcp.json", "${env:DRIFTGATE_API_KEY}"),
    "continue": Client("~/.continue/config.yaml", "${{ secrets.DRIFTGATE_API_KEY }}"),
}


def snippet(client: str, url: str) -> tuple[str, str]:
    """(the file it goes in, the text to paste)."""
    spec = CLIENTS[client]
    env = {"DRIFTGATE_URL": url, "DRIFTGATE_API_KEY": spec.key}
    entry: dict[str, Any] = {"command": COMMAND, "args": ARGS, "env": env}
    if spec.stdio_type:
        entry = {"type": spec.stdio_type, **entry}
    if client == "codex":
        return spec.file, _codex(url)
    if client == "continue":
        listed = {"mcpServers": [{"name": NAME, **entry}]}
        return spec.file, yaml.safe_dump(listed, sort_keys=False)
    document: dict[str, Any] = {spec.root: {NAME: entry}}
    if client == "vscode":
        document = {
            "inputs": [
                {
                    "type": "promptString",
                    "id": "driftgate-api-key",
                    "description": "driftgate API key (dg_...)",
                    "password": True,
                }
            ],
            **document,
        }
    return spec.file, json.dumps(document, indent=2) + "\n"


def _codex(url: str) -> str:
    # Codex passes variables through by name (`env_vars`): the key stays in the environment.
    return "\n".join(
        [
            f"[mcp_servers.{NAME}]",
            f"command = {json.dumps(COMMAND)}",
            f"args = {json.dumps(ARGS)}",
            'env_vars = ["DRIFTGATE_API_KEY"]',
            f"env = {{ DRIFTGATE_URL = {json.dumps(url)} }}",
            "",
        ]
    )
