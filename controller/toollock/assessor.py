"""The tool-lock assessor: a check of an MCP watch pinned to a lock entry
(`watches.tool_lock`, set by reconcile from `.driftgate/mcp.lock`) judges the fetched surface
against it (`controller.checks.verdicts`).

The watch's `tool_lock` is the entry of its server (`lock.entry_of`'s shape: `tools`, and
`protocolVersion` and `capabilities` when pinned) plus `server` (its name in the lock) and
`file` (the lock it came from). The verdict lists the violations (`Violation.as_dict`), which
`controller.diffs.toollock` turns into findings when they appear; on a first check a failing
verdict fails the check closed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from controller.contracts.kinds import MCP
from controller.toollock.lock import compare

if TYPE_CHECKING:
    from controller.settings import Settings


class Judged(Protocol):
    """What the assessor reads of a check's input (`controller.checks.engine.CheckInput`;
    not imported: the checks import this module through their registry)."""

    @property
    def watch_type(self) -> str: ...

    @property
    def tool_lock(self) -> dict[str, Any] | None: ...


# How many violations a verdict's summary names before it counts the rest.
_NAMED = 3


def watch_lock(server: str, entry: dict[str, Any], file: str) -> dict[str, Any]:
    """What a watch stores as its `tool_lock`: its server's entry, its name and the file."""
    return {**entry, "server": server, "file": file}


def verdict(lock: dict[str, Any], document: Any) -> dict[str, Any]:
    """The verdict on `document` (an MCP snapshot) against a watch's `tool_lock`."""
    server = str(lock.get("server") or "?")
    found = compare(document, lock)
    if not found:
        summary = f"server {server} keeps to its lock ({len(lock.get('tools') or {})} tools)"
    else:
        named = "; ".join(v.describe(server) for v in found[:_NAMED])
        more = f" (+{len(found) - _NAMED} more)" if len(found) > _NAMED else ""
        summary = f"tool lock {lock.get('file') or ''} violated: {named}{more}".replace("  ", " ")
    return {
        "ok": not found,
        "summary": summary,
        "server": server,
        "violations": [v.as_dict(server) for v in found],
    }


def build(settings: Settings, client: Any) -> Callable[[Judged, Any], dict[str, Any] | None]:
    """The assessor (nothing to build: a lock is judged offline); registered as
    `controller.diffs.toollock.TOOL_LOCK` in `controller.checks.assessments`."""

    def assess(check: Judged, document: Any) -> dict[str, Any] | None:
        lock = check.tool_lock
        if not isinstance(lock, dict) or check.watch_type != MCP.name:
            return None
        return verdict(lock, document)

    return assess
