"""The runtime-ingress validator: one payload against one compiled consumer profile. Pure.

Order, as the hosted product does it: alias normalization (rename `from` to `to` when `to` is
absent), then the envelope extraction (`mcp`: `arguments`, else `input`, an object;
`openai_functions`: `function.arguments`, an object or a JSON string holding one; `raw`: the
dot path `extractPath`), then validation with `jsonschema_rs` against the profile's schema as
compiled (`compile_profile`): every object schema that declares `properties` refuses the
ones it does not declare (`extra_field`), and `requiredPolicy: allProperties` (the `cli`
profile mode's default) makes every declared property required.

Errors carry a JSON Pointer into the checked object (`$` for the root and the envelope), a
code and a message that never quotes the payload's values.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import jsonschema_rs

from controller.model.ingress_profiles import ConsumerProfile

MAX_ERRORS = 50
BREAKING_CODES = frozenset(
    {
        "required_missing",
        "type_mismatch",
        "enum_invalid",
        "null_disallowed",
        "envelope_extract_failed",
    }
)
# jsonschema_rs error kinds -> the hosted product's error codes.
_CODES = {
    "Required": "required_missing",
    "Type": "type_mismatch",
    "Enum": "enum_invalid",
    "Constant": "enum_invalid",
    "AdditionalProperties": "extra_field",
    "UnevaluatedProperties": "extra_field",
    "MinLength": "min_length",
    "MinItems": "min_length",
    "MinProperties": "min_length",
    "MaxLength": "max_length",
    "MaxItems": "max_length",
    "MaxProperties": "max_length",
    "Minimum": "min_value",
    "ExclusiveMinimum": "min_value",
    "Maximum": "max_value",
    "ExclusiveMaximum": "max_value",
    "UniqueItems": "array_items_invalid",
    "Contains": "array_items_invalid",
    "AdditionalItems": "array_items_invalid",
    "UnevaluatedItems": "array_items_invalid",
}
_MESSAGES = {
    "Enum": "the value is not one of the allowed values",
    "Constant": "the value is not the allowed constant",
    "UniqueItems": "the array's items are not unique",
    "Contains": "no item of the array matches what it must contain",
    "AdditionalItems": "the array has more items than its schema describes",
    "UnevaluatedItems": "the array has items its schema does not describe",
    "AnyOf": "the value matches none of the allowed shapes",
    "OneOfNotValid": "the value matches none of the allowed shapes",
    "OneOfMultipleValid": "the value matches more than one of the allowed shapes",
    "Not": "the value has a shape that is not allowed",
    "FalseSchema": "no value is allowed here",
}
# Kinds whose message names the profile's bound (a value of the schema, never of the
# payload): the subject, the verb phrase, and the attribute of the error kind that holds it.
_BOUNDS = {
    "Minimum": ("value", "is below the minimum", "limit"),
    "ExclusiveMinimum": ("value", "is not above the exclusive minimum", "limit"),
    "Maximum": ("value", "is above the maximum", "limit"),
    "ExclusiveMaximum": ("value", "is not below the exclusive maximum", "limit"),
    "MultipleOf": ("value", "is not a multiple of", "multiple_of"),
    "MinLength": ("value", "is shorter than the minimum length", "limit"),
    "MaxLength": ("value", "is longer than the maximum length", "limit"),
    "Pattern": ("value", "does not match the pattern", "pattern"),
    "Format": ("value", "is not a valid", "format"),
    "MinItems": ("array", "has fewer items than the minimum", "limit"),
    "MaxItems": ("array", "has more items than the maximum", "limit"),
    "MinProperties": ("object", "has fewer properties than the minimum", "limit"),
    "MaxProperties": ("object", "has more properties than the maximum", "limit"),
    "Enum": ("value", "is not one of", "options"),
    "Constant": ("value", "is not the allowed constant", "expected_value"),
}
_SHOWN = 60  # characters of a value in a message, then "..."


@dataclass(frozen=True)
class Issue:
    path: str
    code: str
    message: str


@dataclass(frozen=True)
class Result:
    ok: bool
    severity: str  # breaking, warning, info or none
    errors: list[Issue]
    normalized: Any
    truncated: bool


@dataclass(frozen=True)
class CompiledProfile:
    """A profile ready to validate with: checked once, compiled once, reused."""

    profile: ConsumerProfile
    schema: dict[str, Any]  # what the validator checks: the profile's, made strict
    validator: Any  # a jsonschema_rs validator
    aliases: tuple[tuple[str, str], ...]
    preset: str | None
    extract_path: tuple[str, ...]


def required_policy(profile: ConsumerProfile, profile_mode: str) -> str:
    """The profile's `requiredPolicy`, else the mode's default: `cli` = every declared
    property, `hosted` = the schema's `required`."""
    if profile.required_policy is not None:
        return profile.required_policy
    return "allProperties" if profile_mode == "cli" else "schemaOnly"


def compile_profile(profile: ConsumerProfile, profile_mode: str = "cli") -> CompiledProfile:
    schema = _strict(
        profile.schema_, all_required=required_policy(profile, profile_mode) == "allProperties"
    )
    schema.setdefault("$schema", "https://json-schema.org/draft/2020-12/schema")
    validator = jsonschema_rs.validator_for(schema)
    aliases = tuple(
        (a.from_, a.to) for a in (profile.normalization.aliases if profile.normalization else [])
    )
    envelope = profile.envelope
    preset = (
        envelope.preset
        if envelope
        else ("mcp" if profile.profile_kind == "tool_call_envelope" else None)
    )
    path = (
        tuple((envelope.extract_path or "").split("."))
        if envelope and envelope.extract_path
        else ()
    )
    return CompiledProfile(profile, schema, validator, aliases, preset, path)


