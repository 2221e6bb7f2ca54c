"""How much two contracts have in common: the operations (or MCP tools) both define.

Diffing two unrelated APIs (GitHub's against Stripe's) is a mistake of the inputs, not a
drift: every operation is removed and another added, hundreds of breaking changes that say
nothing. Each contract kind with something to count names its function here
(`controller.contracts.kinds`); what the documents share lets the report say so. Pure: no
I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from controller.diffs.mcp import normalize_mcp_snapshot
from controller.diffs.refs import resolve_pointer

UNRELATED_SHARE = 0.1
"""Below this share of the smaller document's operations in common, the documents are taken
for unrelated APIs."""
MIN_OPERATIONS = 3
"""Documents this small say too little to call them unrelated."""

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace", "query")
_PARAMETER = re.compile(r"\{[^}/]*\}")


@dataclass(frozen=True)
class Overlap:
    """What two documents share: `kind` (`operations`, `tools` or `skills`) counted on each side and
    in common."""

    kind: str
    base: int
    revision: int
    shared: int

    @property
    def share(self) -> float:
        """The part of the smaller document that the other also has (1.0 when empty)."""
        smaller = min(self.base, self.revision)
        return self.shared / smaller if smaller else 1.0

    @property
    def unrelated(self) -> bool:
        """True when the documents share almost none of their operations (or tools)."""
        return min(self.base, self.revision) >= MIN_OPERATIONS and self.share < UNRELATED_SHARE

    def warning(self, base_title: str | None = None, revision_title: str | None = None) -> str:
        """The sentence a report shows when the documents look unrelated."""
        titles = ""
        if base_title and revision_title and base_title != revision_title:
            titles = f" ({base_title!r} and {revision_title!r})"
        return (
            f"The two documents{titles} share {self.shared} of their {self.kind} "
            f"({self.base} in the base, {self.revision} in the revision): they look like "
            "different APIs, and every change below may only say so. Check the inputs."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "base": self.base,
            "revision": self.revision,
            "shared": self.shared,
            "unrelated": self.unrelated,
        }


def operations_overlap(base: Any, revision: Any) -> Overlap:
    """The operations two OpenAPI documents share."""
    return _overlap("operations", _operations(base), _operations(revision))


def tools_overlap(base: Any, revision: Any) -> Overlap:
    """The tools two MCP snapshots share."""
    return _overlap("tools", _tools(base), _tools(revision))


def skills_overlap(base: Any, revision: Any) -> Overlap:
    """The skills two A2A agent cards share."""
    return _overlap("skills", _skills(base), _skills(revision))


def _overlap(kind: str, left: set[Any], right: set[Any]) -> Overlap:
    return Overlap(kind, len(left), len(right), len(left & right))


def title_of(document: Any) -> str | None:
    """An OpenAPI document's `info.title`, an MCP server's or an A2A agent's name, when it
    has one."""
    if not isinstance(document, dict):
        return None
    if isinstance(document.get("skills"), list) and isinstance(document.get("name"), str):
        return str(document["name"])
    for holder, key in (("info", "title"), ("server_info", "name"), ("serverInfo", "name")):
        value = document.get(holder)
        if isinstance(value, dict) and isinstance(value.get(key), str):
            return str(value[key])
    return None


def _operations(document: Any) -> set[tuple[str, str]]:
    """(METHOD, path) of every operation, path parameters unnamed (`/a/{}`): a renamed
    parameter is the same operation."""
    paths = document.get("paths") if isinstance(document, dict) else None
    found: set[tuple[str, str]] = set()
    if not isinstance(paths, dict):
        return found
    for path, item in paths.items():
        if isinstance(item, dict) and isinstance(item.get("$ref"), str):
            try:
                item = resolve_pointer(document, item["$ref"])
            except (KeyError, IndexError, ValueError):
                continue
        if not isinstance(item, dict):
            continue
        shape = _PARAMETER.sub("{}", str(path))
        found.update((method.upper(), shape) for method in _METHODS if method in item)
    return found


def _skills(document: Any) -> set[str]:
    skills = document.get("skills") if isinstance(document, dict) else None
    if not isinstance(skills, list):
        return set()
    return {str(skill["id"]) for skill in skills if isinstance(skill, dict) and "id" in skill}


def _tools(document: Any) -> set[str]:
    # Read as the engine reads it: a snapshot, a tool list or a JSON-RPC answer.
    tools = normalize_mcp_snapshot(document).tools or {}
    return {name for name, tool in tools.items() if "name" in tool}
