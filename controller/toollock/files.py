"""Reading a lock file's bytes: driftgate's `.driftgate/mcp.lock` or the hosted product's
`driftguard-lock.json` (told apart by their content), into entries, or into problems that
each name a line and a column, as every bad `.driftgate/` file does. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from controller.toollock.hosted import is_hosted, parse_hosted
from controller.toollock.lock import LockInvalid, parse

DRIFTGATE = "driftgate"
DRIFTGUARD = "driftguard"
MAX_LOCK_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class LockProblem:
    """One thing wrong in a lock file, at a 1-based line and column."""

    line: int
    column: int
    message: str
    path: str = ""  # as keys and indexes joined by dots: servers.catalog.tools.search
    parts: tuple[str | int, ...] = ()


class LockFileInvalid(Exception):
    """A lock file that cannot be used, with every problem found."""

    def __init__(self, problems: list[LockProblem]) -> None:
        super().__init__(problems[0].message if problems else "invalid lock")
        self.problems = problems


@dataclass(frozen=True)
class Lock:
    """A lock file read: its format (`driftgate` or `driftguard`) and its entries by server."""

    format: str
    servers: dict[str, dict[str, Any]]
    # Where each server is named in the file (line, column), for problems about it.
    lines: dict[str, tuple[int, int]] = field(default_factory=dict)


def load_lock(raw: bytes, *, max_bytes: int = MAX_LOCK_BYTES) -> Lock:
    """The lock in `raw`, either format; `LockFileInvalid` for anything else."""
    if len(raw) > max_bytes:
        raise LockFileInvalid([LockProblem(1, 1, f"the lock is larger than {max_bytes} bytes")])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LockFileInvalid([LockProblem(1, 1, "the lock is not UTF-8 text")]) from None
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise LockFileInvalid(
            [LockProblem(exc.lineno, exc.colno, f"invalid JSON: {exc.msg}")]
        ) from None
    except _DuplicateKey as exc:
        raise LockFileInvalid([LockProblem(1, 1, f"key {exc.key!r} appears twice")]) from None
    hosted = is_hosted(data)
    try:
        servers = parse_hosted(data) if hosted else parse(data)
    except LockInvalid as exc:
        raise LockFileInvalid(
            [
                LockProblem(*_locate(text, path), message, _dotted(path), path)
                for path, message in exc.problems
            ]
        ) from None
    paths: dict[str, tuple[str | int, ...]]
    if hosted:
        listed = [str(s.get("name") or "").strip() for s in data["servers"]]
        paths = {name: ("servers", listed.index(name), "name") for name in servers}
    else:
        paths = {name: ("servers", name) for name in servers}
    lines = {name: _locate(text, path) for name, path in paths.items()}
    return Lock(DRIFTGUARD if hosted else DRIFTGATE, servers, lines)


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)  # a lock with two entries for one name pins neither
        out[key] = value
    return out


def _dotted(path: Sequence[str | int]) -> str:
    return ".".join(str(part) for part in path)


def _locate(text: str, path: Sequence[str | int]) -> tuple[int, int]:
    """Line and column of the value at `path` (else of its nearest ancestor) in JSON `text`:
    JSON is YAML, whose nodes keep their marks."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return 1, 1
    where = (1, 1)
    for part in path:
        if node is None:
            break
        where = (node.start_mark.line + 1, node.start_mark.column + 1)
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    child = value
                    where = (key.start_mark.line + 1, key.start_mark.column + 1)
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                child = node.value[part]
                where = (child.start_mark.line + 1, child.start_mark.column + 1)
        if child is None:
            return where
        node = child
    return where
