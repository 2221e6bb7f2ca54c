"""The hosted product's MCP lock (`.driftguard/mcp/driftguard-lock.json`), read as tool-lock
entries.

Its format (`McpLockfileV1` of the hosted clients' diff core, `lockfileVersion: 1`) keeps, per
server (`name`, `transport: "streamable-http"`, `url`), each tool's `name` and its whole
`description` and `inputSchema`, plus `generator` and `generatedAt`. driftgate pins hashes of
the same two values, so each tool maps to an entry's tool exactly (`lock.tool_hashes`: a
missing description is `""`, a missing schema `null`). It pins no protocol version and no
capabilities: an entry read from it leaves them unpinned. Its server names are slugs of the
client configuration's keys (lowercase, `-` for the rest); `url` is kept beside the entry
(`HOSTED_URL`) so that reconcile may find the watch of a server by its URL as well. Its
`generatedAt` is not read (a clock is no pin). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from controller.toollock.lock import TOOLS, LockInvalid, tool_hashes

HOSTED_LOCK = ".driftguard/mcp/driftguard-lock.json"
LOCKFILE_VERSION = 1
# Where an entry read from the hosted lock keeps its server's URL (not a pin).
HOSTED_URL = "url"


def is_hosted(data: Any) -> bool:
    """Whether a parsed lock is the hosted product's (it says `lockfileVersion`)."""
    return isinstance(data, dict) and "lockfileVersion" in data


def parse_hosted(data: Any) -> dict[str, dict[str, Any]]:
    """The entries (server name -> entry, with `url`) of a parsed hosted lock; `LockInvalid`
    with every problem, each at its JSON path, for what the hosted client would refuse too."""
    if not isinstance(data, dict):
        raise LockInvalid([((), "the lock must be a JSON object")])
    problems: list[tuple[tuple[str | int, ...], str]] = []
    if data.get("lockfileVersion") != LOCKFILE_VERSION:
        problems.append(
            (
                ("lockfileVersion",),
                f"lockfileVersion must be {LOCKFILE_VERSION} "
                f"(found {data.get('lockfileVersion')!r})",
            )
        )
    servers = data.get("servers")
    if not isinstance(servers, list) or not servers:
        problems.append((("servers",), "servers must be a non-empty list"))
        raise LockInvalid(problems)
    entries: dict[str, dict[str, Any]] = {}
    for index, server in enumerate(servers):
        where: tuple[str | int, ...] = ("servers", index)
        if not isinstance(server, dict):
            problems.append((where, f"servers[{index}] must be an object"))
            continue
        name = server.get("name")
        url = server.get("url")
        if not isinstance(name, str) or not name.strip():
            problems.append(((*where, "name"), f"servers[{index}] needs a name"))
            continue
        name = name.strip()
        if not isinstance(url, str) or not url.strip().startswith("http"):
            problems.append(((*where, "url"), f"server {name!r}: url must be http(s)"))
        if name in entries:
            problems.append(((*where, "name"), f"server {name!r} is listed twice"))
            continue
        tools = server.get("tools", [])
        if not isinstance(tools, list):
            problems.append(((*where, "tools"), f"server {name!r}: tools must be a list"))
            continue
        hashed: dict[str, dict[str, str]] = {}
        for position, tool in enumerate(tools):
            tool_name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(tool_name, str) or not tool_name.strip():
                problems.append(
                    ((*where, "tools", position), f"server {name!r}: a tool without a name")
                )
                continue
            schema = tool.get("inputSchema", tool.get("input_schema"))
            if schema is not None and not isinstance(schema, dict):
                problems.append(
                    (
                        (*where, "tools", position, "inputSchema"),
                        f"tool {tool_name!r}: inputSchema must be an object",
                    )
                )
                continue
            hashed[tool_name.strip()] = tool_hashes({**tool, "inputSchema": schema})
        entries[name] = {TOOLS: hashed, HOSTED_URL: str(url or "").strip()}
    if problems:
        raise LockInvalid(problems)
    return entries
