"""Reference Objects are found in the parsed tree: a `$ref` that is data (a comment, an
example, an extension, a folded string) is not checked, a dangling Reference Object is refused
with its file:line (issue 41, point 1). Each document mirrors a real vendor's pattern."""

from __future__ import annotations

import json

import pytest

from controller.diffs import ContractParseError, diff_openapi, load_document
from controller.diffs.refs import pointer_of, reference_objects

HEAD = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\n"
THING = "    Thing:\n      type: object\n      properties:\n        id: {type: string}\n"

# Linode: a Reference Object commented out, beside the real one.
COMMENTED = (
    HEAD + "paths:\n  /things:\n    get:\n      responses:\n        '200':\n"
    "          description: ok\n          content:\n            application/json:\n"
    "              schema:\n"
    "                # $ref: '#/components/schemas/Gone/properties/ipv6'\n"
    "                $ref: '#/components/schemas/Thing'\n"
    "components:\n  schemas:\n" + THING
)
# Okta: an example value that holds a `$ref` key (and Example Objects' values likewise).
IN_EXAMPLE = (
    HEAD + "paths:\n  /things:\n    get:\n      responses:\n        '200':\n"
    "          description: ok\n          content:\n            application/json:\n"
    "              schema: {$ref: '#/components/schemas/Thing'}\n"
    "              examples:\n                one:\n                  value:\n"
    "                    device: {$ref: '#/components/examples/LogDeviceObject'}\n"
    "components:\n  schemas:\n" + THING + "      example:\n"
    "        id: a\n        device:\n          $ref: '#/components/examples/LogDeviceObject'\n"
)
# Spotify: `$ref`s inside `x-` extensions, at the top of a component and beside a property.
IN_EXTENSION = (
    HEAD + "paths:\n  /things:\n    get:\n"
    "      x-spotify-policy-list:\n        - $ref: '#/components/x-spotify-policy/policies/Gone'\n"
    "      responses:\n        '200': {description: ok}\n"
    "components:\n  x-spotify-policy:\n    downloading:\n"
    "      $ref: '#/components/x-spotify-policy/policies/Downloading'\n"
    "  schemas:\n" + THING + "        preview_url:\n          type: string\n"
    "          x-spotify-policy-list:\n"
    "            - $ref: '#/components/x-spotify-policy/policies/StandalonePreview'\n"
)
# Long quoted strings that YAML folds across lines: a Reference Object whose value continues
# after an escaped line break, and a description quoting `$ref`-like text cut by the fold.
FOLDED = (
    HEAD + "paths:\n  /things:\n    get:\n"
    '      description: \'Older clients sent {"$ref": "#/components/schemas/Th\n'
    "        ing\"} here; the field is now plain text and this sentence is long.'\n"
    "      responses:\n        '200':\n          description: ok\n          content:\n"
    "            application/json:\n              schema:\n"
    '                $ref: "#/components/schemas/Very\\\n                  LongName"\n'
    "components:\n  schemas:\n    VeryLongName:\n      type: string\n"
)
# Data positions of a schema, and names that look like keywords.
IN_DATA = (
    HEAD + "paths: {}\ncomponents:\n  schemas:\n    Thing:\n      type: object\n"
    "      default: {$ref: '#/nowhere/default'}\n"
    "      enum: [{$ref: '#/nowhere/enum'}]\n"
    "      properties:\n"
    "        $ref: {type: string}\n"
    "        example: {$ref: '#/components/schemas/Thing'}\n"
    "        fixed: {const: {$ref: '#/nowhere/const'}}\n"
)


@pytest.mark.parametrize(
    "text",
    [COMMENTED, IN_EXAMPLE, IN_EXTENSION, FOLDED, IN_DATA],
    ids=["yaml-comment", "example-value", "x-extension", "folded-string", "data-keywords"],
)
def test_a_ref_that_is_not_a_reference_object_is_not_checked(text: str) -> None:
    doc = load_document(text, "vendor.yaml", kind="openapi")
    again = load_document(text, "vendor.yaml", kind="openapi")
    assert diff_openapi(doc, again) == []


