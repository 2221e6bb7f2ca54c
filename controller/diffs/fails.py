"""What a client sees fail, per breaking rule: one sentence from the client's side.

A hint says what to do; this says what breaks (the request now refused, the response value a
reader cannot take), filled from the change (its operation or tool, the property path, the old
and new value) so a person tells a real break from noise in one read (issue 41, point 5).
The text of each rule is declared with it in `rules.py` (`fails=`); every rule of severity
breaking has one, and tests/diffs/test_what_fails.py walks the catalog so a new rule cannot
forget it. Values are cut short: a schema can hold huge examples.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping
from typing import Any

from controller.diffs.rules import CATALOG
from controller.model.change import Change, Severity

_MAX_VALUE = 40
_SECRETISH = re.compile(r"([?&#][^=&#]*=)[^&#]*")


def short(value: Any, quoted: bool = False) -> str:
    """`value` as inline code, cut to a short length; query values (tokens, keys) elided."""
    if isinstance(value, str) and not quoted:
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    text = _SECRETISH.sub(r"\1…", " ".join(text.split())).replace("`", "'")
    if len(text) > _MAX_VALUE:
        text = text[: _MAX_VALUE - 1] + "…"
    return f"`{text}`"


class _Filler(string.Formatter):
    """`{before:words}`: the value as code, or `words` when the change has none; `!v` keeps
    a string's quotes (an enum value, a constant)."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        return (value, conversion == "v")

    def format_field(self, value: Any, format_spec: str) -> str:
        raw, quoted = value if isinstance(value, tuple) else (value, False)
        if isinstance(raw, _Text):
            return str(raw)
        if raw is None:
            return format_spec or "?"
        return short(raw, quoted)


class _Text(str):
    """Context words used as they are (not a value to quote)."""


_FILLER = _Filler()


def _unescape(segment: str) -> str:
    return segment.replace("~1", "/").replace("~0", "~")


_SCHEMA_KEYS = {"schema", "inputSchema", "outputSchema"}
_SKIP_INDEXED = {"allOf", "oneOf", "anyOf"}


def context(change: Mapping[str, Any]) -> dict[str, Any]:
    """The words a template is filled with, from a change object (served or stored)."""
    segments = [_unescape(s) for s in str(change.get("path", "")).split("/")[1:]]
    location = change.get("location") or {}
    operation = location.get("operation") if isinstance(location, Mapping) else None
    tool = location.get("tool") if isinstance(location, Mapping) else None
    if not operation and len(segments) >= 3 and segments[0] == "paths":
        operation = f"{segments[2].upper()} {segments[1]}"
    status = param = header = None
    props: list[str] = []
    in_schema = False
    i = 0
    while i < len(segments):
        seg = segments[i]
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        if in_schema:
            if seg in ("properties", "patternProperties") and nxt is not None:
                props.append("." + nxt if props else nxt)
                i += 1
            elif seg in ("items", "additionalItems"):
                props.append("[]")
            elif seg == "prefixItems" and nxt is not None:
                props.append(f"[{nxt}]")
                i += 1
            elif seg == "additionalProperties":
                props.append(".*" if props else "*")
            elif seg in _SKIP_INDEXED:
                i += 1
        elif seg in _SCHEMA_KEYS:
            in_schema = True
        elif seg == "responses" and nxt is not None:
            status = nxt
            i += 1
        elif seg == "parameters" and nxt is not None:
            param = nxt
            i += 1
        elif seg == "headers" and nxt is not None:
            header = nxt
            i += 1
        i += 1
    prop = "".join(props)
    if param:
        field = f"`{prop}` in parameter `{param}`" if prop else f"parameter `{param}`"
    elif header:
        field = f"`{prop}` in header `{header}`" if prop else f"header `{header}`"
    elif prop:
        field = f"`{prop}`"
    else:
        field = "the input" if tool else "the body"
    if tool:
        kind = "skill" if segments[:1] == ["skills"] else "tool"
        op = f"{kind} `{tool}`"
        call = f"A task for {op}" if kind == "skill" else f"A call to {op}"
        reader = f"A reader of {op}'s output"
    elif operation:
        op = f"`{operation}`"
        call = f"A request to {op}"
        reader = f"A reader of {op}" + (f" {status}" if status else "")
    else:
        op, call, reader = "the operation", "A request", "A reader"
    name = segments[-1] if segments else ""
    if tool and name in ("", tool) or not name:
        name = str(tool or "")
    return {
        "call": _Text(call),
        "reader": _Text(reader),
        "op": _Text(op),
        "field": _Text(field),
        "name": _Text(name.replace("`", "'")[:_MAX_VALUE]),
        "before": change.get("before"),
        "after": change.get("after"),
    }


def what_fails(change: Change | Mapping[str, Any]) -> str | None:
    """What a client sees fail for a breaking change, in one sentence; None for other
    severities and for rules this catalog does not know."""
    data = change.to_json() if isinstance(change, Change) else change
    if str(data.get("severity", "")) != Severity.BREAKING.value:
        return None
    rule = CATALOG.get(str(data.get("rule", "")))
    template = rule.fails if rule is not None else ""
    if not template:
        return None
    return _FILLER.vformat(template, (), context(data))
