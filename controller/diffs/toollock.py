"""Lock findings: the tool-lock verdicts two MCP snapshots carry, as changes.

A check judges the fetched MCP surface against the tool set its watch is pinned to
(`controller.toollock`, `.driftgate/mcp.lock`) and stores the verdict in the document under
`VERDICTS_KEY` (`controller.checks.verdicts`). The verdict lists its violations, each a rule
id of the catalog (`tool-not-in-lock`, `tool-lock-schema-changed` ...) with the tool and the
server it concerns. A violation the revision has and the base did not is a finding; one the
base had already was reported when it appeared (and blocks until the lock or the server is
fixed, since the watch stays drifted until then). Pure: no I/O.

The verdict's name is spelled here, in the domain, because the diff engines cannot import
the checks (`controller.diffs.verdicts` holds the key).
"""

from __future__ import annotations

from typing import Any

from controller.diffs.core import escape_pointer, make_change
from controller.diffs.rules import CATALOG
from controller.diffs.verdicts import verdict_of
from controller.model.change import Change, Location

# The name of the tool-lock assessor: its verdict's key under VERDICTS_KEY.
TOOL_LOCK = "toolLock"


def violations_of(document: Any) -> list[dict[str, Any]]:
    """The violations of the tool-lock verdict a document carries (none without one)."""
    found = verdict_of(document, TOOL_LOCK).get("violations")
    if not isinstance(found, list):
        return []
    return [v for v in found if isinstance(v, dict) and v.get("rule") in CATALOG]


def lock_changes(base: Any, revision: Any) -> list[Change]:
    """The violations of the revision's verdict that the base's verdict did not have, as
    breaking changes (each of its own rule, at the tool's pointer)."""
    seen = {_identity(v) for v in violations_of(base)}
    return [
        _change(violation)
        for violation in violations_of(revision)
        if _identity(violation) not in seen
    ]


def _identity(violation: dict[str, Any]) -> tuple[str, str, str]:
    return (
        str(violation.get("rule")),
        str(violation.get("tool") or ""),
        str(violation.get("server") or ""),
    )


def _change(violation: dict[str, Any]) -> Change:
    rule, tool, server = _identity(violation)
    if tool:
        pointer = f"/tools/{escape_pointer(tool)}"
        if rule == "tool-lock-schema-changed":
            pointer += "/inputSchema"
        elif rule == "tool-lock-description-changed":
            pointer += "/description"
    else:
        pointer = (
            "/capabilities" if rule == "tool-lock-capabilities-changed" else "/protocol_version"
        )
    return make_change(
        rule,
        pointer,
        location=Location(tool=tool) if tool else None,
        name=tool or None,
        before=violation.get("locked"),
        after=violation.get("found"),
        detail=server,
    )
