"""The semantics other diff tools' suites exposed (issue 32, section 2), as tables: before,
after, the rule ids and severities expected. docs/rules.md says why each rule has its
severity; docs/peer-conformance.md lists where driftgate departs from a peer on purpose."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.diffs import diff_openapi


def spec(paths: dict[str, Any], version: str = "3.0.3", **extra: Any) -> dict[str, Any]:
    return {"openapi": version, "info": {"title": "t", "version": "1"}, "paths": paths, **extra}


def found(base: dict[str, Any], revision: dict[str, Any]) -> dict[str, str]:
    return {c.rule: c.severity.value for c in diff_openapi(base, revision)}


def body_doc(schema: Any, *, response: bool = False, version: str = "3.0.3") -> dict[str, Any]:
    content = {"content": {"application/json": {"schema": schema}}}
    if response:
        operation = {"responses": {"200": {"description": "ok", **content}}}
    else:
        operation = {"requestBody": content, "responses": {"204": {"description": "ok"}}}
    return spec({"/x": {"post": operation}}, version)


def prop(schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"p": schema}, **extra}


# -- numeric bounds: OpenAPI 3.0's boolean exclusiveMinimum / exclusiveMaximum -------------

INT = {"type": "integer"}

BOUNDS = [
    # (base schema, revision schema, response?, expected)
    (
        {**INT, "maximum": 20},
        {**INT, "maximum": 20, "exclusiveMaximum": True},
        False,
        {"request-body-exclusive-max-decreased": "breaking"},
    ),
    (
        {**INT, "minimum": 10, "exclusiveMinimum": False},
        {**INT, "minimum": 10, "exclusiveMinimum": True},
        False,
        {"request-body-exclusive-min-increased": "breaking"},
    ),
    (
        {**INT, "minimum": 10, "exclusiveMinimum": True},
        {**INT, "minimum": 10, "exclusiveMinimum": False},
        False,
        {"request-body-min-decreased": "info"},
    ),
    (
        {**INT, "maximum": 20, "exclusiveMaximum": True},
        {**INT, "maximum": 20},
        True,
        {"response-body-max-increased": "breaking"},
    ),
    (
        {**INT, "maximum": 20, "exclusiveMaximum": True},
        INT,
        True,
        {"response-body-exclusive-max-unset": "breaking"},
    ),
    # A flag without the bound it qualifies does nothing: said, at info.
    (
        {**INT, "exclusiveMaximum": False},
        {**INT, "exclusiveMaximum": True},
        False,
        {"request-body-keyword-no-effect": "info"},
    ),
    # The same bound spelled as in 3.0 and as in 3.1 is no change.
    (
        {**INT, "maximum": 20, "exclusiveMaximum": True},
        {**INT, "exclusiveMaximum": 20},
        False,
        {},
    ),
    # 3.1's numeric form, as before.
    (
        {**INT, "exclusiveMaximum": 20},
        {**INT, "exclusiveMaximum": 10},
        False,
        {"request-body-exclusive-max-decreased": "breaking"},
    ),
]


@pytest.mark.parametrize(("base", "revision", "response", "expected"), BOUNDS)
def test_numeric_bounds_in_either_spelling(
    base: dict[str, Any], revision: dict[str, Any], response: bool, expected: dict[str, str]
) -> None:
    assert found(body_doc(base, response=response), body_doc(revision, response=response)) == (
        expected
    )


# -- readOnly / writeOnly ------------------------------------------------------------------

S = {"type": "string"}
VISIBILITY = [
    # (base property, revision property, required?, response?, expected)
    (
        S,
        {**S, "readOnly": True},
        False,
        False,
        {"request-property-became-read-only-optional": "breaking"},
    ),
    (S, {**S, "readOnly": True}, True, False, {"request-property-became-read-only": "breaking"}),
    (
        {**S, "readOnly": True},
        S,
        True,
        False,
        {"request-property-became-not-read-only": "breaking"},
    ),
    (
        {**S, "readOnly": True},
        S,
        False,
        False,
        {"request-property-became-not-read-only-optional": "info"},
    ),
    (
        S,
        {**S, "writeOnly": True},
        False,
        True,
        {"response-property-became-write-only-optional": "breaking"},
    ),
    (S, {**S, "writeOnly": True}, True, True, {"response-property-became-write-only": "breaking"}),
    (
        {**S, "writeOnly": True},
        S,
        True,
        True,
        {"response-property-became-not-write-only": "warning"},
    ),
    (
        {**S, "writeOnly": True},
        S,
        False,
        True,
        {"response-property-became-not-write-only-optional": "info"},
    ),
    # The other side of each keyword changes nothing for the reader or the sender.
    (
        {**S, "writeOnly": True},
        S,
        False,
        False,
        {"request-property-became-not-write-only-optional": "info"},
    ),
    (S, {**S, "readOnly": True}, True, True, {"response-property-became-read-only": "info"}),
]


@pytest.mark.parametrize(("before", "after", "required", "response", "expected"), VISIBILITY)
def test_read_only_and_write_only_by_side(
    before: dict[str, Any],
    after: dict[str, Any],
    required: bool,
    response: bool,
    expected: dict[str, str],
) -> None:
    extra = {"required": ["p"]} if required else {}
    base = body_doc(prop(before, **extra), response=response)
    revision = body_doc(prop(after, **extra), response=response)
    assert found(base, revision) == expected


# -- security requirements are alternatives -----------------------------------------------

SCHEMES = {
    "a": {"type": "apiKey", "in": "header", "name": "X-A"},
    "b": {"type": "http", "scheme": "basic"},
    "o": {
        "type": "oauth2",
        "flows": {"clientCredentials": {"tokenUrl": "https://t.example", "scopes": {}}},
    },
}


def secured(security: Any, schemes: dict[str, Any] | None = None) -> dict[str, Any]:
    operation: dict[str, Any] = {"responses": {"200": {"description": "ok"}}}
    if security is not None:
        operation["security"] = security
    return spec(
        {"/x": {"get": operation}},
        components={"securitySchemes": SCHEMES if schemes is None else schemes},
    )


SECURITY = [
    ([{"a": []}], [{"a": []}, {"b": []}], {"security-alternative-added": "info"}),
    ([{"a": []}, {"b": []}], [{"a": []}], {"security-alternative-removed": "breaking"}),
    ([{"a": [], "b": []}], [{"a": []}], {"security-requirement-relaxed": "info"}),
    (
        [{"a": []}],
        [{"a": [], "b": []}],
        {
            "security-alternative-removed": "breaking",
            "security-alternative-added": "info",
        },
    ),
    ([{"o": ["r"]}], [{"o": ["r", "w"]}], {"security-scope-added": "breaking"}),
    ([{"o": ["r", "w"]}], [{"o": ["r"]}], {"security-scope-removed": "info"}),
    (None, [{"a": []}], {"security-requirement-added": "breaking"}),
    ([{"a": []}], [], {"security-requirement-removed": "info"}),
    ([{"a": []}], [{"a": []}, {}], {"security-requirement-removed": "info"}),
    ([{}, {"a": []}], [{"a": []}], {"security-requirement-added": "breaking"}),
    # Order of alternatives and of scopes means nothing.
    ([{"a": []}, {"o": ["r", "w"]}], [{"o": ["w", "r"]}, {"a": []}], {}),
]


@pytest.mark.parametrize(("before", "after", "expected"), SECURITY)
def test_security_requirements_are_alternatives(
    before: Any, after: Any, expected: dict[str, str]
) -> None:
    assert found(secured(before), secured(after)) == expected


def test_security_schemes_renamed_with_their_definition_are_the_same_scheme() -> None:
    renamed = {("k" if name == "a" else name): s for name, s in SCHEMES.items()}
    assert found(secured([{"a": []}]), secured([{"k": []}], renamed)) == {
        "security-scheme-removed": "warning",
        "security-scheme-added": "info",
    }
    # Two schemes alike, both kept: the other one is another credential.
    twins = {**SCHEMES, "a2": SCHEMES["a"]}
    assert found(secured([{"a": []}], twins), secured([{"a2": []}], twins)) == {
        "security-alternative-removed": "breaking",
        "security-alternative-added": "info",
    }


def test_security_scheme_urls_and_flows() -> None:
    oidc = {"type": "openIdConnect", "openIdConnectUrl": "https://a.example/.well-known"}
    moved = {**oidc, "openIdConnectUrl": "https://b.example/.well-known"}
    assert found(secured([], {"i": oidc}), secured([], {"i": moved})) == {
        "security-scheme-openid-connect-url-changed": "breaking"
    }
    flows = copy.deepcopy(SCHEMES["o"])
    flows["flows"]["password"] = {"tokenUrl": "https://t.example", "scopes": {}}
    assert found(secured([], {"o": flows}), secured([], {"o": SCHEMES["o"]})) == {
        "security-scheme-oauth-flow-removed": "breaking"
    }
    # Swagger 2.0 keeps one flow in the scheme itself.
    swagger = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "paths": {},
        "securityDefinitions": {
            "o": {"type": "oauth2", "flow": "application", "tokenUrl": "https://t.example"}
        },
    }
    moved_token = copy.deepcopy(swagger)
    moved_token["securityDefinitions"]["o"]["tokenUrl"] = "https://u.example"
    assert found(swagger, moved_token) == {"security-scheme-oauth-token-url-changed": "breaking"}


# -- discriminators and Swagger 2.0 subtypes -------------------------------------------------


def test_a_discriminator_property_renamed_breaks_both_sides() -> None:
    def doc(tag: str) -> dict[str, Any]:
        schema = {
            "oneOf": [{"$ref": "#/components/schemas/A"}],
            "discriminator": {"propertyName": tag},
        }
        d = body_doc(schema)
        d["paths"]["/x"]["post"]["responses"] = {
            "200": {"description": "ok", "content": {"application/json": {"schema": schema}}}
        }
        d["components"] = {"schemas": {"A": {"type": "object"}}}
        return d

    assert found(doc("kind"), doc("type")) == {
        "request-body-discriminator-property-name-changed": "breaking",
        "response-body-discriminator-property-name-changed": "breaking",
    }


def swagger_subtypes(sub_props: dict[str, Any], extra: dict[str, Any] | None = None) -> Any:
    definitions = {
        "Base": {"discriminator": "kind", "required": ["kind"], "properties": {"kind": S}},
        "Sub": {"allOf": [{"$ref": "#/definitions/Base"}], "properties": sub_props},
        **(extra or {}),
    }
    return {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/x": {
                "put": {
                    "parameters": [
                        {"in": "body", "name": "b", "schema": {"$ref": "#/definitions/Base"}}
                    ],
                    "responses": {
                        "200": {"description": "ok", "schema": {"$ref": "#/definitions/Base"}}
                    },
                }
            }
        },
        "definitions": definitions,
    }


def test_swagger_2_subtypes_named_only_by_a_discriminator_are_followed() -> None:
    base = swagger_subtypes({"c": S})
    assert found(base, swagger_subtypes({"c": S, "d": S})) == {
        "request-property-added-optional": "info",
        "response-property-added-optional": "info",
    }
    assert found(base, swagger_subtypes({"c": {"type": "integer"}})) == {
        "request-property-type-changed": "breaking",
        "response-property-type-changed": "breaking",
    }
    other = {"Other": {"allOf": [{"$ref": "#/definitions/Base"}], "properties": {"z": S}}}
    assert found(base, swagger_subtypes({"c": S}, other)) == {
        "request-body-subtype-added": "info",
        "response-body-subtype-added": "warning",
    }


# -- equivalent schemas ----------------------------------------------------------------------


def with_components(doc: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "components": {"schemas": schemas}}


PET = {"type": "object", "properties": {"name": S}, "required": ["name"]}
REF = {"$ref": "#/components/schemas/Pet"}
EQUIVALENT = [
    # a oneOf member replaced by a reference to an identical schema
    ({"oneOf": [PET, {"type": "string"}]}, {"oneOf": [REF, {"type": "string"}]}),
    # allOf members reordered
    ({"allOf": [REF, {"type": "object"}]}, {"allOf": [{"type": "object"}, REF]}),
    # a reference wrapped in a one-member allOf beside an annotation
    (REF, {"allOf": [REF], "description": "the pet"}),
    # const vs a one-value enum
    ({"type": "string", "const": "a"}, {"type": "string", "enum": ["a"]}),
    # a type list of one
    ({"type": "string"}, {"type": ["string"]}),
]


@pytest.mark.parametrize(("before", "after"), EQUIVALENT)
@pytest.mark.parametrize("response", [False, True])
def test_equivalent_schemas_are_no_change(before: Any, after: Any, response: bool) -> None:
    base = with_components(body_doc(before, response=response), {"Pet": PET})
    revision = with_components(body_doc(after, response=response), {"Pet": PET})
    assert found(base, revision) == {}


def test_a_schema_renamed_with_every_reference_following_is_no_change() -> None:
    def doc(name: str) -> dict[str, Any]:
        ref = {"$ref": f"#/components/schemas/{name}"}
        schema = {
            "oneOf": [ref, {"$ref": "#/components/schemas/Cat"}],
            "discriminator": {"propertyName": "kind", "mapping": {"dog": ref["$ref"]}},
        }
        return with_components(
            body_doc(schema, response=True),
            {name: PET, "Cat": {"type": "object", "properties": {"lives": INT}}},
        )

    assert found(doc("Dog"), doc("MyDog")) == {}


def test_a_one_member_all_of_with_a_default_is_the_member_with_a_default() -> None:
    base = with_components(body_doc(prop(REF)), {"Pet": PET})
    revision = with_components(
        body_doc(prop({"allOf": [REF], "default": {"name": "x"}})), {"Pet": PET}
    )
    assert found(base, revision) == {"request-property-default-value-added": "info"}


def test_all_of_parts_replaced_are_compared_by_what_they_merge_into() -> None:
    a = {"type": "object", "required": ["x"], "properties": {"x": S}}
    b = {"type": "object", "properties": {"y": {"type": "boolean"}}}
    c = {"type": "object", "properties": {"z": {"type": "number"}}}
    schemas = {"A": a, "B": b, "C": c}
    base = with_components(
        body_doc(
            {"allOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}]}
        ),
        schemas,
    )
    looser = {**schemas, "A": {"type": "object", "properties": {"x": S}}}
    revision = with_components(
        body_doc(
            {"allOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/C"}]}
        ),
        looser,
    )
    assert found(base, revision) == {
        "request-property-became-optional": "info",
        "request-property-removed": "warning",
        "request-property-added-optional": "info",
    }


# -- direction: who writes and who reads ------------------------------------------------------


def header_doc(schema: Any) -> dict[str, Any]:
    return spec(
        {
            "/x": {
                "get": {
                    "responses": {
                        "200": {"description": "ok", "headers": {"X-N": {"schema": schema}}}
                    }
                }
            }
        }
    )


def param_doc(schema: Any, **extra: Any) -> dict[str, Any]:
    parameter = {"name": "n", "in": "query", "schema": schema, **extra}
    return spec(
        {"/x": {"get": {"parameters": [parameter], "responses": {"200": {"description": "ok"}}}}}
    )


DIRECTION = [
    (header_doc, INT, S, {"response-header-type-generalized": "breaking"}),
    (header_doc, S, INT, {"response-header-type-specialized": "info"}),
    (param_doc, INT, S, {"request-parameter-type-generalized": "info"}),
    (param_doc, S, INT, {"request-parameter-type-specialized": "breaking"}),
    (param_doc, INT, {"type": "boolean"}, {"request-parameter-type-changed": "breaking"}),
    (lambda s: body_doc(s, response=True), INT, S, {"response-body-type-changed": "breaking"}),
    (body_doc, {"type": "number"}, INT, {"request-body-type-specialized": "breaking"}),
    (
        lambda s: body_doc(s, response=True),
        {"type": "number"},
        INT,
        {"response-body-type-specialized": "info"},
    ),
]


@pytest.mark.parametrize(("make", "before", "after", "expected"), DIRECTION)
def test_type_changes_are_judged_by_who_writes_and_who_reads(
    make: Any, before: Any, after: Any, expected: dict[str, str]
) -> None:
    assert found(make(before), make(after)) == expected


# -- the rest of section 2 ----------------------------------------------------------------------

REST = [
    # allowEmptyValue removed refuses `?n=`
    (
        param_doc(S, allowEmptyValue=True),
        param_doc(S),
        {"request-parameter-empty-value-refused": "breaking"},
    ),
    (
        param_doc(S),
        param_doc(S, allowEmptyValue=True),
        {"request-parameter-empty-value-allowed": "info"},
    ),
    # explode on a primitive writes the same thing
    (
        param_doc(S, explode=True),
        param_doc(S, explode=False),
        {"request-parameter-style-no-effect": "info"},
    ),
    (
        param_doc({"type": "array", "items": S}, explode=True),
        param_doc({"type": "array", "items": S}, explode=False),
        {"request-parameter-style-changed": "breaking"},
    ),
    # format widening and narrowing by side
    (
        body_doc({**INT, "format": "int32"}),
        body_doc({**INT, "format": "int64"}),
        {"request-body-format-widened": "info"},
    ),
    (
        body_doc({**INT, "format": "int64"}),
        body_doc({**INT, "format": "int32"}),
        {"request-body-format-narrowed": "breaking"},
    ),
    (
        body_doc({**INT, "format": "int32"}, response=True),
        body_doc({**INT, "format": "int64"}, response=True),
        {"response-body-format-widened": "breaking"},
    ),
    (
        body_doc({**INT, "format": "int64"}, response=True),
        body_doc({**INT, "format": "int32"}, response=True),
        {"response-body-format-narrowed": "info"},
    ),
    # multipleOf over integers: 0.01 and 0.1 both hold every integer
    (
        body_doc({**INT, "multipleOf": 0.01}),
        body_doc({**INT, "multipleOf": 0.1}),
        {"request-body-keyword-no-effect": "info"},
    ),
    (
        body_doc({**INT, "multipleOf": 0.5}),
        body_doc({**INT, "multipleOf": 1.5}),
        {"request-body-multiple-of-specialized": "breaking"},
    ),
    # a request body's schema deprecated
    (
        body_doc(prop(S)),
        body_doc(prop(S, deprecated=True)),
        {"request-body-schema-deprecated": "info"},
    ),
    # a keyword no rule reads is reported with both values
    (
        body_doc({"type": "array", "items": [S]}),
        body_doc({"type": "array", "items": [INT]}),
        {"request-body-unclassified-difference": "warning"},
    ),
    (
        param_doc(S, allowReserved=False),
        param_doc(S, allowReserved=True),
        {"unclassified-difference": "warning"},
    ),
]


@pytest.mark.parametrize(("base", "revision", "expected"), REST)
def test_the_other_points_of_section_2(
    base: dict[str, Any], revision: dict[str, Any], expected: dict[str, str]
) -> None:
    assert found(base, revision) == expected


def test_a_ref_with_siblings_compares_the_siblings() -> None:
    """OpenAPI 3.1: keywords beside a `$ref` apply too."""
    base = with_components(body_doc({**REF, "maxProperties": 5}, version="3.1.0"), {"Pet": PET})
    revision = with_components(body_doc({**REF, "maxProperties": 3}, version="3.1.0"), {"Pet": PET})
    assert found(base, revision) == {"request-body-max-properties-decreased": "breaking"}


def test_an_unclassified_difference_carries_both_values() -> None:
    base, revision = param_doc(S, allowReserved=False), param_doc(S, allowReserved=True)
    (change,) = diff_openapi(base, revision)
    assert (change.before, change.after) == (False, True)
    assert change.path.endswith("/parameters/n/allowReserved")
