"""Schema inference from JSON samples, and the sample diff behind `compare_json` and `rest`.

A schema is inferred from one or more samples: types are unioned, object properties merged,
and a property is required when it is present in every sample that has the object. The two
inferred schemas are then diffed as a response (data we read). Profiles (CONTRACT.md): `cli`
is strict (any removed field is breaking), `hosted` is lenient: a field present in the before
sample and missing from the after sample is a warning, since a sample cannot say whether the
field was required (the hosted product's test vectors; `rest` watches use it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from controller.diffs.core import changes_from_findings, make_change
from controller.diffs.jsonschema import diff_schemas
from controller.diffs.rules import Direction
from controller.model.change import Change

Profile = Literal["cli", "hosted"]


def infer_schema(samples: Sequence[Any]) -> dict[str, Any]:
    """Return a JSON Schema that every sample satisfies (required = present in all)."""
    schema: dict[str, Any] = {}
    for sample in samples:
        schema = _merge(schema, _infer_one(sample)) if schema else _infer_one(sample)
    return schema


def diff_json_samples(
    base: Any,
    revision: Any,
    *,
    profile: Profile = "cli",
    multiple: bool = False,
) -> list[Change]:
    """Diff two JSON payloads (or two lists of samples with `multiple=True`) as responses."""
    base_samples = list(base) if multiple else [base]
    rev_samples = list(revision) if multiple else [revision]
    bschema = infer_schema(base_samples)
    rschema = infer_schema(rev_samples)
    findings = diff_schemas(bschema, rschema, Direction.RESPONSE)
    changes = changes_from_findings(
        findings,
        direction=Direction.RESPONSE,
        root_prefix="response-body",
        nested_prefix="response-property",
        pointer="",
        location=None,
        label="payload",
    )
    # Strict: a consumer that reads a field breaks when it disappears, optional or not.
    # Lenient: "required" was only inferred from the samples, so a missing field is a warning.
    removed, prefix = (
        ("response-property-removed-required", "payload (strict profile)")
        if profile == "cli"
        else ("response-property-removed", "payload (hosted profile)")
    )
    return [_removal(c, removed, prefix) for c in changes]


_REMOVALS = ("response-property-removed", "response-property-removed-required")


def _removal(change: Change, rule: str, prefix: str) -> Change:
    """A removed field, as the profile classifies it."""
    if change.rule not in _REMOVALS or change.rule == rule:
        return change
    return make_change(
        rule,
        change.path,
        location=change.location,
        name=change.summary.split("'")[1] if "'" in change.summary else "",
        prefix=prefix,
    )


def _infer_one(value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "integer"} if value.is_integer() else {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        items: dict[str, Any] = {}
        for item in value:
            items = _merge(items, _infer_one(item)) if items else _infer_one(item)
        return {"type": "array", "items": items} if items else {"type": "array"}
    if isinstance(value, dict):
        props = {str(k): _infer_one(v) for k, v in value.items()}
        return {"type": "object", "properties": props, "required": sorted(props)}
    return {}


def _types(schema: dict[str, Any]) -> list[str]:
    t = schema.get("type")
    if t is None:
        return []
    return [t] if isinstance(t, str) else list(t)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    types = sorted(set(_types(a)) | set(_types(b)))
    if "integer" in types and "number" in types:
        types.remove("integer")
    out: dict[str, Any] = {}
    if types:
        out["type"] = types[0] if len(types) == 1 else types
    if "properties" in a or "properties" in b:
        pa, pb = a.get("properties", {}), b.get("properties", {})
        props = {}
        for name in list(pa) + [n for n in pb if n not in pa]:
            if name in pa and name in pb:
                props[name] = _merge(pa[name], pb[name])
            else:
                props[name] = pa.get(name) or pb.get(name) or {}
        out["properties"] = props
        if "properties" in a and "properties" in b:
            out["required"] = sorted(set(a.get("required", [])) & set(b.get("required", [])))
        else:
            out["required"] = sorted(a.get("required", []) or b.get("required", []))
    if "items" in a or "items" in b:
        ia, ib = a.get("items"), b.get("items")
        out["items"] = _merge(ia, ib) if ia and ib else (ia or ib)
    return out
