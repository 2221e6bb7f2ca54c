"""Property tests: a document diffed with itself is empty; generated schemas never crash."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.diffs import diff_json_samples, diff_mcp, diff_openapi, diff_schemas, fingerprint

TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))


def _schemas() -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=3)),
            "enum": st.lists(SCALARS, max_size=3),
            "maxLength": st.integers(0, 10),
            "minimum": st.integers(-3, 3),
            "pattern": st.sampled_from(["^a$", ".*", ""]),
            "format": st.sampled_from(["date", "uuid"]),
            "nullable": st.booleans(),
            "default": SCALARS,
            "$ref": st.sampled_from(["#/components/schemas/A", "#/components/schemas/B"]),
        },
    )
    return st.recursive(
        st.one_of(leaf, st.booleans()),
        lambda children: st.fixed_dictionaries(
            {},
            optional={
                "type": TYPES,
                "properties": st.dictionaries(st.sampled_from("abc"), children, max_size=3),
                "required": st.lists(st.sampled_from("abcd"), max_size=3),
                "items": children,
                "additionalProperties": st.one_of(st.booleans(), children),
                "oneOf": st.lists(children, max_size=3),
                "anyOf": st.lists(children, max_size=3),
                "allOf": st.lists(children, max_size=2),
            },
        ),
        max_leaves=8,
    )


def _doc(body: Any, a: Any, b: Any) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/x/{id}": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                    "responses": {
                        "200": {
                            "description": "",
                            "content": {"application/json": {"schema": body}},
                        }
                    },
                }
            }
        },
        "components": {"schemas": {"A": a, "B": b}},
    }


FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(_schemas(), _schemas(), _schemas())
def test_openapi_diff_of_a_document_with_itself_is_empty(body: Any, a: Any, b: Any) -> None:
    doc = _doc(body, a, b)
    assert diff_openapi(doc, copy.deepcopy(doc)) == []
    assert fingerprint(doc) == fingerprint(copy.deepcopy(doc))


@FAST
@given(_schemas(), _schemas(), _schemas(), _schemas())
def test_openapi_diff_never_crashes(body1: Any, body2: Any, a: Any, b: Any) -> None:
    changes = diff_openapi(_doc(body1, a, b), _doc(body2, b, a))
    for c in changes:
        assert c.rule and c.severity and c.path.startswith("/")


@FAST
@given(_schemas(), _schemas())
def test_schema_diff_never_crashes_in_both_directions(a: Any, b: Any) -> None:
    root = {"components": {"schemas": {"A": a, "B": b}}}
    for direction in ("request", "response"):
        for x, y in ((a, b), (b, a), (a, a)):
            wrapped_x = {"allOf": [x]} if isinstance(x, bool) else x
            wrapped_y = {"allOf": [y]} if isinstance(y, bool) else y
            changes = diff_schemas({**root, **wrapped_x}, {**root, **wrapped_y}, direction)
            if x is y:
                assert changes == []


JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from("abc"), children, max_size=3),
    ),
    max_leaves=10,
)


@FAST
@given(JSON, JSON)
def test_sample_diff_never_crashes_and_self_diff_is_empty(a: Any, b: Any) -> None:
    diff_json_samples(a, b, profile="cli")
    assert diff_json_samples(a, a, profile="hosted") == []


@FAST
@given(
    st.lists(
        st.fixed_dictionaries({"name": st.sampled_from("abcd"), "inputSchema": _schemas()}),
        max_size=4,
    )
)
def test_mcp_self_diff_is_empty(tools: list[dict[str, Any]]) -> None:
    snap = {"server_info": {"name": "s"}, "tools": tools}
    assert diff_mcp(snap, copy.deepcopy(snap)) == []
