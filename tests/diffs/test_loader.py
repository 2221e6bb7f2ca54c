"""Malformed contracts of every kind answer ContractParseError with a clear message."""

from __future__ import annotations

import pytest

from controller.diffs import ContractParseError, load_document

VALID = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("openapi: 3.0.3\npaths: [unclosed\n", "invalid YAML"),
        ('{"openapi": "3.0.3", "paths": {', "invalid JSON"),
        ("just a string", "expected a JSON/YAML object"),
        ("info: {title: t}\npaths: {}\n", "not an OpenAPI document"),
        ("openapi: 4.0.0\npaths: {}\n", "unsupported OpenAPI version"),
        ("swagger: '1.2'\npaths: {}\n", "unsupported Swagger version"),
        ("openapi: 3.0.3\ninfo: {}\n", "no 'paths'"),
        ("openapi: 3.0.3\npaths: 5\n", "'paths' must be an object"),
        (
            "openapi: 3.0.3\npaths:\n  /a:\n    get:\n      responses:\n        '200':\n"
            "          $ref: '#/components/responses/Missing'\n",
            "points to nothing",
        ),
    ],
)
def test_malformed_openapi_raises_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ContractParseError) as info:
        load_document(text, "spec.yaml", kind="openapi")
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_invalid_json_error_names_line_and_column() -> None:
    with pytest.raises(ContractParseError) as info:
        load_document(b'{\n  "openapi": "3.0.3",\n  "paths": }', "spec.json")
    assert info.value.where == "spec.json:3:12"


def test_non_utf8_bytes() -> None:
    with pytest.raises(ContractParseError, match="UTF-8"):
        load_document(b"\xff\xfe\x00bad", "spec.yaml")


def test_yaml_and_json_give_the_same_document() -> None:
    import json

    doc = load_document(VALID)
    assert load_document(json.dumps(doc).encode()) == doc


def test_yaml_dates_stay_strings() -> None:
    doc = load_document("a: 2024-01-02\n")
    assert doc == {"a": "2024-01-02"}
