"""`driftgate mcp --print-config CLIENT`: the entry that adds driftgate's tool server to an MCP
client, in that client's configuration format (the formats discovery reads,
../shared/MCP-CLIENT-CONFIGS.md), ready to paste.

The entry launches `driftgate mcp` over stdio with `DRIFTGATE_URL`, by a command that works
as installed (`installed_command`): `driftgate` when PATH finds this very executable, else its
absolute path. The API key is never printed: each format gets its own way to refer to a secret
(an environment variable, a VS Code input), or a placeholder where it has none.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class Launcher:
    """How a client starts this driftgate: `command` and the `args` before none (they end with
    `mcp`), and why, in words for stderr."""

    command: str
    args: list[str]
    why: str


def installed_command(
    argv0: str | None = None, executable: str | None = None, path: str | None = None
) -> Launcher:
    """The command that starts the running driftgate as installed: `driftgate` when PATH
    (`path`, default the process's) finds this executable; else its absolute path; else, run
    as `python -m cli` with no `driftgate` beside the interpreter, the interpreter and the
    module."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if Path(argv0).name == "__main__.py":  # `python -m cli`: the entry point beside it, if any
        beside = Path(executable).parent / COMMAND
        script = beside.absolute() if beside.is_file() else None
    else:
        script = Path(argv0).absolute()
    if script is None:
        return Launcher(
            executable,
            ["-m", "cli", *ARGS],
            f"no {COMMAND} executable beside {executable}: the entry runs the module with it",
        )
    found = shutil.which(COMMAND, path=path if path is not None else os.environ.get("PATH"))
    if found is not None and _same(Path(found), script):
        return Launcher(
            COMMAND,
            list(ARGS),
            f"{COMMAND} on PATH is this one ({script}); a client started "
            "with another PATH needs that absolute path as the command",
        )
    if found is None:
        why = f"{COMMAND} is not on PATH: the entry names this one by its absolute path"
    else:
        why = f"{COMMAND} on PATH is another one ({found}): the entry names this one"
    return Launcher(str(script), list(ARGS), why)


def _same(one: Path, other: Path) -> bool:
    try:
        return one.samefile(other)
    except OSError:
        return False


def snippet(client: str, url: str, launcher: Launcher | None = None) -> tuple[str, str]:
    """(the file it goes in, the text to paste); the entry runs `launcher` (default: plain
    `driftgate mcp`)."""
    spec = CLIENTS[client]
    run = launcher or Launcher(COMMAND, list(ARGS), "")
    env = {"DRIFTGATE_URL": url, "DRIFTGATE_API_KEY": spec.key}
    entry: dict[str, Any] = {"command": run.command, "args": run.args, "env": env}
    if spec.stdio_type:
        entry = {"type": spec.stdio_type, **entry}
    if client == "codex":
        return spec.file, _codex(url, run)
    if client == "continue":
        import yaml

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


def _codex(url: str, run: Launcher) -> str:
    # Codex passes variables through by name (`env_vars`): the key stays in the environment.
    return "\n".join(
        [
            f"[mcp_servers.{NAME}]",
            f"command = {json.dumps(run.command)}",
            f"args = {json.dumps(run.args)}",
            'env_vars = ["DRIFTGATE_API_KEY"]',
            f"env = {{ DRIFTGATE_URL = {json.dumps(url)} }}",
            "",
        ]
    )
