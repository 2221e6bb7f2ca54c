"""The surface of a contract and its marks: a table of baseline, snapshot and the changes the
engine found, and the marks each side gets."""

from __future__ import annotations

from typing import Any

import pytest

from controller.contracts.kinds import CONTRACT_KINDS
from controller.diffs import diff_mcp
from controller.diffs.surface import compare


def tools(*names: str, described: str = "") -> dict[str, Any]:
    return {"tools": [{"name": n, "description": described, "inputSchema": {}} for n in names]}


@pytest.mark.parametrize(
    ("before", "after", "now", "baseline"),
    [
        (tools("a", "b"), tools("a", "b"), {"a": "same", "b": "same"}, {"a": "same", "b": "same"}),
        (tools("a", "b"), tools("a"), {"a": "same"}, {"a": "same", "b": "removed"}),
        (tools("a"), tools("a", "c"), {"a": "same", "c": "added"}, {"a": "same"}),
    ],
)
def test_mcp_tools_are_marked(
    before: dict[str, Any], after: dict[str, Any], now: dict[str, str], baseline: dict[str, str]
) -> None:
    view = compare(
        CONTRACT_KINDS.surface_of("mcp", before),
        CONTRACT_KINDS.surface_of("mcp", after),
        diff_mcp(before, after),
    )
    assert {m.name: m.mark for m in view.current} == now
    assert {m.name: m.mark for m in view.baseline} == baseline
    for marked in (*view.current, *view.baseline):
        assert (marked.mark in ("added", "removed")) == bool(marked.changes)


def test_openapi_operations_carry_method_path_and_summary() -> None:
    doc = {"openapi": "3.0.3", "paths": {"/v1/x": {"get": {"summary": "List x\nmore"}}}}
    assert [(i.name, i.summary) for i in CONTRACT_KINDS.surface_of("openapi", doc)] == [
        ("GET /v1/x", "List x")
    ]
    assert CONTRACT_KINDS.surface_of("rest", {"a": 1}) == []
