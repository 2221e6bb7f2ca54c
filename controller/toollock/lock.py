"""The tool lock: the tool set of MCP servers, pinned in git as `.driftgate/mcp.lock`.

A lock entry is what one server advertised when a person locked it: per tool, a hash of its
input schema and a hash of its description, and the server's protocol version and
capabilities. A hash is `sha256:` and the hex SHA-256 of the value's canonical JSON (`canonical`:
keys sorted, no spaces, UTF-8, integral floats as integers; a missing description is `""`), so
two locks of one server agree byte for byte and a change of one tool is one line in a diff.
The whole text is not kept: the lock says *that* a tool changed, and the watch's own diff
says how.

The file is deterministic JSON (sorted keys, two-space indent, a final newline) with a
`version`; nothing in it depends on the clock or the machine:

    {
      "servers": {
        "catalog": {
          "capabilities": {"tools": {"listChanged": true}},
          "protocolVersion": "2025-11-25",
          "tools": {
            "search": {"description": "sha256:…", "inputSchema": "sha256:…"}
          }
        }
      },
      "version": 1
    }

Comparing a snapshot with an entry gives violations, each a rule id of the catalog
(`controller.diffs.rules`): a tool outside the lock (`tool-not-in-lock`), a changed hash
(`tool-lock-schema-changed`, `tool-lock-description-changed`), a pinned tool gone
(`tool-lock-tool-missing`), another protocol version or other capabilities
(`tool-lock-protocol-changed`, `tool-lock-capabilities-changed`). An entry read from the
hosted product's lock pins no protocol version or capabilities (`controller.toollock.hosted`):
what an entry does not pin is not compared. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.diffs.mcp import normalize_mcp_snapshot

VERSION = 1
LOCK_FILE = "mcp.lock"  # in the `.driftgate/` directory
HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
# Keys of an entry that pin something besides the tools (absent: not pinned).
PROTOCOL = "protocolVersion"
CAPABILITIES = "capabilities"
TOOLS = "tools"
_SERVER_KEYS = frozenset({TOOLS, PROTOCOL, CAPABILITIES})
_TOOL_KEYS = ("description", "inputSchema")


def lock_schema() -> dict[str, Any]:
    """The JSON Schema of the lock file (`config-schema/mcp-lock.schema.json`): the same rules
    `parse` applies, for editors and CI without driftgate."""
    hash_string = {"type": "string", "pattern": HASH.pattern}
    tool = {
        "type": "object",
        "properties": {"description": hash_string, "inputSchema": hash_string},
        "required": list(_TOOL_KEYS),
        "additionalProperties": False,
    }
    server = {
        "type": "object",
        "properties": {
            TOOLS: {"type": "object", "additionalProperties": tool},
            PROTOCOL: {"type": "string"},
            CAPABILITIES: {"type": "object"},
        },
        "required": [TOOLS],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "version": {"const": VERSION},
            "servers": {
                "type": "object",
                "propertyNames": {"minLength": 1, "pattern": r"\S"},
                "additionalProperties": server,
            },
        },
        "required": ["version", "servers"],
        "additionalProperties": False,
    }


class LockInvalid(Exception):
    """A lock that cannot be used: each problem is (JSON path as keys, message)."""

    def __init__(self, problems: list[tuple[tuple[str | int, ...], str]]) -> None:
        super().__init__("; ".join(message for _, message in problems))
        self.problems = problems


@dataclass(frozen=True)
class Violation:
    """One way a server left its lock: a rule id, the tool (none for the server's own pins),
    and the locked and found values (hashes, or the protocol version and capabilities)."""

    rule: str
    tool: str | None = None
    locked: Any = None
    found: Any = None

    def as_dict(self, server: str) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "server": server}
        if self.tool is not None:
            out["tool"] = self.tool
        if self.locked is not None:
            out["locked"] = self.locked
        if self.found is not None:
            out["found"] = self.found
        return out

    def describe(self, server: str) -> str:
        """One line for a terminal or a verdict's summary."""
        if self.rule == "tool-not-in-lock":
            return f"{server}: tool {self.tool} is not in the lock"
        if self.rule == "tool-lock-tool-missing":
            return f"{server}: tool {self.tool} of the lock is not listed"
        if self.rule == "tool-lock-schema-changed":
            return f"{server}: the input schema of tool {self.tool} differs from the lock"
        if self.rule == "tool-lock-description-changed":
            return f"{server}: the description of tool {self.tool} differs from the lock"
        if self.rule == "tool-lock-protocol-changed":
            return f"{server}: protocol version {self.found} differs from the lock's {self.locked}"
        return f"{server}: the capabilities differ from the lock"


def canonical(value: Any) -> str:
    """The canonical JSON text of `value`: keys sorted, compact, UTF-8, integral floats as
    integers (a server in another language may write `1.0` for `1`)."""
    return json.dumps(_integral(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """`sha256:<hex>` of the canonical JSON of `value`."""
    return "sha256:" + hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()


def tool_hashes(tool: Mapping[str, Any]) -> dict[str, str]:
    """The pinned hashes of one tool: of its description (`""` when it has none: MCP reads
    a missing description as an empty one) and of its input schema."""
    description = tool.get("description")
    return {
        "description": digest(description if isinstance(description, str) else ""),
        "inputSchema": digest(tool.get("inputSchema")),
    }


def entry_of(snapshot: Any) -> dict[str, Any]:
    """The lock entry of a server from its snapshot (a driftgate snapshot, a capture file or
    a `tools/list` result): its tools' hashes, and its protocol version and capabilities
    when the snapshot has them."""
    surface = normalize_mcp_snapshot(snapshot)
    entry: dict[str, Any] = {
        TOOLS: {name: tool_hashes(tool) for name, tool in sorted((surface.tools or {}).items())}
    }
    if surface.protocol_version is not None:
        entry[PROTOCOL] = surface.protocol_version
    if surface.capabilities is not None:
        entry[CAPABILITIES] = _integral(surface.capabilities)
    return entry


def render(servers: Mapping[str, Mapping[str, Any]]) -> str:
    """The text of a lock file holding `servers` (name -> entry): deterministic."""
    document: dict[str, Any] = {
        "servers": {name: dict(servers[name]) for name in sorted(servers)},
        "version": VERSION,
    }
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def parse(data: Any) -> dict[str, dict[str, Any]]:
    """The entries (server name -> entry) of a parsed `.driftgate/mcp.lock`; `LockInvalid`
    with every problem found, each at its JSON path."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    if not isinstance(data, dict):
        raise LockInvalid([((), "the lock must be a JSON object with `version` and `servers`")])
    for key in sorted(set(data) - {"version", "servers"}):
        problems.append(((key,), f"unknown key {key!r}: a lock has `version` and `servers`"))
    if data.get("version") != VERSION:
        problems.append(
            (("version",), f"version must be {VERSION} (found {data.get('version')!r})")
        )
    servers = data.get("servers")
    if not isinstance(servers, dict):
        problems.append((("servers",), "servers must be an object of server name -> entry"))
        raise LockInvalid(problems)
    entries: dict[str, dict[str, Any]] = {}
    for name, entry in servers.items():
        where: tuple[str | int, ...] = ("servers", name)
        if not isinstance(name, str) or not name.strip():
            problems.append((where, "a server name must be a non-empty string"))
            continue
        if not isinstance(entry, dict):
            problems.append((where, f"server {name!r} must be an object with `tools`"))
            continue
        problems += _entry_problems(name, entry, where)
        entries[name] = entry
    if problems:
        raise LockInvalid(problems)
    return entries


def _entry_problems(
    name: str, entry: dict[str, Any], where: tuple[str | int, ...]
) -> list[tuple[tuple[str | int, ...], str]]:
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for key in sorted(set(entry) - _SERVER_KEYS):
        problems.append(
            (
                (*where, key),
                f"server {name!r}: unknown key {key!r} (an entry has tools, protocolVersion, "
                "capabilities)",
            )
        )
    tools = entry.get(TOOLS)
    if not isinstance(tools, dict):
        problems.append(((*where, TOOLS), f"server {name!r}: tools must be an object"))
    else:
        for tool, hashes in tools.items():
            at = (*where, TOOLS, tool)
            if not isinstance(hashes, dict) or set(hashes) != set(_TOOL_KEYS):
                problems.append(
                    (at, f"tool {tool!r}: must be an object of description and inputSchema")
                )
                continue
            for key in _TOOL_KEYS:
                if not isinstance(hashes[key], str) or not HASH.match(hashes[key]):
                    problems.append(
                        ((*at, key), f"tool {tool!r}: {key} must be sha256: and 64 hex digits")
                    )
    if PROTOCOL in entry and not isinstance(entry[PROTOCOL], str):
        problems.append(((*where, PROTOCOL), f"server {name!r}: protocolVersion must be a string"))
    if CAPABILITIES in entry and not isinstance(entry[CAPABILITIES], dict):
        problems.append(
            ((*where, CAPABILITIES), f"server {name!r}: capabilities must be an object")
        )
    return problems


def compare(snapshot: Any, entry: Mapping[str, Any]) -> list[Violation]:
    """How the server of `snapshot` left its lock `entry` (empty: it keeps to it), in a
    stable order: the server's pins, then tool by tool."""
    surface = normalize_mcp_snapshot(snapshot)
    out: list[Violation] = []
    if PROTOCOL in entry and surface.protocol_version != entry[PROTOCOL]:
        out.append(
            Violation(
                "tool-lock-protocol-changed",
                locked=entry[PROTOCOL],
                found=surface.protocol_version,
            )
        )
    if CAPABILITIES in entry and canonical(surface.capabilities) != canonical(entry[CAPABILITIES]):
        out.append(
            Violation(
                "tool-lock-capabilities-changed",
                locked=entry[CAPABILITIES],
                found=surface.capabilities,
            )
        )
    locked: Mapping[str, Any] = entry.get(TOOLS) or {}
    found = surface.tools or {}
    for name in sorted(set(locked) | set(found)):
        if name not in locked:
            out.append(Violation("tool-not-in-lock", name))
            continue
        if name not in found:
            out.append(Violation("tool-lock-tool-missing", name))
            continue
        hashes = tool_hashes(found[name])
        if hashes["inputSchema"] != locked[name]["inputSchema"]:
            out.append(
                Violation(
                    "tool-lock-schema-changed",
                    name,
                    locked[name]["inputSchema"],
                    hashes["inputSchema"],
                )
            )
        if hashes["description"] != locked[name]["description"]:
            out.append(
                Violation(
                    "tool-lock-description-changed",
                    name,
                    locked[name]["description"],
                    hashes["description"],
                )
            )
    return out


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value
