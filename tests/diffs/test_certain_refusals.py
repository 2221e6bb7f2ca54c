"""A new constraint that refuses old values for certain is breaking, one that only may refuse
some is a warning (issue 41, points 2 and 3): disjoint ranges, values the schema names
itself (enum, const, default, examples) that a new bound or pattern refuses, values listed
under `not`, and 2020-12 references by `$anchor` / `$dynamicRef`."""

from __future__ import annotations

from typing import Any

import pytest

from controller.diffs.core import changes_from_findings
from controller.diffs.jsonschema import diff_schemas
from controller.diffs.rules import Direction


def rules(before: Any, after: Any, root: Any = None) -> dict[str, str]:
    """Rule id -> severity, both directions, for a property `f` changed from before to after."""
    found: dict[str, str] = {}
    for direction in ("request", "response"):
        base = {"type": "object", "properties": {"f": before}, **(root or {})}
        revision = {"type": "object", "properties": {"f": after}, **(root or {})}
        changes = changes_from_findings(
            diff_schemas(base, revision, direction),
            direction=Direction(direction),
            root_prefix=f"{direction}-body",
            nested_prefix=f"{direction}-property",
            pointer="",
            location=None,
            label="body",
            causes=None,
        )
        found.update({c.rule: c.severity.value for c in changes})
    return found


INT = {"type": "integer"}
STR = {"type": "string"}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({**INT, "minimum": 1}, {**INT, "exclusiveMaximum": 1}),
        ({**INT, "maximum": 10}, {**INT, "minimum": 20}),
        ({**STR, "maxLength": 5}, {**STR, "minLength": 10}),
        ({"type": "array", "maxItems": 2}, {"type": "array", "minItems": 3}),
    ],
    ids=["minimum 1 -> exclusiveMaximum 1", "maximum 10 -> minimum 20", "lengths", "item counts"],
)
def test_disjoint_ranges_break_both_sides(before: Any, after: Any) -> None:
    found = rules(before, after)
    assert found["request-property-range-disjoint"] == "breaking"
    assert found["response-property-range-disjoint"] == "breaking"


def test_a_new_bound_that_refuses_nothing_named_stays_a_warning() -> None:
    assert rules(STR, {**STR, "maxLength": 255}) == {
        "request-property-max-length-set": "warning",
        "response-property-max-length-set": "info",
    }


@pytest.mark.parametrize(
    ("before", "after", "value"),
    [
        (
            {**STR, "enum": ["abc"], "pattern": "^[a-z]+$"},
            {**STR, "enum": ["abc"], "pattern": "^[A-Z]+$"},
            "abc",
        ),
        ({**STR, "example": "abc"}, {**STR, "example": "abc", "pattern": "^[0-9]+$"}, "abc"),
        ({**INT, "default": 20, "maximum": 50}, {**INT, "default": 20, "maximum": 10}, 20),
        (
            {**STR, "examples": ["a-long-name"]},
            {**STR, "examples": ["a-long-name"], "maxLength": 4},
            "a-long-name",
        ),
    ],
    ids=[
        "pattern changed under an enum",
        "pattern added under an example",
        "default above a new maximum",
        "examples longer than a new maxLength",
    ],
)
def test_a_value_the_schema_names_and_now_refuses_is_breaking_for_senders(
    before: Any, after: Any, value: Any
) -> None:
    found = rules(before, after)
    assert found["request-property-known-value-refused"] == "breaking"
    assert found["response-property-known-value-refused"] == "info"


def test_a_changed_pattern_with_nothing_named_is_a_warning() -> None:
    assert rules({**STR, "pattern": "^[a-z]+$"}, {**STR, "pattern": "^[A-Z]+$"}) == {
        "request-property-pattern-changed": "warning",
        "response-property-pattern-changed": "info",
    }


def test_values_under_not_are_judged_one_by_one() -> None:
    one = {**STR, "not": {"enum": ["x"]}}
    two = {**STR, "not": {"enum": ["x", "y"]}}
    assert rules(one, two) == {
        "request-property-not-value-added": "breaking",
        "response-property-not-value-added": "info",
    }
    assert rules(two, one) == {
        "request-property-not-value-removed": "info",
        "response-property-not-value-removed": "breaking",
    }
    # Anything else under `not` is one warning that names the construct.
    assert rules({**STR, "not": {"pattern": "^a"}}, {**STR, "not": {"pattern": "^b"}}) == {
        "request-property-not-changed": "warning",
        "response-property-not-changed": "warning",
    }


@pytest.mark.parametrize("keyword", ["$anchor", "$dynamicAnchor"])
def test_references_by_anchor_resolve_in_the_document(keyword: str) -> None:
    ref_key = "$ref" if keyword == "$anchor" else "$dynamicRef"

    def root(kind: str) -> dict[str, Any]:
        return {"$defs": {"n": {keyword: "name", "type": kind}}}

    found: dict[str, str] = {}
    for direction in ("request", "response"):
        base = {"type": "object", "properties": {"f": {ref_key: "#name"}}, **root("string")}
        revision = {"type": "object", "properties": {"f": {ref_key: "#name"}}, **root("integer")}
        findings = diff_schemas(base, revision, direction)
        found.update({f"{direction}:{f.aspect}": f.origin or "" for f in findings})
    assert found == {"request:type-changed": "#name", "response:type-changed": "#name"}
