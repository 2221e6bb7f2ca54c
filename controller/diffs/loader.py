"""Turn contract text (JSON or YAML) into a document, with a clear error when it cannot be.

JSON goes through the `json` module; YAML through `yaml_rs` (a Rust YAML 1.2 parser, about
20x faster than PyYAML's libyaml loader on a 4 MB Stripe spec, with limits on alias
expansion against "billion laughs" documents). OpenAPI 3 mandates YAML 1.2, so `yes`/`on`
stay strings; timestamps stay strings so documents round-trip to JSON; duplicate keys keep
the last value, as PyYAML does. OpenAPI documents are checked for a supported version and
for local `$ref`s that point nowhere. Parsing is pure: the caller passes the text.

Nesting is bounded (`MAX_NESTING`): real contracts nest fewer than 30 objects and arrays
(Stripe's 2023 spec: 26), while the diff engines walk documents recursively. A document
nested deeper is refused here, as an unreadable contract with the pointer where the bound was
passed, rather than failing somewhere later with a `RecursionError`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import yaml_rs

from controller.diffs.errors import ContractParseError
from controller.diffs.positions import LineIndex
from controller.diffs.refs import (
    Document,
    pointer_of,
    reference_objects,
    resolve_pointer,
)

Kind = Literal["auto", "openapi", "mcp", "json"]

MAX_NESTING = 128
"""Objects and arrays one contract document may nest (the diff engines stay well inside
Python's recursion limit at this depth, in a worker thread too)."""

_LAST_WINS = yaml_rs.DuplicateKeyPolicy.LastWins
_LOCATION = re.compile(r"line (\d+), column (\d+)")
# A document separator after content means a multi-document stream.
_SEPARATOR = re.compile(r"^(?:---|\.\.\.)(?:[ \t].*)?$", re.MULTILINE)
_CONTENT = re.compile(r"^[ \t]*[^#\s]", re.MULTILINE)


def load_document(data: str | bytes, filename: str | None = None, *, kind: Kind = "auto") -> Any:
    """Parse contract text into a document; raise `ContractParseError` when it cannot.

    With `kind="openapi"` (or `auto` and a document that declares `openapi`/`swagger`) the
    version is checked and every local `$ref` must resolve.
    """
    text = _decode(data, filename)
    if not text.strip():
        raise ContractParseError("the document is empty", where=filename)
    doc = _parse(text, filename)
    check_nesting(doc, filename)
    if kind in ("openapi", "mcp") and not isinstance(doc, dict):
        raise ContractParseError(
            f"expected a JSON/YAML object at the top level, found {type(doc).__name__}",
            where=filename,
        )
    is_openapi = isinstance(doc, dict) and ("openapi" in doc or "swagger" in doc)
    if kind == "openapi" or (kind == "auto" and is_openapi):
        check_openapi(doc, text, filename)
    return doc


def load_json(data: str | bytes, filename: str | None = None) -> Any:
    """Parse JSON text strictly (a REST endpoint's answer: JSON, never YAML, so an HTML page
    served with status 200 is refused rather than read as a string); raise
    `ContractParseError` when it cannot."""
    text = _decode(data, filename)
    if not text.strip():
        raise ContractParseError("the document is empty", where=filename)
    try:
        doc = _json_loads(text, filename)
    except json.JSONDecodeError as exc:
        markup = " (the answer is HTML or XML)" if text.lstrip()[:1] == "<" else ""
        raise ContractParseError(
            f"not JSON{markup}: {exc.msg}",
            where=f"{filename or '<input>'}:{exc.lineno}:{exc.colno}",
        ) from None
    check_nesting(doc, filename)
    return doc


def check_nesting(doc: Any, where: str | None = None) -> None:
    """Raise `ContractParseError` when `doc` nests more than `MAX_NESTING` objects and arrays
    (also for documents that did not come through `load_document`, such as an MCP server's
    tools)."""
    # One level at a time, no recursion, containers only (0.045 s on a 4 MB Stripe spec,
    # against 0.16 s when every container carried its trail); the pointer is spelled only
    # for a refused document, by a second search.
    level: list[Any] = [doc] if isinstance(doc, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_NESTING:
            raise ContractParseError(
                f"the document nests deeper than {MAX_NESTING} levels of objects and arrays "
                f"(at {_pointer(_deepest_trail(doc))}); driftgate does not read contracts "
                "nested this deep",
                where=where,
            )
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            below.extend([child for child in children if isinstance(child, dict | list)])
        level = below


def _deepest_trail(doc: Any) -> Any:
    """The trail (key, parent trail) to a container just past `MAX_NESTING`."""
    stack: list[tuple[Any, int, Any]] = [(doc, 1, None)]
    while stack:
        item, depth, trail = stack.pop()
        if depth > MAX_NESTING:
            return trail
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        stack.extend(
            (child, depth + 1, (key, trail))
            for key, child in pairs
            if isinstance(child, dict | list)
        )
    return None


def _pointer(trail: Any) -> str:
    keys: list[str] = []
    while trail is not None:
        key, trail = trail
        keys.append(str(key).replace("~", "~0").replace("/", "~1"))
    keys.reverse()
    shown = "/" + "/".join(keys[:8])
    return shown + "/..." if len(keys) > 8 else shown


def check_openapi(
    doc: Any, text: str | None = None, filename: str | None = None, *, check_refs: bool = True
) -> str:
    """Check that `doc` is a supported OpenAPI document and return its version family."""
    if not isinstance(doc, dict):
        raise ContractParseError("not an OpenAPI document (not an object)", where=filename)
    if "swagger" in doc:
        version = str(doc["swagger"])
        if version != "2.0":
            raise ContractParseError(
                f"unsupported Swagger version {version!r}; supported: 2.0", where=filename
            )
        family = "2.0"
    elif "openapi" in doc:
        version = str(doc["openapi"])
        if re.fullmatch(r"3\.0(\.\d+)?(-.*)?", version):
            family = "3.0"
        elif re.fullmatch(r"3\.1(\.\d+)?(-.*)?", version):
            family = "3.1"
        else:
            raise ContractParseError(
                f"unsupported OpenAPI version {version!r}; supported: 2.0, 3.0.x, 3.1.x",
                where=filename,
            )
    else:
        raise ContractParseError(
            "not an OpenAPI document: no 'openapi' or 'swagger' field", where=filename
        )
    paths = doc.get("paths")
    if paths is None and family != "3.1":
        raise ContractParseError("OpenAPI document has no 'paths' object", where=filename)
    if paths is not None and not isinstance(paths, dict):
        raise ContractParseError("'paths' must be an object", where=filename)
    if check_refs:
        _check_local_refs(doc, text, filename)
    return family


def _decode(data: str | bytes, filename: str | None) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ContractParseError(
            f"not UTF-8 text (byte {exc.start}); contracts must be JSON or YAML text",
            where=filename,
        ) from None


def _json_loads(text: str, filename: str | None) -> Any:
    """`json.loads`, with a document nested past the interpreter's recursion limit refused
    as too deep (`ContractParseError`) rather than crashing the caller."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ContractParseError(
            f"the document nests deeper than {MAX_NESTING} levels of objects and arrays; "
            "driftgate does not read contracts nested this deep",
            where=filename,
        ) from None


def _parse(text: str, filename: str | None) -> Any:
    stripped = text.lstrip()
    json_first = stripped[:1] in ("{", "[") or (filename or "").lower().endswith(".json")
    if json_first:
        try:
            return _json_loads(text, filename)
        except json.JSONDecodeError as exc:
            json_error = ContractParseError(
                f"invalid JSON: {exc.msg}",
                where=f"{filename or '<input>'}:{exc.lineno}:{exc.colno}",
            )
        if (filename or "").lower().endswith(".json"):
            raise json_error
        try:  # JSON-looking text without a .json name may still be valid YAML (flow style)
            return parse_yaml(text, filename)
        except ContractParseError:
            raise json_error from None
    return parse_yaml(text, filename)


def parse_yaml(text: str, filename: str | None = None) -> Any:
    """Parse one YAML 1.2 document; raise `ContractParseError` with file:line:column."""
    first = _SEPARATOR.search(text, _first_content(text))
    if first is not None and _CONTENT.search(text, first.end()):
        raise ContractParseError(
            "a contract must be a single YAML document (found a '---' separator after content)",
            where=f"{filename or '<input>'}:{text.count(chr(10), 0, first.start()) + 1}",
        )
    try:
        return yaml_rs.loads(text, parse_datetime=False, duplicate_key_policy=_LAST_WINS)
    except yaml_rs.YAMLDecodeError as exc:
        message = str(exc).strip()
        where = filename or "<input>"
        location = _LOCATION.search(message)
        if location is not None:
            where = f"{where}:{location[1]}:{location[2]}"
        problem = message.splitlines()[-1].strip() if message else "unreadable"
        raise ContractParseError(f"invalid YAML: {problem}", where=where) from None
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        raise ContractParseError(f"invalid YAML: {exc}", where=filename) from None


def _first_content(text: str) -> int:
    """Offset just past the first line with content (a leading '---' is allowed)."""
    match = _CONTENT.search(text)
    if match is None:
        return len(text)
    end = text.find("\n", match.start())
    return len(text) if end < 0 else end


def _check_local_refs(doc: dict[str, Any], text: str | None, filename: str | None) -> None:
    """Refuse a Reference Object whose local `$ref` points nowhere, naming the file:line.

    References are found in the parsed tree where the OpenAPI structure puts them
    (`reference_objects`), never by searching the text: a `$ref` in a comment, an example, an
    extension or a folded string is not a reference. The text only places the one refused.
    """
    resolved: dict[str, bool] = {}
    dangling: list[tuple[str, str, list[str | int]]] = []
    anchors = Document(doc)  # indexes `$anchor`s on the first `#name` reference
    for trail, ref in reference_objects(doc):
        if not isinstance(ref, str):
            raise ContractParseError(
                f"$ref at {pointer_of(trail)} is {type(ref).__name__}, not a string",
                where=_where(text, filename, trail),
            )
        if not ref.startswith("#"):
            continue  # external: resolved (or refused) when the diff follows it
        if ref not in resolved:
            try:
                if ref != "#" and not ref.startswith("#/"):
                    anchors.resolve(ref)  # `#name`: a `$anchor` of this document
                else:
                    resolve_pointer(doc, ref)
                resolved[ref] = True
            except (KeyError, ContractParseError):
                resolved[ref] = False
        if not resolved[ref]:
            dangling.append((pointer_of(trail), ref, trail))
    if not dangling:
        return
    at, ref, trail = min(dangling, key=lambda found: found[0])
    more = f" (and {len(dangling) - 1} more that point to nothing)" if len(dangling) > 1 else ""
    raise ContractParseError(
        f"$ref {ref!r} at {at} points to nothing in this document{more}",
        where=_where(text, filename, trail),
    )


def _where(text: str | None, filename: str | None, trail: list[Any]) -> str | None:
    """`file:line` of the `$ref` member at `trail`, or the file alone when the text cannot
    place it (no text, or a flow collection on the way)."""
    if text is None:
        return filename
    position = LineIndex(text).locate(pointer_of([*trail, "$ref"]))
    if position is None:
        return filename
    return f"{filename or '<input>'}:{position.line}"
