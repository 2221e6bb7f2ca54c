"""The surface of a contract: the operations of an OpenAPI document, the tools of an MCP
server or the skills of an A2A agent card, each with its line of description, and how a
baseline's surface and a snapshot's compare once the diff engine has classified their changes.

Pure: documents and changes in, a view out. Each contract kind names its surface function
(`controller.contracts.kinds`). The changes come from the engine
(`controller.checks.engine.diff_documents`); this module only places them on the operations and
tools they touch, it never compares contracts itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controller.diffs.a2a import normalize_agent_card
from controller.diffs.mcp import normalize_mcp_snapshot
from controller.diffs.openapi import METHODS
from controller.model.change import Change

SEVERITY_ORDER = {"breaking": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Item:
    """One operation (`GET /v1/charges`) or tool (`search`), with its summary."""

    name: str
    summary: str


@dataclass
class Marked:
    """An item of a side, marked: `added`, `removed`, `changed` or `same`."""

    name: str
    summary: str
    mark: str
    severity: str | None = None
    changes: list[Change] = field(default_factory=list)


@dataclass(frozen=True)
class SurfaceView:
    current: list[Marked]
    baseline: list[Marked]
    elsewhere: list[Change]  # changes to no operation or tool (servers, info, schemas alone)

    @property
    def counts(self) -> dict[str, int]:
        names = {m.name: m.mark for m in (*self.current, *self.baseline)}
        return {mark: sum(1 for v in names.values() if v == mark) for mark in MARKS}


MARKS = ("added", "removed", "changed", "same")


def operation_items(document: Any) -> list[Item]:
    """The operations of an OpenAPI document, in document order."""
    return list(_operations(document))


def tool_items(document: Any) -> list[Item]:
    """The tools of an MCP snapshot, in document order."""
    tools = normalize_mcp_snapshot(document).tools or {}
    return [Item(name, _line(tool.get("description"))) for name, tool in tools.items()]


def skill_items(document: Any) -> list[Item]:
    """The skills of an A2A agent card, in document order."""
    skills = normalize_agent_card(document).skills
    return [Item(name, _line(skill.get("description"))) for name, skill in skills.items()]


def compare(baseline: list[Item], current: list[Item], changes: Iterable[Change]) -> SurfaceView:
    """Both sides marked: an item only in the snapshot is added, only in the baseline removed,
    in both with a change the engine placed on it changed."""
    touched: dict[str, list[Change]] = {}
    elsewhere: list[Change] = []
    for change in changes:
        if change.ignored:
            continue
        names = _places(change)
        for name in names:
            touched.setdefault(name, []).append(change)
        if not names:
            elsewhere.append(change)
    before = {item.name for item in baseline}
    after = {item.name for item in current}

    def marked(item: Item, absent: str) -> Marked:
        found = sorted(touched.get(item.name, []), key=lambda c: _rank(c.severity.value))
        if item.name not in (after if absent == "removed" else before):
            mark = absent
        else:
            mark = "changed" if found else "same"
        severity = found[0].severity.value if found else None
        return Marked(item.name, item.summary, mark, severity, found)

    return SurfaceView(
        current=[marked(item, "added") for item in current],
        baseline=[marked(item, "removed") for item in baseline],
        elsewhere=sorted(elsewhere, key=lambda c: _rank(c.severity.value)),
    )


def _places(change: Change) -> list[str]:
    names = list(change.affected or [])
    if change.location is not None:
        own = change.location.operation or change.location.tool
        if own and own not in names:
            names.insert(0, own)
    return names


def _rank(severity: str) -> int:
    return SEVERITY_ORDER.get(severity, 3)


def _operations(document: Any) -> Iterable[Item]:
    paths = document.get("paths") if isinstance(document, dict) else None
    for raw_path, path_item in (paths or {}).items():
        if not isinstance(path_item, dict):
            continue
        for method in METHODS:
            operation = path_item.get(method)
            if isinstance(operation, dict):
                summary = operation.get("summary") or operation.get("description")
                yield Item(f"{method.upper()} {raw_path}", _line(summary))


def _line(text: Any) -> str:
    """The first line of a description, at most 200 characters."""
    if not isinstance(text, str):
        return ""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:200]
