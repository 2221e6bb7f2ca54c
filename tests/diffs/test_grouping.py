"""Grouped changes: a change to a schema that many operations reference is one cause with
the operations it affects; everything else stands alone."""

from __future__ import annotations

import copy
from typing import Any

from controller.diffs import DiffOptions, diff_openapi
from controller.diffs.grouping import group_changes


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _document(**charge: Any) -> dict[str, Any]:
    """Three operations answer a `charge`; one also takes a `limit` parameter."""

    def answering(schema: dict[str, Any], **operation: Any) -> dict[str, Any]:
        content = {"application/json": {"schema": schema}}
        return {"responses": {"200": {"description": "ok", "content": content}}, **operation}

    limit = {"name": "limit", "in": "query", "schema": {"type": "integer"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/charges": {
                "get": answering({"type": "array", "items": _ref("charge")}, parameters=[limit]),
                "post": answering(_ref("charge")),
            },
            "/charges/{id}": {
                "get": answering(
                    _ref("charge"),
                    parameters=[
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                )
            },
        },
        "components": {
            "schemas": {
                "charge": {
                    "type": "object",
                    "required": ["id", "amount"],
                    "properties": {"id": {"type": "string"}, "amount": {"type": "integer"}},
                    **charge,
                }
            }
        },
    }


def test_a_shared_schema_change_is_one_cause_with_every_operation() -> None:
    base = _document()
    revision = copy.deepcopy(base)
    charge = revision["components"]["schemas"]["charge"]
    del charge["properties"]["amount"]
    charge["required"] = ["id"]
    del revision["paths"]["/charges"]["get"]["parameters"]
    flat = [c for c in diff_openapi(base, revision) if c.severity.value == "breaking"]
    removed = [c for c in flat if c.rule == "response-property-removed-required"]
    assert len(removed) == 3  # once per operation that reaches `charge`
    assert {c.origin for c in removed} == {"#/components/schemas/charge/properties/amount"}

    grouped = group_changes(diff_openapi(base, revision))
    (cause,) = [c for c in grouped if c.rule == "response-property-removed-required"]
    assert cause.affected == ["GET /charges", "GET /charges/{id}", "POST /charges"]
    assert cause.to_json()["affectedCount"] == 3
    # The first occurrence stands for the group; grouping again changes nothing.
    assert cause.path == removed[0].path
    assert group_changes(grouped) == grouped
    # A change of one operation's own parameter has no origin and stays as it is.
    (parameter,) = [c for c in grouped if c.rule.startswith("request-parameter-removed")]
    assert parameter.origin is None and parameter.affected is None


def test_different_values_or_rules_are_different_causes() -> None:
    base = _document()
    revision = copy.deepcopy(base)
    props = revision["components"]["schemas"]["charge"]["properties"]
    props["id"] = {"type": "integer"}
    props["amount"] = {"type": "string"}
    grouped = group_changes(diff_openapi(base, revision))
    origins = sorted(str(c.origin) for c in grouped)
    assert origins == [
        "#/components/schemas/charge/properties/amount",
        "#/components/schemas/charge/properties/id",
    ]
    assert all(c.affected is not None and len(c.affected) == 3 for c in grouped)


def test_the_engine_groups_as_grouping_does() -> None:
    """`DiffOptions(grouped=True)` builds one change per cause as it goes; the result is
    `group_changes` of the flat diff, change for change."""
    base = _document()
    revision = copy.deepcopy(base)
    charge = revision["components"]["schemas"]["charge"]
    charge["properties"]["amount"] = {"type": "string"}
    charge["properties"]["note"] = {"type": "string"}
    del revision["paths"]["/charges"]["get"]["parameters"]
    engine = diff_openapi(base, revision, options=DiffOptions(grouped=True))
    flat = group_changes(diff_openapi(base, revision))
    assert [c.to_json() for c in engine] == [c.to_json() for c in flat]
    assert any(c.affected and len(c.affected) == 3 for c in engine)
