"""Direction by the set of values: one spelling, one verdict (issue 41, point 2).

Nullability written in any of its spellings, and an enum written as a `oneOf`/`anyOf` of
constants, are compared by the values they allow: on a response a smaller set is safe and a
larger one breaks readers; on a request a larger set is safe and a smaller one refuses
senders. Each row is a whole OpenAPI document with the schema as a request and a response
body, the nullable target a named component (as vendors write it).
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.diffs.openapi import diff_openapi

REF = {"$ref": "#/components/schemas/Pet"}
PET: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
    "required": ["id", "name"],
}


def document(schema: Any, *, version: str = "3.1.0", pet: Any = None) -> dict[str, Any]:
    """One POST operation taking and returning `schema`, with `Pet` as a component."""
    body = {"content": {"application/json": {"schema": schema}}}
    return {
        "openapi": version,
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/pets": {
                "post": {
                    "requestBody": body,
                    "responses": {"200": {"description": "ok", **body}},
                }
            }
        },
        "components": {"schemas": {"Pet": PET if pet is None else pet}},
    }


def found(base: dict[str, Any], revision: dict[str, Any]) -> dict[str, str]:
    return {c.rule: c.severity.value for c in diff_openapi(base, revision)}


def inline(**extra: Any) -> dict[str, Any]:
    return {**PET, **extra}


# (spelling, OpenAPI version, the schema without null, the same schema admitting null)
NULLABLE: list[tuple[str, str, Any, Any]] = [
    ("3.1 oneOf with a null member", "3.1.0", REF, {"oneOf": [{"type": "null"}, REF]}),
    ("3.1 anyOf with a null member", "3.1.0", REF, {"anyOf": [REF, {"type": "null"}]}),
    ("3.1 oneOf with a const null", "3.1.0", REF, {"oneOf": [REF, {"const": None}]}),
    ("3.1 type list with null", "3.1.0", inline(), inline(type=["object", "null"])),
    ("3.0 nullable beside an allOf", "3.0.3", REF, {"allOf": [REF], "nullable": True}),
    ("3.0 nullable on the type", "3.0.3", inline(), inline(nullable=True)),
]


@pytest.mark.parametrize(
    ("spelling", "version", "plain", "nullable"), NULLABLE, ids=[row[0] for row in NULLABLE]
)
def test_null_removed_narrows_a_response_and_refuses_a_request(
    spelling: str, version: str, plain: Any, nullable: Any
) -> None:
    assert found(document(nullable, version=version), document(plain, version=version)) == {
        "request-body-became-not-nullable": "breaking",
        "response-body-became-not-nullable": "info",
    }


@pytest.mark.parametrize(
    ("spelling", "version", "plain", "nullable"), NULLABLE, ids=[row[0] for row in NULLABLE]
)
def test_null_added_widens_a_request_and_breaks_readers(
    spelling: str, version: str, plain: Any, nullable: Any
) -> None:
    assert found(document(plain, version=version), document(nullable, version=version)) == {
        "request-body-became-nullable": "info",
        "response-body-became-nullable": "breaking",
    }


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"oneOf": [{"type": "null"}, REF]}, {"anyOf": [{"type": "null"}, REF]}),
        ({"oneOf": [{"type": "null"}, REF]}, {"allOf": [REF], "nullable": True}),
        (inline(type=["object", "null"]), {"anyOf": [REF, {"type": "null"}]}),
        (
            {"oneOf": [{"type": "null", "description": "none"}, REF]},
            {"oneOf": [REF], "nullable": True},
        ),
    ],
)
def test_one_nullable_spelled_another_way_is_no_change(one: Any, other: Any) -> None:
    assert found(document(one), document(other)) == {}
    assert found(document(other), document(one)) == {}


def test_nullable_without_any_constraint_is_no_change() -> None:
    # An untyped schema allows null already; 3.0's `nullable` needs a type to mean anything.
    before = document({"nullable": True, "description": "anything"}, version="3.0.3")
    assert found(before, document({"description": "anything"}, version="3.0.3")) == {}


def test_a_required_property_removed_under_a_dropped_nullable_wrapper_is_reported() -> None:
    # The wrapper used to end the comparison as `restructured`: the removal went unseen.
    shrunk = {**PET, "properties": {"id": {"type": "string"}}, "required": ["id"]}
    before = document({"oneOf": [{"type": "null"}, REF]})
    after = document(REF, pet=shrunk)
    assert found(before, after) == {
        "request-body-became-not-nullable": "breaking",
        "request-property-removed": "warning",
        "response-body-became-not-nullable": "info",
        "response-property-removed-required": "breaking",
    }


def test_null_removed_from_a_union_keeps_the_other_members_compared() -> None:
    cat = {"type": "object", "properties": {"meow": {"type": "boolean"}}}
    before = document({"oneOf": [{"type": "null"}, REF, cat]})
    assert found(before, document({"oneOf": [REF, cat]})) == {
        "request-body-became-not-nullable": "breaking",
        "response-body-became-not-nullable": "info",
    }


# -- enums written as constants ------------------------------------------------------------


def consts(keyword: str, values: list[str], *, typed_members: bool = False) -> dict[str, Any]:
    """An enum written as `keyword` over titled constants (as generated SDK specs write it)."""
    members = [
        {"const": v, "title": v.title(), "description": f"the {v} kind"}
        | ({"type": "string"} if typed_members else {})
        for v in values
    ]
    return {keyword: members} if typed_members else {"type": "string", keyword: members}


def enum(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": values}


SPELLINGS = [
    pytest.param(lambda values: consts("oneOf", values), id="oneOf of consts"),
    pytest.param(lambda values: consts("anyOf", values), id="anyOf of consts"),
    pytest.param(
        lambda values: consts("oneOf", values, typed_members=True), id="oneOf of typed consts"
    ),
]


def prop(schema: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"kind": schema}}


@pytest.mark.parametrize("spell", SPELLINGS)
@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (
            ["cat", "dog"],
            ["cat", "dog", "fox"],
            {
                "request-property-enum-value-added": "info",
                "response-property-enum-value-added": "warning",
            },
        ),
        (
            ["cat", "dog", "fox"],
            ["cat", "dog"],
            {
                "request-property-enum-value-removed": "breaking",
                "response-property-enum-value-removed": "info",
            },
        ),
    ],
    ids=["value added", "value removed"],
)
def test_an_enum_of_constants_has_the_verdict_of_the_plain_enum(
    spell: Any, before: list[str], after: list[str], expected: dict[str, str]
) -> None:
    plain = found(document(prop(enum(before))), document(prop(enum(after))))
    written = found(document(prop(spell(before))), document(prop(spell(after))))
    assert plain == written == expected


@pytest.mark.parametrize("spell", SPELLINGS)
def test_an_enum_rewritten_as_constants_is_no_change(spell: Any) -> None:
    values = ["cat", "dog"]
    assert found(document(prop(enum(values))), document(prop(spell(values)))) == {}
    assert found(document(prop(spell(values))), document(prop(enum(values)))) == {}


def test_a_nullable_enum_of_constants_reports_the_value_and_the_null() -> None:
    before = {"oneOf": [*consts("oneOf", ["cat"])["oneOf"], {"type": "null"}], "type": "string"}
    after = enum(["cat", "dog"])
    assert found(document(prop(before)), document(prop(after))) == {
        "request-property-became-not-nullable": "breaking",
        "request-property-enum-value-added": "info",
        "response-property-became-not-nullable": "info",
        "response-property-enum-value-added": "warning",
    }


def test_a_one_member_one_of_is_its_member() -> None:
    # Box: `oneOf: [$ref]` rewritten as `allOf: [$ref]`, beside a description and an example.
    before = document(prop({"description": "d", "example": {"id": "1"}, "oneOf": [REF]}))
    after = document(prop({"description": "d", "example": {"id": "1"}, "allOf": [REF]}))
    assert found(before, after) == {}
    assert found(before, document(prop(REF))) == {}


def test_a_schema_of_null_alone_that_gains_a_type_is_not_told_as_nullability() -> None:
    # SendGrid: `last_email_sent_at: {type: 'null'}` became `{type: [string, 'null']}`: null
    # was allowed before and after; what changed is the type (told as before this issue).
    before = document(prop({"type": "null"}))
    after = document(prop({"type": ["string", "null"]}))
    rules = found(before, after)
    assert rules
    assert not [rule for rule in rules if "nullable" in rule]


# -- a schema written as alternatives, or folded back from them -----------------------------

OBJ_A = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
OBJ_B = {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}


def test_alternatives_that_are_all_old_values_are_safe_for_readers() -> None:
    # Each alternative narrows the old open object: readers get nothing new.
    before = document(prop({"type": "object"}))
    after = document(prop({"anyOf": [OBJ_A, OBJ_B]}))
    # Senders: no one alternative takes every old object (a warning, as before).
    assert found(before, after) == {
        "request-property-restructured": "warning",
        "response-property-rewritten-as-alternatives": "info",
    }


def test_a_union_that_keeps_the_old_shape_is_safe_for_senders() -> None:
    before = document(prop(OBJ_A))
    after = document(prop({"anyOf": [OBJ_A, OBJ_B]}))
    # Senders: the old shape is an alternative. Readers: they may get a `b` object, and
    # what breaks them is named (the required `a` may be missing), not a generic wrapper.
    assert found(before, after) == {
        "request-property-rewritten-as-alternatives": "info",
        "response-property-removed-required": "breaking",
    }


def test_a_one_of_with_disjoint_types_keeps_old_senders_valid() -> None:
    # oneOf refuses a value matching two alternatives; an object and a string never both.
    before = document(prop(OBJ_A))
    after = document(prop({"oneOf": [OBJ_A, {"type": "string"}]}))
    assert found(before, after) == {
        "request-property-rewritten-as-alternatives": "info",
        "response-property-type-changed": "breaking",
    }


def test_a_one_of_whose_members_overlap_may_refuse_old_senders() -> None:
    before = document(prop(OBJ_A))
    after = document(prop({"oneOf": [OBJ_A, {"type": "object"}]}))
    assert found(before, after) == {
        "request-property-wrapped-in-one-of-original-preserved": "warning",
        "response-property-removed-required": "breaking",
    }


def test_alternatives_folded_into_one_schema_judged_both_ways() -> None:
    before = document(prop({"anyOf": [OBJ_A, OBJ_B]}))
    # Folded into the open object: every old alternative is still accepted (senders safe);
    # readers may now get any object.
    # (The definition of `a` dropped stays the warning it is for any open object.)
    assert found(before, document(prop({"type": "object"}))) == {
        "request-property-alternatives-folded": "info",
        "request-property-removed": "warning",
        "response-property-restructured": "breaking",
    }
    # Folded into one of the alternatives: readers get an old value; `b` senders are refused,
    # and the finding says why (they do not send the required `a`).
    assert found(before, document(prop(OBJ_A))) == {
        "request-property-added-required": "breaking",
        "response-property-alternatives-folded": "info",
    }
