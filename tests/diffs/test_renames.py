"""Renames: a tool (or skill) removed and another added that are one unit renamed are one
breaking `tool-renamed` / `skill-renamed` finding on the old name (issue 45, point 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.conformance import DEFAULT_CORPUS
from controller.diffs import diff_mcp
from controller.diffs.a2a import diff_agent_card
from controller.diffs.explain import hint_for
from controller.diffs.loader import load_document
from controller.diffs.renames import name_key, pair_renames, schema_shape
from tests.diffs.conftest import card, skill, snap, tool

LONG = "Search the product catalogue by keyword and return the matching items with prices."
LONG_EDITED = "Search the catalogue by keyword and return the matching products with their prices."
OTHER = "Delete every order of a customer and send them an email confirming the deletion."
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
WIDER = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}


def found(before: Any, after: Any) -> list[tuple[str, str | None, str, Any, Any]]:
    return [
        (c.rule, c.location.tool if c.location else None, c.severity.value, c.before, c.after)
        for c in diff_mcp(before, after)
    ]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param(
            [tool("find", description=LONG)],
            [tool("search", description=LONG_EDITED)],
            [("tool-renamed", "find", "breaking", "find", "search")],
            id="equal-schema-similar-description",
        ),
        pytest.param(
            [tool("find", description=LONG, inputSchema={**SCHEMA, "description": "x"})],
            [tool("search", description=LONG, inputSchema=SCHEMA)],
            [("tool-renamed", "find", "breaking", "find", "search")],
            id="schema-equal-but-for-its-documentation",
        ),
        pytest.param(
            [tool("tavily-search", description=LONG)],
            [tool("tavily_search", description=OTHER, inputSchema=WIDER)],
            [("tool-renamed", "tavily-search", "breaking", "tavily-search", "tavily_search")],
            id="spelling-only-schema-and-text-changed",
        ),
        pytest.param(
            [tool("getUser")],
            [tool("get_user")],
            [("tool-renamed", "getUser", "breaking", "getUser", "get_user")],
            id="camel-to-snake",
        ),
        pytest.param(
            [tool("find", description=LONG)],
            [tool("search", description=OTHER)],
            [
                ("tool-removed", "find", "breaking", None, None),
                ("tool-added", "search", "info", None, None),
            ],
            id="different-description",
        ),
        pytest.param(
            [tool("find", description=LONG)],
            [
                tool(
                    "search",
                    description=LONG,
                    inputSchema={**SCHEMA, "properties": {"description": {"type": "string"}}},
                )
            ],
            [
                ("tool-removed", "find", "breaking", None, None),
                ("tool-added", "search", "info", None, None),
            ],
            id="a-property-named-description-counts",
        ),
        pytest.param(
            [tool("find", description=LONG)],
            [tool("search", description=LONG, inputSchema=WIDER)],
            [
                ("tool-removed", "find", "breaking", None, None),
                ("tool-added", "search", "info", None, None),
            ],
            id="different-schema",
        ),
        pytest.param(
            [tool("a")],
            [tool("b")],
            [
                ("tool-removed", "a", "breaking", None, None),
                ("tool-added", "b", "info", None, None),
            ],
            id="short-descriptions-are-no-evidence",
        ),
        pytest.param(
            [tool("find", description=LONG)],
            [tool("search", description=LONG), tool("lookup", description=LONG_EDITED)],
            [
                ("tool-removed", "find", "breaking", None, None),
                ("tool-added", "search", "info", None, None),
                ("tool-added", "lookup", "info", None, None),
            ],
            id="two-candidates-are-ambiguous",
        ),
        pytest.param(
            [tool("find", description=LONG), tool("seek", description=LONG)],
            [tool("search", description=LONG)],
            [
                ("tool-removed", "find", "breaking", None, None),
                ("tool-removed", "seek", "breaking", None, None),
                ("tool-added", "search", "info", None, None),
            ],
            id="one-added-claimed-twice-is-ambiguous",
        ),
        pytest.param(
            [tool("my-tool", description=LONG), tool("find", description=LONG)],
            [tool("my_tool", description=LONG)],
            [
                ("tool-renamed", "my-tool", "breaking", "my-tool", "my_tool"),
                ("tool-removed", "find", "breaking", None, None),
            ],
            id="spelling-pairs-first",
        ),
    ],
)
def test_mcp_renames(
    before: list[dict[str, Any]], after: list[dict[str, Any]], expected: list[Any]
) -> None:
    assert found(snap(before), snap(after)) == expected


def test_a_rename_says_what_else_changed_and_hints_the_new_name() -> None:
    (change,) = diff_mcp(
        snap([tool("tavily-search", description=LONG)]),
        snap([tool("tavily_search", description=OTHER)]),
    )
    assert (
        change.summary
        == "tool renamed from tavily-search to tavily_search; also changed: description"
    )
    hint = hint_for(change)
    assert "`tavily-search` now fails" in hint and "`tavily_search`" in hint
    assert change.agentAction == "remove_tool_usage"


def skills(before: Any, after: Any) -> list[tuple[str, str | None, str]]:
    return [
        (c.rule, c.location.tool if c.location else None, c.severity.value)
        for c in diff_agent_card(before, after)
    ]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param(
            card([skill("refund", description=LONG)]),
            card([skill("refund-order", description=LONG_EDITED)]),
            [("skill-renamed", "refund", "breaking")],
            id="equal-schemas-and-modes",
        ),
        pytest.param(
            card([skill("refund-order")]),
            card([skill("refundOrder")]),
            [("skill-renamed", "refund-order", "breaking")],
            id="spelling",
        ),
        pytest.param(
            card([skill("refund", description=LONG)]),
            card([skill("refund-order", description=LONG, inputModes=["text/plain"])]),
            [("skill-removed", "refund", "breaking"), ("skill-added", "refund-order", "info")],
            id="modes-differ",
        ),
        pytest.param(
            card([skill("refund", description=LONG)]),
            card([skill("refund-order", description=LONG, outputSchema=SCHEMA)]),
            [("skill-removed", "refund", "breaking"), ("skill-added", "refund-order", "info")],
            id="output-schema-differs",
        ),
        pytest.param(
            card([skill("refund", description=LONG)]),
            card([skill("refund-order", description=OTHER)]),
            [("skill-removed", "refund", "breaking"), ("skill-added", "refund-order", "info")],
            id="description-differs",
        ),
    ],
)
def test_a2a_renames(before: Any, after: Any, expected: list[Any]) -> None:
    assert skills(before, after) == expected


@pytest.mark.parametrize(
    ("name", "key"),
    [("tavily-search", "tavilysearch"), ("getUser", "getuser"), ("a.b/c d", "abcd")],
)
def test_name_key(name: str, key: str) -> None:
    assert name_key(name) == key


def test_pairing_is_in_the_removed_order() -> None:
    removed = {"b-x": {}, "a-x": {}}
    added = {"a_x": {}, "b_x": {}}
    assert pair_renames(removed, added, lambda _unit: None) == [("b-x", "b_x"), ("a-x", "a_x")]


@pytest.mark.parametrize(
    ("schema", "shape"),
    [
        pytest.param(
            {"type": "object", "title": "T", "description": "d", "$schema": "x"},
            {"type": "object"},
            id="documenting-keywords-left-out",
        ),
        pytest.param(
            {"properties": {"title": {"type": "string", "description": "d"}}},
            {"properties": {"title": {"type": "string"}}},
            id="a-property-named-title-is-a-name",
        ),
        pytest.param(
            {"enum": [{"description": 1}], "default": {"title": "t"}},
            {"enum": [{"description": 1}], "default": {"title": "t"}},
            id="values-kept-whole",
        ),
        pytest.param(
            {"anyOf": [{"type": "string", "examples": ["a"]}]},
            {"anyOf": [{"type": "string"}]},
            id="into-subschemas",
        ),
    ],
)
def test_schema_shape(schema: Any, shape: Any) -> None:
    assert schema_shape(schema) == shape


MCP_CORPUS = DEFAULT_CORPUS / "mcp"


@pytest.mark.skipif(
    not (MCP_CORPUS / "cases.json").exists(),
    reason=f"the real MCP pairs are not present at {MCP_CORPUS}",
)
def test_the_real_pairs_renames_are_their_rename_candidates() -> None:
    """Every rename of a real pair is one `tool-renamed`, and nothing else pairs."""
    cases = json.loads((MCP_CORPUS / "cases.json").read_text())["cases"]
    total = 0
    for case in cases:
        folder: Path = MCP_CORPUS / case["dir"]
        before = load_document((folder / "before.json").read_bytes(), "before", kind="mcp")
        after = load_document((folder / "after.json").read_bytes(), "after", kind="mcp")
        changes = diff_mcp(before, after)
        ours = sorted((c.before, c.after) for c in changes if c.rule == "tool-renamed")
        theirs = sorted((r["from"], r["to"]) for r in case["expected"]["rename_candidates"])
        assert ours == theirs, case["id"]
        paired = {old for old, _ in ours} | {new for _, new in ours}
        alone = {
            c.location.tool
            for c in changes
            if c.rule in ("tool-removed", "tool-added") and c.location is not None
        }
        assert not paired & alone, case["id"]
        total += len(ours)
    assert total == 4  # tavily 0.2.3 -> 0.2.22: its four tools' `-` became `_`
