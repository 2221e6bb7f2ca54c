"""Line numbers of JSON pointers in a contract's text, for annotations (GitHub, SARIF).

The loader parses with `json` and `yaml_rs`, which keep no positions, and the diff must not pay
for them. A `LineIndex` is built on demand from the text and reads only the containers on the
way to the pointers asked for (each container once): JSON through the `json` module's own
scanner (`raw_decode`, `scanstring`), block-style YAML by indentation, which YAML makes
structural (a mapping's keys share a column; whatever belongs to a key, a nested block or a
multi-line scalar, is indented deeper). Where the text cannot be followed further (a flow
collection inside YAML, an alias, a merge key, a complex key), the answer is the line of the
deepest node that was found, marked as not exact, so a line is never wrong, only less precise.
A `$ref` on the way is followed (a pointer into a referenced schema is answered where the
schema is written), and a name where an index is due picks the item of that `name` (MCP
tools: `/tools/search/inputSchema`). Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # json's C scanner
from typing import Any, TypeVar
from urllib.parse import unquote

import yaml_rs

from controller.diffs.refs import pointer_segments

MAX_REF_HOPS = 32
T = TypeVar("T")

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
# A block mapping key at a position: a plain key (up to ": " or ":" at the end of the line),
# or a quoted one; group 1 is the key's text, the match ends after the colon.
_PLAIN_KEY = re.compile(r"([^\s#'\"?\-{}\[\],&*!|>%@`][^\n]*?|-[^\s\n][^\n]*?)[ \t]*:(?=[ \t]|$)")
_SQ_KEY = re.compile(r"'((?:[^']|'')*)'[ \t]*:(?=[ \t]|$)")
_DQ_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"[ \t]*:(?=[ \t]|$)')
_PROPERTIES = re.compile(r"^(?:[&!][^\s]*[ \t]*)+(?:#.*)?$")  # an anchor and/or a tag alone


@dataclass(frozen=True)
class Position:
    """Where a pointer is in the text: its line (1-based) and whether the node itself was
    found (`exact`) or only its deepest ancestor that the text could be followed to."""

    line: int
    exact: bool


class LineIndex:
    """Pointers to lines in one document's text (JSON or YAML); see the module docstring."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._newlines: list[int] | None = None
        start = _WS.match(text).end()  # type: ignore[union-attr]
        self._json = text[start : start + 1] in ("{", "[")
        self._reader: _JsonReader | _YamlReader = (
            _JsonReader(text, start) if self._json else _YamlReader(text)
        )

    def locate(self, pointer: str) -> Position | None:
        """The line of `pointer` (`#/...` or `/...`), or of its deepest ancestor found;
        None when not even the document's root can be placed."""
        segments = pointer_segments(pointer)
        try:
            found = self._reader.walk(segments)
        except (ValueError, IndexError, RecursionError, yaml_rs.YAMLDecodeError):
            return None
        if found is None:
            return None
        offset_or_line, exact = found
        line = self._line_of(offset_or_line) if self._json else offset_or_line + 1
        return Position(line, exact)

    def _line_of(self, offset: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect_right(self._newlines, offset - 1) + 1


def _item_index(seg: str, items: list[T], name_of: Callable[[T], Any]) -> int | None:
    """The item a pointer segment names: its index, or, in driftgate's pointers into MCP
    snapshots (`/tools/search/...`), the first item whose `name` is the segment."""
    if seg.isdigit():
        return int(seg) if int(seg) < len(items) else None
    for index, item in enumerate(items):
        if name_of(item) == seg:
            return index
    return None


# -- JSON ------------------------------------------------------------------------------------


class _JsonReader:
    """Containers of a JSON text by their opening offset: key -> (key offset, value offset),
    or the offsets of an array's items."""

    def __init__(self, text: str, root: int) -> None:
        self.text = text
        self.root = root
        self._members: dict[int, dict[str, tuple[int, int]] | list[int]] = {}

    def walk(self, segments: list[str]) -> tuple[int, bool] | None:
        place, value = self.root, self.root
        pending = list(segments)
        hops = 0
        while pending:
            members = self._children(value)
            if members is None:
                return place, False
            seg = pending[0]
            if isinstance(members, dict):
                if seg in members:
                    place, value = members[seg]
                    pending.pop(0)
                    continue
                target = self._ref(members)
                if target is None or hops >= MAX_REF_HOPS:
                    return place, False
                hops += 1
                pending = _ref_segments(target) + pending
                place = value = self.root
                continue
            index = _item_index(seg, members, self._name_of)
            if index is None:
                return place, False
            place = value = members[index]
            pending.pop(0)
        return place, True

    def _name_of(self, item: int) -> Any:
        members = self._children(item)
        if not isinstance(members, dict) or "name" not in members:
            return None
        return _DECODER.raw_decode(self.text, members["name"][1])[0]

    def _ref(self, members: dict[str, tuple[int, int]]) -> str | None:
        if "$ref" not in members:
            return None
        ref, _ = _DECODER.raw_decode(self.text, members["$ref"][1])
        return ref if isinstance(ref, str) and ref.startswith("#") else None

    def _children(self, start: int) -> dict[str, tuple[int, int]] | list[int] | None:
        cached = self._members.get(start)
        if cached is not None:
            return cached
        text = self.text
        opener = text[start : start + 1]
        if opener not in ("{", "["):
            return None
        found: dict[str, tuple[int, int]] | list[int]
        i = _WS.match(text, start + 1).end()  # type: ignore[union-attr]
        if opener == "{":
            found = {}
            while text[i] != "}":
                key_at = i
                key, i = scanstring(text, i + 1)
                i = _WS.match(text, i).end() + 1  # type: ignore[union-attr]  # past ':'
                i = _WS.match(text, i).end()  # type: ignore[union-attr]
                found[key] = (key_at, i)  # the last of repeated keys wins, as in json.loads
                i = _after_value(text, i)
        else:
            found = []
            while text[i] != "]":
                found.append(i)
                i = _after_value(text, i)
        self._members[start] = found
        return found


def _after_value(text: str, i: int) -> int:
    """The offset of the next member after the value at `i` (past a comma), or of the
    closing bracket."""
    _, end = _DECODER.raw_decode(text, i)
    end = _WS.match(text, end).end()  # type: ignore[union-attr]
    if text[end] == ",":
        end = _WS.match(text, end + 1).end()  # type: ignore[union-attr]
    return end


# -- YAML (block style) ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Node:
    """A block node: it starts at `line`, `column` and ends before line `end`."""

    line: int
    column: int
    end: int


class _YamlReader:
    """Block mappings and sequences of a YAML text, followed by indentation."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        # Column of each line's first character, or -1 for blank and comment-only lines.
        self.indent = [_indent(line) for line in self.lines]
        self._members: dict[_Node, dict[str, tuple[int, _Node | None]] | list[_Node] | None] = {}
        self.root = self._root()

    def walk(self, segments: list[str]) -> tuple[int, bool] | None:
        if self.root is None:
            return None
        place, node = self.root.line, self.root
        pending = list(segments)
        hops = 0
        while pending:
            members = self._children(node) if node is not None else None
            if members is None:
                return place, False
            seg = pending[0]
            if isinstance(members, dict):
                if seg in members:
                    place, child = members[seg]
                    pending.pop(0)
                    if child is None and pending:
                        return place, False
                    node = child  # type: ignore[assignment]
                    continue
                target = self._ref(members)
                if target is None or hops >= MAX_REF_HOPS:
                    return place, False
                hops += 1
                pending = _ref_segments(target) + pending
                place, node = self.root.line, self.root
                continue
            index = _item_index(seg, members, self._name_of)
            if index is None:
                return place, False
            node = members[index]
            place = node.line
            pending.pop(0)
        return place, True

    def _name_of(self, item: _Node) -> Any:
        members = self._children(item)
        if not isinstance(members, dict) or "name" not in members:
            return None
        line, value = members["name"]
        if value is None or value.line != line:
            return None  # a name written over several lines: not matched
        try:
            return yaml_rs.loads(self.lines[line][value.column :], parse_datetime=False)
        except yaml_rs.YAMLDecodeError:
            return None

    def _root(self) -> _Node | None:
        for number, line in enumerate(self.lines):
            if self.indent[number] < 0 or line.startswith("%"):
                continue
            if line.startswith("---"):
                rest = line[3:].strip()
                if rest and not rest.startswith("#"):
                    return None  # content on the document marker's line: not followed
                continue
            return _Node(number, self.indent[number], len(self.lines))
        return None

    def _ref(self, members: dict[str, tuple[int, _Node | None]]) -> str | None:
        line_no, value = members["$ref"] if "$ref" in members else (0, None)
        if value is None or value.line != line_no:
            return None
        # The value as YAML reads it: a quoted string may be folded over the lines after
        # the key (a long reference continued after an escaped line break).
        written = "\n".join(
            [self.lines[line_no][value.column :], *self.lines[line_no + 1 : value.end]]
        )
        try:
            ref = yaml_rs.loads(written, parse_datetime=False)
        except yaml_rs.YAMLDecodeError:
            return None
        return ref if isinstance(ref, str) and ref.startswith("#") else None

    def _children(self, node: _Node) -> dict[str, tuple[int, _Node | None]] | list[_Node] | None:
        if node in self._members:
            return self._members[node]
        text = self.lines[node.line][node.column :]
        found: dict[str, tuple[int, _Node | None]] | list[_Node] | None
        if _is_item(text):
            found = self._sequence(node)
        elif _key_at(text) is not None:
            found = self._mapping(node)
        else:
            found = None  # a scalar, a flow collection, an alias: nothing to follow
        self._members[node] = found
        return found

    def _entries(self, node: _Node) -> list[tuple[int, int]]:
        """The entries of the collection at `node`: each one's first line and the line it
        ends before. Entries start at the node's column (mapping keys, or `- ` items); a
        line less indented ends the collection, and so does a key after a sequence's items,
        while a compact sequence at a mapping's column belongs to the key before it."""
        column = node.column
        items = _is_item(self.lines[node.line][column:])
        starts = [node.line]
        end = node.end
        for number in range(node.line + 1, node.end):
            indent = self.indent[number]
            if indent < 0 or indent > column:
                continue
            if indent < column:
                end = number
                break
            if _is_item(self.lines[number][column:]) == items:
                starts.append(number)
            elif items:
                end = number
                break
        return list(zip(starts, [*starts[1:], end], strict=True))

    def _mapping(self, node: _Node) -> dict[str, tuple[int, _Node | None]]:
        found: dict[str, tuple[int, _Node | None]] = {}
        for start, end in self._entries(node):
            key = _key_at(self.lines[start][node.column :])
            if key is None:
                continue  # a complex key (`? `): not followed
            name, after = key
            found[name] = (start, self._value(start, node.column + after, end, node.column))
        return found

    def _sequence(self, node: _Node) -> list[_Node]:
        found: list[_Node] = []
        for start, end in self._entries(node):
            line = self.lines[start]
            content = node.column + 1
            while content < len(line) and line[content] in " \t":
                content += 1
            if content >= len(line) or line[content] == "#":
                found.append(self._below(start, end, node.column) or _Node(start, content, end))
            else:
                found.append(_Node(start, content, end))
        return found

    def _value(self, line: int, column: int, end: int, parent: int) -> _Node | None:
        """The node of a mapping value that starts after the key's colon at `column`."""
        rest = self.lines[line][column:].strip()
        if rest and not rest.startswith("#") and not _PROPERTIES.match(rest):
            offset = len(self.lines[line]) - len(self.lines[line][column:].lstrip())
            return _Node(line, offset, end)  # on the key's line: a scalar or flow (a leaf)
        return self._below(line, end, parent)

    def _below(self, line: int, end: int, parent: int) -> _Node | None:
        """A block node on the lines after `line`: deeper than `parent`, or a compact
        sequence at its column."""
        for number in range(line + 1, end):
            indent = self.indent[number]
            if indent < 0:
                continue
            if indent > parent or (indent == parent and _is_item(self.lines[number][parent:])):
                return _Node(number, indent, end)
            return None
        return None


def _indent(line: str) -> int:
    stripped = line.lstrip(" ")
    if not stripped.strip() or stripped.startswith("#"):
        return -1
    return len(line) - len(stripped)


def _is_item(text: str) -> bool:
    return text == "-" or text.startswith(("- ", "-\t"))


def _key_at(text: str) -> tuple[str, int] | None:
    """The key at the start of `text` and the offset just past its colon, or None."""
    first = text[:1]
    if first == "'":
        m = _SQ_KEY.match(text)
        return (m[1].replace("''", "'"), m.end()) if m else None
    if first == '"':
        m = _DQ_KEY.match(text)
        if m is None:
            return None
        decoded = yaml_rs.loads(f'"{m[1]}"', parse_datetime=False)
        return (str(decoded), m.end())
    m = _PLAIN_KEY.match(text)
    return (m[1], m.end()) if m else None


def _ref_segments(ref: str) -> list[str]:
    """The segments of a local `$ref` (a URI fragment: percent-encoding allowed)."""
    return [unquote(s) if "%" in s else s for s in pointer_segments(ref)]