def _strict(schema: dict[str, Any], *, all_required: bool) -> dict[str, Any]:
    """The schema as validated: object schemas with `properties` refuse undeclared ones (unless
    they describe them with an `additionalProperties` schema), and with `all_required` require
    every declared property. The profile's own schema is left as it is."""
    out = copy.deepcopy(schema)
    stack: list[Any] = [out]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        properties = node.get("properties")
        if isinstance(properties, dict):
            if not isinstance(node.get("additionalProperties"), dict):
                node["additionalProperties"] = False
            if all_required:
                node["required"] = sorted(set(node.get("required") or []) | set(properties))
        for key, value in node.items():
            if key in ("enum", "const", "default", "examples", "required"):
                continue  # values, not schemas
            if key == "allOf":
                continue  # parts of one object: each would refuse the others' properties
            stack.append(value)
    return out


def validate(compiled: CompiledProfile, payload: Any, *, quote_values: bool = False) -> Result:
    """Check `payload`. Messages name the profile's bounds; only with `quote_values` (the
    offline `check-payload`, on the caller's own file) do they also show the payload's value."""
    data = _normalized(payload, compiled.aliases)
    target, failed = _extract(data, compiled)
    if failed:
        issue = Issue(
            "$", "envelope_extract_failed", "the object to check was not found in the envelope"
        )
        return Result(False, "breaking", [issue], None, False)
    if compiled.validator.is_valid(target):  # the common case: no error objects built
        return Result(True, "none", [], target, False)
    issues: list[Issue] = []
    truncated = False
    for error in compiled.validator.iter_errors(target):
        for issue in _issues(error, quote_values):
            if len(issues) == MAX_ERRORS:
                truncated = True
                break
            issues.append(issue)
        if truncated:
            break
    issues.sort(key=lambda i: (i.path, i.code))
    return Result(
        not issues, severity_of(issues), issues, target if not issues else None, truncated
    )


def severity_of(issues: list[Issue]) -> str:
    codes = {i.code for i in issues}
    if codes & BREAKING_CODES:
        return "breaking"
    if "extra_field" in codes:
        return "warning"
    return "info" if issues else "none"


def _normalized(payload: Any, aliases: tuple[tuple[str, str], ...]) -> Any:
    if not aliases or not isinstance(payload, dict):
        return payload
    out = dict(payload)
    for source, target in aliases:
        if source in out and target not in out:
            out[target] = out.pop(source)
    return out


def _extract(data: Any, compiled: CompiledProfile) -> tuple[Any, bool]:
    """(the object to check, whether extraction failed)."""
    preset = compiled.preset
    if preset is None:
        return data, False
    if not isinstance(data, dict):
        return None, True
    if preset == "mcp":
        found = data.get("arguments", data.get("input"))
        return (found, False) if isinstance(found, dict) else (None, True)
    if preset == "openai_functions":
        function = data.get("function")
        found = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(found, str):
            try:
                found = json.loads(found)
            except ValueError:
                return None, True
        return (found, False) if isinstance(found, dict) else (None, True)
    value: Any = data
    for part in compiled.extract_path:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None, True
    return value, False


def _pointer(path: Any, *extra: str) -> str:
    parts = [str(p) for p in path] + list(extra)
    if not parts:
        return "$"
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def _issues(error: Any, quote_values: bool = False) -> list[Issue]:
    kind = error.kind
    name = type(kind).__name__
    where = list(error.instance_path)
    if name == "Required":
        return [
            Issue(
                _pointer(where, str(kind.property)),
                "required_missing",
                "a required property is missing",
            )
        ]
    if name in ("AdditionalProperties", "UnevaluatedProperties"):
        unexpected = getattr(kind, "unexpected", None) or []
        return [
            Issue(
                _pointer(where, str(n)), "extra_field", "the consumer does not accept this property"
            )
            for n in unexpected
        ] or [Issue(_pointer(where), "extra_field", "the consumer does not accept a property here")]
    if name == "Not" and error.instance is None:  # `instance` converts the value: ask last
        return [Issue(_pointer(where), "null_disallowed", "null is not allowed here")]
    if name == "Type":
        expected = getattr(kind, "types", None)
        text = (
            f"expected {' or '.join(map(str, expected))}"
            if expected
            else "the value has the wrong type"
        )
        return [Issue(_pointer(where), "type_mismatch", text)]
    code = _CODES.get(name, "type_mismatch")
    if name in _BOUNDS:
        return [Issue(_pointer(where), code, _bounded(name, kind, error, quote_values))]
    return [Issue(_pointer(where), code, _MESSAGES.get(name, "the value does not fit the schema"))]


def _bounded(name: str, kind: Any, error: Any, quote_values: bool) -> str:
    """ "the value is below the minimum 1", or with `quote_values` "0 is below the minimum 1"."""
    subject, phrase, attribute = _BOUNDS[name]
    bound = getattr(kind, attribute, None)
    if bound is None:
        return _MESSAGES.get(name, "the value does not fit the schema")
    if attribute == "options":
        shown = ", ".join(map(_literal, bound))
    elif attribute in ("pattern", "format"):
        shown = str(bound)
    else:
        shown = _literal(bound)
    said = _described(error.instance) if quote_values else f"the {subject}"
    return f"{said} {phrase} {_cut(shown)}"


def _described(value: Any) -> str:
    """A payload value as a message shows it: a scalar as JSON, a container by its size."""
    if isinstance(value, list):
        return f"the array ({len(value)} item{'s' if len(value) != 1 else ''})"
    if isinstance(value, dict):
        return f"the object ({len(value)} propert{'ies' if len(value) != 1 else 'y'})"
    return _cut(_literal(value))


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
