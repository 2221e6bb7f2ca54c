"""The validator's semantics, which clients of the hosted product rely on: codes, severity,
paths, the required policy, normalization, envelopes, limits, and profile refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.ingress.validator import MAX_ERRORS, compile_profile, severity_of, validate
from controller.model.ingress_profiles import ProfileInvalid, check_profile

ORDER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "minLength": 3, "maxLength": 50},
        "status": {"enum": ["new", "paid"]},
        "qty": {"type": "integer", "minimum": 1, "maximum": 10},
        "price": {"type": "number"},
        "items": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}},
                "required": ["sku"],
            },
        },
        "note": {"type": ["string", "null"]},
    },
    "required": ["email"],
}


def profile(**extra: Any) -> dict[str, Any]:
    return {"id": "order", "version": 1, "schema": ORDER, **extra}


def run(
    payload: Any, mode: str = "hosted", **extra: Any
) -> tuple[bool, str, list[tuple[str, str]], Any]:
    result = validate(compile_profile(check_profile(profile(**extra)), mode), payload)
    return result.ok, result.severity, [(i.path, i.code) for i in result.errors], result.normalized


GOOD = {
    "email": "a@b.c",
    "status": "new",
    "qty": 2,
    "price": 3,
    "items": [{"sku": "x"}],
    "note": None,
}


def test_a_payload_that_fits_is_ok_and_normalized() -> None:
    assert run(GOOD) == (True, "none", [], GOOD)


@pytest.mark.parametrize(
    ("change", "path", "code", "severity"),
    [
        ({"email": None}, "/email", "type_mismatch", "breaking"),  # null where a string goes
        ({"qty": "2"}, "/qty", "type_mismatch", "breaking"),
        ({"qty": 2.5}, "/qty", "type_mismatch", "breaking"),
        ({"status": "lost"}, "/status", "enum_invalid", "breaking"),
        ({"extra": 1}, "/extra", "extra_field", "warning"),
        ({"email": "ab"}, "/email", "min_length", "info"),
        ({"email": "a" * 51}, "/email", "max_length", "info"),
        ({"qty": 0}, "/qty", "min_value", "info"),
        ({"qty": 11}, "/qty", "max_value", "info"),
        ({"items": []}, "/items", "min_length", "info"),
        ({"items": [{"sku": "x"}, {"sku": "x"}]}, "/items", "array_items_invalid", "info"),
        ({"items": [{"sku": 1}]}, "/items/0/sku", "type_mismatch", "breaking"),
    ],
)
def test_each_error_has_its_code_path_and_severity(
    change: dict[str, Any], path: str, code: str, severity: str
) -> None:
    ok, found_severity, errors, normalized = run({**GOOD, **change})
    assert (ok, found_severity, errors, normalized) == (False, severity, [(path, code)], None)


def test_a_missing_required_property_and_integer_as_number() -> None:
    payload = {k: v for k, v in GOOD.items() if k != "email"}
    assert run(payload)[2] == [("/email", "required_missing")]
    assert run({**GOOD, "price": 3})[0] is True  # an integer is a number


def test_severity_is_the_worst_code_and_ok_needs_no_error_at_all() -> None:
    ok, severity, errors, _ = run({**GOOD, "email": "ab", "extra": 1, "qty": "x"})
    assert (ok, severity) == (False, "breaking") and len(errors) == 3
    assert run({**GOOD, "email": "ab"})[:2] == (False, "info")
    assert severity_of([]) == "none"


def test_the_required_policy_follows_the_profile_then_the_mode() -> None:
    partial = {"email": "a@b.c"}
    assert run(partial, "hosted")[0] is True  # hosted: only the schema's required
    missing = {path for path, code in run(partial, "cli")[2] if code == "required_missing"}
    assert missing == {"/items", "/note", "/price", "/qty", "/status"}  # cli: all declared
    assert run(partial, "cli", requiredPolicy="schemaOnly")[0] is True
    assert run(partial, "hosted", requiredPolicy="allProperties")[0] is False


def test_undeclared_properties_are_always_extra_fields() -> None:
    open_schema = {**ORDER, "additionalProperties": True}
    result = validate(
        compile_profile(check_profile({"id": "o", "version": 1, "schema": open_schema})),
        {**GOOD, "surprise": True},
    )
    assert [(i.path, i.code) for i in result.errors] == [("/surprise", "extra_field")]


def test_aliases_rename_only_when_the_target_is_absent_and_come_before_the_envelope() -> None:
    aliases = {"aliases": [{"from": "mail", "to": "email"}, {"from": "count", "to": "qty"}]}
    renamed = {**{k: v for k, v in GOOD.items() if k != "email"}, "mail": "x@y.z"}
    ok, _, errors, normalized = run(renamed, normalization=aliases)
    assert ok and normalized["email"] == "x@y.z" and "mail" not in normalized
    both = {**GOOD, "count": 3}
    assert run(both, normalization=aliases)[2] == [("/count", "extra_field")]
    wrapped = {"args": {}, "mail": "x@y.z"}  # the envelope object, renamed first
    mcp = {"profileKind": "tool_call_envelope", "envelope": {"preset": "mcp"}}
    assert run(wrapped, normalization=aliases, **mcp)[2] == [("$", "envelope_extract_failed")]


def test_aliases_written_as_the_hosted_map_read_as_the_list() -> None:
    # The hosted product's consumer profiles write `{from: to}` (its consumer.profile schema).
    as_map = {"aliases": {"mail": "email", "count": "qty"}}
    as_list = {"aliases": [{"from": "mail", "to": "email"}, {"from": "count", "to": "qty"}]}
    renamed = {**{k: v for k, v in GOOD.items() if k != "email"}, "mail": "x@y.z"}
    assert run(renamed, normalization=as_map) == run(renamed, normalization=as_list)
    assert run(renamed, normalization=as_map)[0] is True
    too_many = {"aliases": {f"a{i}": f"b{i}" for i in range(21)}}
    for bad in (too_many, {"aliases": {"mail": ""}}, {"aliases": {"mail": 5}}):
        with pytest.raises(ProfileInvalid, match="aliases"):
            check_profile({"id": "p", "version": 1, "schema": {}, "normalization": bad})


def test_envelope_presets_with_real_shapes() -> None:
    tool_call = {"name": "create_order", "arguments": GOOD}  # MCP tools/call params
    mcp = {"profileKind": "tool_call_envelope", "envelope": {"preset": "mcp"}}
    assert run(tool_call, **mcp)[0:4] == (True, "none", [], GOOD)
    assert run({"name": "x", "input": GOOD}, **mcp)[0] is True
    function_call = {
        "type": "function",
        "function": {"name": "create_order", "arguments": json.dumps(GOOD)},
    }
    openai = {"profileKind": "tool_call_envelope", "envelope": {"preset": "openai_functions"}}
    assert run(function_call, **openai)[3] == GOOD
    raw = {"envelope": {"preset": "raw", "extractPath": "data.order"}}
    assert run({"data": {"order": GOOD}}, **raw)[0] is True
    for bad, kind in (
        ({"name": "x", "arguments": "not an object"}, mcp),
        ({"function": {"arguments": "{not json"}}, openai),
        ({"data": {}}, raw),
        (["not", "an", "object"], mcp),
    ):
        assert run(bad, **kind)[1:3] == ("breaking", [("$", "envelope_extract_failed")])


def test_errors_stop_at_fifty_and_say_so() -> None:
    many = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(80)}}
    compiled = compile_profile(check_profile({"id": "m", "version": 1, "schema": many}))
    result = validate(compiled, {f"p{i}": i for i in range(80)})
    assert len(result.errors) == MAX_ERRORS and result.truncated is True


def test_messages_never_quote_the_payload() -> None:
    marker = "SECRET-MARKER-4242"
    result = validate(
        compile_profile(check_profile(profile())),
        {**GOOD, "email": marker * 10, "status": marker, "qty": marker, marker: 1},
    )
    assert result.errors and marker not in json.dumps([i.message for i in result.errors])


def test_messages_name_the_bound_and_only_offline_the_value() -> None:
    compiled = compile_profile(check_profile(profile()))
    payload = {**GOOD, "email": "ab", "status": "lost", "qty": 0, "items": []}
    served = {i.path: i.message for i in validate(compiled, payload).errors}
    assert served == {
        "/email": "the value is shorter than the minimum length 3",
        "/items": "the array has fewer items than the minimum 1",
        "/qty": "the value is below the minimum 1",
        "/status": 'the value is not one of "new", "paid"',
    }
    offline = {i.path: i.message for i in validate(compiled, payload, quote_values=True).errors}
    assert offline == {
        "/email": '"ab" is shorter than the minimum length 3',
        "/items": "the array (0 items) has fewer items than the minimum 1",
        "/qty": "0 is below the minimum 1",
        "/status": '"lost" is not one of "new", "paid"',
    }
    long = validate(compiled, {**GOOD, "qty": 10**80}, quote_values=True).errors[0].message
    assert long.endswith("... is above the maximum 10") and len(long) < 100


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"version": 1, "schema": {}}, "/id: required"),
        ({"id": "p", "version": 0, "schema": {}}, "version"),
        ({"id": "p", "version": "1", "schema": {}}, "version"),
        ({"id": "p", "version": True, "schema": {}}, "version"),
        ({"id": "p", "version": 1, "schema": []}, "schema"),
        ({"id": "p", "version": 1, "schema": {}, "profileKind": "other"}, "profileKind"),
        ({"id": "p", "version": 1, "schema": {}, "envelope": {"preset": "soap"}}, "preset"),
        ({"id": "p", "version": 1, "schema": {}, "envelope": {"preset": "raw"}}, "extractPath"),
        (
            {
                "id": "p",
                "version": 1,
                "schema": {},
                "normalization": {"aliases": [{"from": f"a{i}", "to": f"b{i}"} for i in range(21)]},
            },
            "aliases",
        ),
        (
            {
                "id": "p",
                "version": 1,
                "schema": {"type": "object", "properties": {f"p{i}": {} for i in range(257)}},
            },
            "/schema/properties: must hold at most 256 properties",
        ),
        ({"id": "p", "version": 1, "schema": {"$ref": "https://example.com/s.json"}}, "local refs"),
    ],
)
def test_unusable_profiles_are_refused_with_the_reason(raw: dict[str, Any], reason: str) -> None:
    with pytest.raises(ProfileInvalid) as refused:
        check_profile(raw)
    assert refused.value.code == "profile_invalid" and reason in refused.value.message


def test_a_schema_nested_deeper_than_32_levels_is_refused() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(20):
        schema = {"type": "object", "properties": {"x": schema}}
    with pytest.raises(ProfileInvalid, match="deeper than 32"):
        check_profile({"id": "deep", "version": 1, "schema": schema})


def test_only_breaking_changes_touch_profiles_through_declared_properties() -> None:
    from controller.model.ingress_impact import affected_profiles, declared_properties

    schema = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b~c/d": {}}}},
    }
    assert declared_properties(schema) == {"a", "b~c/d"}
    profiles = [("p", schema), ("q", {"properties": {"z": {}}})]
    changes = [
        {"path": "/components/schemas/x/properties/b~0c~1d", "severity": "breaking"},
        {"path": "/components/schemas/x/properties/z", "severity": "warning"},
        {"path": "/components/schemas/x/properties/z", "severity": "breaking", "ignored": True},
    ]
    assert affected_profiles(changes, profiles) == ["p"]
    assert affected_profiles(changes[1:], profiles) == []