def test_reference_objects_are_the_structural_ones() -> None:
    found = {pointer_of(trail): ref for trail, ref in reference_objects(load_document(IN_DATA))}
    # The property named `example` is a schema: its `$ref` is a reference; `$ref` as a
    # property name and the refs in `default`, `enum`, `const` are not.
    assert found == {"#/components/schemas/Thing/properties/example": "#/components/schemas/Thing"}
    refs = dict(
        (pointer_of(trail), ref) for trail, ref in reference_objects(load_document(IN_EXAMPLE))
    )
    assert list(refs.values()) == ["#/components/schemas/Thing"]


DANGLING_YAML = (
    HEAD + "paths:\n  /things:\n    get:\n      responses:\n        default:\n"
    "          description: error\n          content:\n            application/json:\n"
    "              schema:\n                type: object\n                properties:\n"
    "                  detail:\n                    $ref: '#/components/schemas/Missing'\n"
    "components:\n  schemas:\n" + THING
)


def test_a_dangling_reference_object_is_refused_with_its_line() -> None:
    with pytest.raises(ContractParseError) as info:
        load_document(DANGLING_YAML, "vendor.yaml", kind="openapi")
    error = info.value
    line = next(n for n, text in enumerate(DANGLING_YAML.splitlines(), 1) if "$ref" in text)
    assert error.where == f"vendor.yaml:{line}" == "vendor.yaml:15"
    assert "'#/components/schemas/Missing'" in error.message
    assert "/responses/default/content/application~1json/schema/properties/detail" in (
        error.message
    )


def test_a_dangling_reference_in_json_is_refused_with_its_line() -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "paths": {},
        "definitions": {
            "Pair": {"type": "array", "items": [{"type": "string"}, {"$ref": "#/definitions/No"}]},
            "Other": {"$ref": "#/definitions/AlsoNo"},
        },
    }
    text = json.dumps(doc, indent=2)
    with pytest.raises(ContractParseError) as info:
        load_document(text, "vendor.json")
    line = text.splitlines().index('      "$ref": "#/definitions/AlsoNo"') + 1
    assert info.value.where == f"vendor.json:{line}"
    assert "and 1 more that point to nothing" in info.value.message


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"a": {"$ref": "#/nowhere"}}},
        {"prefixItems": [{"$ref": "#/nowhere"}]},
        {"if": {"$ref": "#/nowhere"}},
        {"dependentSchemas": {"a": {"$ref": "#/nowhere"}}},
        {"anyOf": [{"type": "null"}, {"$ref": "#/nowhere"}]},
    ],
)
def test_dangling_references_in_every_schema_position_are_refused(schema: object) -> None:
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "components": {"schemas": {"S": schema}},
    }
    with pytest.raises(ContractParseError, match="'#/nowhere' at #/components/schemas/S/"):
        load_document(json.dumps(doc), "spec.json")


def test_a_reference_object_whose_ref_is_not_a_string_is_refused() -> None:
    text = HEAD + "paths:\n  /a:\n    parameters:\n      - $ref: 5\n"
    with pytest.raises(ContractParseError, match="not a string") as info:
        load_document(text, "spec.yaml")
    assert info.value.where == "spec.yaml:6"


def test_a_folded_reference_is_followed_to_place_a_pointer() -> None:
    """Positions read a `$ref`'s value as YAML does, over the lines it is folded across."""
    from controller.diffs.positions import LineIndex

    pointer = "/paths/~1things/get/responses/200/content/application~1json/schema/type"
    found = LineIndex(FOLDED).locate(pointer)
    assert found is not None and found.exact
    assert FOLDED.splitlines()[found.line - 1] == "      type: string"
