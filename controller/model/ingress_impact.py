"""Which consumer profiles a drift touches. Pure.

A profile that names a watch (`watchId`) mirrors part of that watch's contract: the payload a
consumer of the vendor accepts. When the watch drifts, a breaking change touches the profile
when a segment of its path (a JSON Pointer into the contract: `/components/schemas/charge/
properties/amount`, `/tools/create_order/inputSchema/properties/qty`) is a property the
profile's schema declares, at any depth. The drift event lists those profiles
(`affectedProfiles`), so a team knows which payload checks to revisit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def declared_properties(schema: Any) -> frozenset[str]:
    """Every property name a JSON Schema declares, at any depth."""
    names: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(str(k) for k in properties)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


def _segments(pointer: str) -> set[str]:
    return {p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/") if p}


def affected_profiles(
    changes: Iterable[Mapping[str, Any]], profiles: Iterable[tuple[str, Any]]
) -> list[str]:
    """The ids of `profiles` ((id, schema) pairs) that a breaking change of `changes` touches,
    sorted."""
    touched: set[str] = set()
    for change in changes:
        if change.get("severity") == "breaking" and not change.get("ignored"):
            touched |= _segments(str(change.get("path", "")))
    if not touched:
        return []
    return sorted(pid for pid, schema in profiles if declared_properties(schema) & touched)
