"""Table-driven tests: one row per schema rule, checked in both directions.

Each row is (before, after, aspect, request severity, response severity); the schemas sit
under a property `f` of an object so the rule ids are `request-property-<aspect>` and
`response-property-<aspect>`.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.diffs import diff_schemas

S: dict[str, Any] = {"type": "string"}
N: dict[str, Any] = {"type": "number"}
INT: dict[str, Any] = {"type": "integer"}
ARR: dict[str, Any] = {"type": "array", "items": S}


def _with(base: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {**base, **kw}


# before, after, aspect, request severity, response severity
ROWS: list[tuple[Any, Any, str, str, str]] = [
    (S, INT, "type-changed", "breaking", "breaking"),
    (INT, N, "type-generalized", "info", "breaking"),
    (N, INT, "type-specialized", "breaking", "info"),
    (S, {"type": ["string", "integer"]}, "list-of-types-widened", "info", "breaking"),
    ({"type": ["string", "integer"]}, S, "list-of-types-narrowed", "breaking", "info"),
    (S, {"type": ["string", "null"]}, "became-nullable", "info", "breaking"),
    (_with(S, nullable=True), S, "became-not-nullable", "breaking", "info"),
    (S, _with(S, format="date"), "format-added", "warning", "info"),
    (_with(S, format="date"), S, "format-removed", "info", "warning"),
    (
        _with(S, format="date"),
        _with(S, format="date-time"),
        "format-changed",
        "breaking",
        "breaking",
    ),
    (_with(S, enum=["a"]), _with(S, enum=["a", "b"]), "enum-value-added", "info", "warning"),
    (_with(S, enum=["a", "b"]), _with(S, enum=["a"]), "enum-value-removed", "breaking", "info"),
    (S, _with(S, enum=["a"]), "became-enum", "breaking", "info"),
    (_with(S, enum=["a"]), S, "enum-removed", "info", "warning"),
    (S, _with(S, const="a"), "const-added", "breaking", "info"),
    (_with(S, const="a"), S, "const-removed", "info", "breaking"),
    (_with(S, const="a"), _with(S, const="b"), "const-changed", "breaking", "breaking"),
    (_with(S, maxLength=10), _with(S, maxLength=5), "max-length-decreased", "breaking", "info"),
    (_with(S, maxLength=5), _with(S, maxLength=10), "max-length-increased", "info", "warning"),
    (S, _with(S, maxLength=5), "max-length-set", "warning", "info"),
    (_with(S, maxLength=5), S, "max-length-unset", "info", "warning"),
    (_with(S, minLength=1), _with(S, minLength=2), "min-length-increased", "breaking", "info"),
    (_with(S, minLength=2), _with(S, minLength=1), "min-length-decreased", "info", "breaking"),
    (_with(N, maximum=10), _with(N, maximum=5), "max-decreased", "breaking", "info"),
    (_with(N, minimum=1), _with(N, minimum=0), "min-decreased", "info", "breaking"),
    (N, _with(N, minimum=0), "min-set", "warning", "info"),
    (
        _with(N, exclusiveMaximum=10),
        _with(N, exclusiveMaximum=5),
        "exclusive-max-decreased",
        "breaking",
        "info",
    ),
    (
        _with(N, exclusiveMinimum=1),
        _with(N, exclusiveMinimum=0),
        "exclusive-min-decreased",
        "info",
        "breaking",
    ),
    (_with(ARR, maxItems=5), _with(ARR, maxItems=3), "max-items-decreased", "breaking", "info"),
    (_with(ARR, minItems=0), _with(ARR, minItems=1), "min-items-increased", "breaking", "info"),
    (ARR, _with(ARR, uniqueItems=True), "unique-items-set", "warning", "info"),
    (N, _with(N, multipleOf=2), "multiple-of-set", "warning", "info"),
    (_with(N, multipleOf=4), _with(N, multipleOf=2), "multiple-of-generalized", "info", "breaking"),
    (_with(N, multipleOf=2), _with(N, multipleOf=6), "multiple-of-specialized", "breaking", "info"),
    (_with(N, multipleOf=2), _with(N, multipleOf=3), "multiple-of-changed", "breaking", "breaking"),
    ({"not": S}, {"not": INT}, "not-changed", "warning", "warning"),
    (S, _with(S, pattern="^a$"), "pattern-added", "warning", "info"),
    (_with(S, pattern="^a$"), _with(S, pattern="^b$"), "pattern-changed", "warning", "info"),
    (_with(S, pattern="^a$"), _with(S, pattern=".*"), "pattern-generalized", "info", "info"),
    (_with(S, pattern="^a$"), S, "pattern-removed", "info", "info"),
    (S, _with(S, default="x"), "default-value-added", "info", "info"),
    (_with(S, default="x"), _with(S, default="y"), "default-value-changed", "info", "info"),
    (
        {"type": "object"},
        {"type": "object", "additionalProperties": False},
        "additional-properties-forbidden",
        "warning",
        "info",
    ),
    (
        {"type": "object", "additionalProperties": False},
        {"type": "object"},
        "additional-properties-allowed",
        "info",
        "info",
    ),
    ({"oneOf": [S, INT]}, {"oneOf": [S, INT, N]}, "one-of-added", "info", "breaking"),
    ({"oneOf": [S, INT, N]}, {"oneOf": [S, INT]}, "one-of-removed", "breaking", "info"),
    ({"anyOf": [S, INT, N]}, {"anyOf": [S, INT]}, "any-of-removed", "breaking", "info"),
    ({"allOf": [S]}, {"allOf": [S, INT]}, "all-of-added", "breaking", "info"),
    ({"allOf": [S, INT]}, {"allOf": [S]}, "all-of-removed", "warning", "info"),
    (
        {"allOf": [S, {"description": "note"}]},
        {"allOf": [S]},
        "all-of-removed-annotation-only",
        "info",
        "info",
    ),
    (ARR, _with(ARR, contains=S), "contains-added", "breaking", "info"),
    (ARR, _with(ARR, prefixItems=[S]), "prefix-items-added", "info", "breaking"),
    (
        {"type": "object"},
        {"type": "object", "unevaluatedProperties": False},
        "unevaluated-properties-added",
        "breaking",
        "info",
    ),
    (
        {"type": "object"},
        {"type": "object", "dependentRequired": {"a": ["b"]}},
        "dependent-required-added",
        "breaking",
        "info",
    ),
    (
        {"type": "object"},
        {"type": "object", "patternProperties": {"^x": S}},
        "pattern-property-added",
        "breaking",
        "info",
    ),
    (
        {"type": "object"},
        {"type": "object", "discriminator": {"propertyName": "k"}},
        "discriminator-added",
        "info",
        "info",
    ),
]

# Membership rows: (before object, after object, aspect, request severity, response severity).
OBJ_A = {"type": "object", "properties": {"a": S}}
OBJ_A_REQ = {"type": "object", "properties": {"a": S}, "required": ["a"]}
OBJ_AB = {"type": "object", "properties": {"a": S, "b": S}}
OBJ_AB_REQ = {"type": "object", "properties": {"a": S, "b": S}, "required": ["b"]}
MEMBERSHIP: list[tuple[Any, Any, str, str, str]] = [
    (OBJ_A, OBJ_AB, "added-optional", "info", "info"),
    (OBJ_A, OBJ_AB_REQ, "added-required", "breaking", "info"),
    (OBJ_A, OBJ_A_REQ, "became-required", "breaking", "info"),
    (OBJ_A_REQ, OBJ_A, "became-optional", "info", "breaking"),
]


def _rules(before: Any, after: Any, direction: str) -> dict[str, str]:
    return {c.rule: c.severity.value for c in diff_schemas(before, after, direction)}


@pytest.mark.parametrize(
    ("before", "after", "aspect", "req", "resp"), ROWS, ids=[r[2] for r in ROWS]
)
def test_schema_rule_in_both_directions(
    before: Any, after: Any, aspect: str, req: str, resp: str
) -> None:
    wrap_b = {"type": "object", "properties": {"f": before}}
    wrap_a = {"type": "object", "properties": {"f": after}}
    assert _rules(wrap_b, wrap_a, "request").get(f"request-property-{aspect}") == req
    assert _rules(wrap_b, wrap_a, "response").get(f"response-property-{aspect}") == resp
    # At the root the same aspect is reported on the body.
    assert _rules(before, after, "request").get(f"request-body-{aspect}") == req


@pytest.mark.parametrize(
    ("before", "after", "aspect", "req", "resp"), MEMBERSHIP, ids=[r[2] for r in MEMBERSHIP]
)
def test_membership_rule_in_both_directions(
    before: Any, after: Any, aspect: str, req: str, resp: str
) -> None:
    assert _rules(before, after, "request").get(f"request-property-{aspect}") == req
    assert _rules(before, after, "response").get(f"response-property-{aspect}") == resp


def test_property_removed_depends_on_direction_and_required() -> None:
    assert _rules(OBJ_AB, OBJ_A, "request") == {"request-property-removed": "warning"}
    assert _rules(OBJ_AB, OBJ_A, "response") == {"response-property-removed": "warning"}
    assert _rules(OBJ_AB_REQ, OBJ_A, "response") == {
        "response-property-removed-required": "breaking"
    }
    closed = {**OBJ_A, "additionalProperties": False}
    closed_before = {**OBJ_AB, "additionalProperties": False}
    assert _rules(closed_before, closed, "request") == {
        "request-property-removed-closed-schema": "breaking"
    }


def test_required_with_default_is_still_breaking_in_requests() -> None:
    after = {
        "type": "object",
        "properties": {"a": S, "b": _with(S, default="x")},
        "required": ["b"],
    }
    assert _rules(OBJ_A, after, "request") == {
        "request-property-added-required-with-default": "breaking"
    }


def test_read_only_fields_do_not_count_in_requests() -> None:
    after = {
        "type": "object",
        "properties": {"a": S, "id": _with(S, readOnly=True)},
        "required": ["id"],
    }
    assert _rules(OBJ_A, after, "request") == {}
    assert _rules(OBJ_A, after, "response") == {"response-property-added-required": "info"}


def test_enum_order_is_not_a_change() -> None:
    assert _rules(_with(S, enum=["a", "b"]), _with(S, enum=["b", "a"]), "request") == {}
