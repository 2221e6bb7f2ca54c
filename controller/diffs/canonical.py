"""Canonical JSON and fingerprints: recognise an unchanged contract without diffing it.

Canonical form: keys sorted, integral floats written as integers (`1.0 == 1`), and orderings
that carry no meaning removed (`required`, `enum` and `type` arrays, `tags`, `security` scope
lists, and MCP tool / prompt / resource lists sorted by name). The fingerprint is the SHA-256
of the canonical JSON text, in hex.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

# Arrays whose order carries no meaning, by the key that holds them.
_SET_KEYS = frozenset({"required", "enum", "type", "tags", "scopes"})
# Lists of named items (MCP surfaces) that are compared by name, not position.
_NAMED_LIST_KEYS = {
    "tools": "name",
    "prompts": "name",
    "resources": "uri",
    "resource_templates": "uriTemplate",
    "resourceTemplates": "uriTemplate",
    "arguments": "name",
}


def canonicalize(doc: Any) -> Any:
    """Return a copy of `doc` in canonical form (see the module docstring)."""
    return _canon(doc, None)


def canonical_json(doc: Any) -> str:
    """Return the canonical JSON text of `doc`: sorted keys, compact separators, UTF-8."""
    return json.dumps(_canon(doc, None), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(doc: Any) -> str:
    """Return the SHA-256 hex digest of the canonical JSON of `doc`."""
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _canon(node: Any, key: str | None) -> Any:
    t = type(node)
    if t is dict:
        return {_key(k): _canon(v, _key(k)) for k, v in node.items()}
    if t is list:
        items = [_canon(v, None) for v in node]
        if key in _SET_KEYS:
            items.sort(key=_sort_key)
        elif key in _NAMED_LIST_KEYS:
            field = _NAMED_LIST_KEYS[key]
            if all(type(i) is dict for i in items):
                items.sort(key=lambda i: str(i.get(field, "")) + "\0" + _sort_key(i))
        return items
    if t is float:
        return int(node) if node.is_integer() else node
    if t is str or t is int or t is bool or node is None:
        return node
    if isinstance(node, dt.datetime | dt.date):
        return node.isoformat()
    if isinstance(node, tuple):
        return [_canon(v, None) for v in node]
    return str(node)


def _key(k: Any) -> str:
    if type(k) is str:
        return k
    if type(k) is bool:
        return "true" if k else "false"
    return str(k)
