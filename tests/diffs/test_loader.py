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


def test_yaml_is_read_as_yaml_1_2() -> None:
    # OpenAPI 3 mandates YAML 1.2: the 1.1 booleans stay strings, 0o17 is octal.
    doc = load_document("a: yes\nb: on\nc: 0o17\nd: true\ne: ~\n200: ok\n", "x.yaml", kind="json")
    assert doc == {"a": "yes", "b": "on", "c": 15, "d": True, "e": None, 200: "ok"}


def test_yaml_duplicate_keys_keep_the_last_value() -> None:
    assert load_document("a: 1\na: 2\n", "x.yaml", kind="json") == {"a": 2}


def test_yaml_multi_document_streams_are_refused() -> None:
    with pytest.raises(ContractParseError) as info:
        load_document("a: 1\n---\nb: 2\n", "x.yaml", kind="json")
    assert "single YAML document" in str(info.value) and "x.yaml:2" in str(info.value)
    assert load_document("---\na: 1\n...\n", "x.yaml", kind="json") == {"a": 1}


def test_yaml_errors_name_line_and_column() -> None:
    with pytest.raises(ContractParseError) as info:
        load_document("openapi: 3.0.0\npaths: {a: [1,\n", "spec.yaml")
    assert "spec.yaml:2:" in str(info.value)


def test_yaml_alias_bombs_are_refused() -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(ContractParseError):
        load_document("\n".join(levels) + "\n", "bomb.yaml", kind="json")
