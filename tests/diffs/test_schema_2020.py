"""JSON Schema 2020-12 and OpenAPI 3.1 constructs that used to be "no change" (issue 41,
point 3): `prefixItems` entries, boolean schemas, constraints lost when alternatives fold into
a type list, operation- and path-level `servers`. Each row is a whole 3.1 document with the
schema as a request body and a response body, so both directions are asserted at once.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.diffs.openapi import diff_openapi


def document(schema: Any) -> dict[str, Any]:
    """One POST operation taking and returning `schema`."""
    body = {"content": {"application/json": {"schema": schema}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/things": {
                "post": {"requestBody": body, "responses": {"200": {"description": "ok", **body}}}
            }
        },
    }


def found(base: Any, revision: Any) -> dict[str, str]:
    return {c.rule: c.severity.value for c in diff_openapi(document(base), document(revision))}


def array(*prefix: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "array", "prefixItems": list(prefix), **extra}


def obj(**extra: Any) -> dict[str, Any]:
    return {"type": "object", **extra}


S, N = {"type": "string"}, {"type": "integer"}

# (case, before, after, expected {rule: severity} over both sides)
CASES: list[tuple[str, Any, Any, dict[str, str]]] = [
    (
        # The new position is constrained where anything went: senders may be refused.
        "prefixItems entry added",
        array(S),
        array(S, N),
        {
            "request-body-prefix-item-added": "info",
            "request-body-type-specialized": "breaking",
            "response-body-prefix-item-added": "info",
            "response-body-type-specialized": "info",
        },
    ),
    (
        "prefixItems entry removed",
        array(S, N),
        array(S),
        {
            "request-body-prefix-item-removed": "info",
            "request-body-type-generalized": "info",
            "response-body-prefix-item-removed": "info",
            "response-body-type-generalized": "breaking",
        },
    ),
    (
        # Past maxItems the old array had no position: the entry widens with maxItems.
        "prefixItems entry added where maxItems ended the array",
        array(S, maxItems=1),
        array(S, N, maxItems=2),
        {
            "request-body-prefix-item-added": "info",
            "request-body-no-longer-false": "info",
            "request-body-max-items-increased": "info",
            "response-body-prefix-item-added": "info",
            "response-body-no-longer-false": "breaking",
            "response-body-max-items-increased": "warning",
        },
    ),
    (
        # The removed position now follows `items`: compared with it.
        "prefixItems entry removed, items the same schema",
        array(S, N, items=N),
        array(S, items=N),
        {
            "request-body-prefix-item-removed": "info",
            "response-body-prefix-item-removed": "info",
        },
    ),
    (
        "inside a prefixItems entry: format added",
        array(S),
        array({"type": "string", "format": "uuid"}),
        {"request-body-format-added": "warning", "response-body-format-added": "info"},
    ),
    (
        "items true -> false",
        {"type": "array", "items": True},
        {"type": "array", "items": False},
        {"request-body-became-false": "breaking", "response-body-became-false": "info"},
    ),
    (
        "items false -> true",
        {"type": "array", "items": False},
        {"type": "array", "items": True},
        {"request-body-no-longer-false": "info", "response-body-no-longer-false": "breaking"},
    ),
    (
        "items schema -> false",
        {"type": "array", "items": S},
        {"type": "array", "items": False},
        {"request-body-became-false": "breaking", "response-body-became-false": "info"},
    ),
    (
        "items false -> schema",
        {"type": "array", "items": False},
        {"type": "array", "items": S},
        {"request-body-no-longer-false": "info", "response-body-no-longer-false": "breaking"},
    ),
    (
        "property true -> false",
        obj(properties={"a": True}),
        obj(properties={"a": False}),
        {"request-property-became-false": "breaking", "response-property-became-false": "info"},
    ),
    (
        "property false -> schema",
        obj(properties={"a": False}),
        obj(properties={"a": S}),
        {
            "request-property-no-longer-false": "info",
            "response-property-no-longer-false": "breaking",
        },
    ),
    (
        "prefixItems entry true -> false",
        array(True),
        array(False),
        {"request-body-became-false": "breaking", "response-body-became-false": "info"},
    ),
    (
        "additionalProperties true -> false",
        obj(additionalProperties=True),
        obj(additionalProperties=False),
        {
            "request-body-additional-properties-forbidden": "warning",
            "response-body-additional-properties-forbidden": "info",
        },
    ),
    (
        "unevaluatedProperties true -> false",
        obj(unevaluatedProperties=True),
        obj(unevaluatedProperties=False),
        {
            "request-body-unevaluated-properties-added": "breaking",
            "response-body-unevaluated-properties-added": "info",
        },
    ),
    (
        "unevaluatedProperties false -> true",
        obj(unevaluatedProperties=False),
        obj(unevaluatedProperties=True),
        {
            "request-body-unevaluated-properties-removed": "info",
            "response-body-unevaluated-properties-removed": "breaking",
        },
    ),
    (
        "unevaluatedItems false -> schema",
        {"type": "array", "unevaluatedItems": False},
        {"type": "array", "unevaluatedItems": S},
        {"request-body-no-longer-false": "info", "response-body-no-longer-false": "breaking"},
    ),
    (
        # Folding alternatives into a type list drops the uuid: readers get any string.
        "format lost when anyOf folds into a type list",
        {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "number"}]},
        {"type": ["string", "number"]},
        {"request-body-format-removed": "info", "response-body-format-removed": "warning"},
    ),
    (
        "format gained when a type list unfolds into anyOf",
        {"type": ["string", "number"]},
        {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "number"}]},
        {"request-body-format-added": "warning", "response-body-format-added": "info"},
    ),
    (
        "maxLength lost when oneOf folds into a type list",
        {"oneOf": [{"type": "string", "maxLength": 5}, {"type": "integer"}]},
        {"type": ["string", "integer"]},
        {"request-body-max-length-unset": "info", "response-body-max-length-unset": "warning"},
    ),
    (
        "dependentRequired added",
        obj(),
        obj(dependentRequired={"a": ["b"]}),
        {
            "request-body-dependent-required-added": "breaking",
            "response-body-dependent-required-added": "info",
        },
    ),
    (
        "dependentRequired removed",
        obj(dependentRequired={"a": ["b"]}),
        obj(),
        {
            "request-body-dependent-required-removed": "info",
            "response-body-dependent-required-removed": "breaking",
        },
    ),
]


@pytest.mark.parametrize(
    ("case", "before", "after", "expected"), CASES, ids=[row[0] for row in CASES]
)
def test_2020_12_changes_are_judged_by_direction(
    case: str, before: Any, after: Any, expected: dict[str, str]
) -> None:
    assert found(before, after) == expected


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"type": "array", "items": True}, {"type": "array"}),
        ({"type": "array", "items": True}, {"type": "array", "items": {}}),
        (obj(unevaluatedProperties=True), obj()),
        (array(S, N), array(S, N)),
        ({"anyOf": [{"type": "string"}, {"type": "number"}]}, {"type": ["string", "number"]}),
        (
            {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "number"}]},
            {"type": ["string", "number"], "format": "uuid"},
        ),
    ],
)
def test_the_same_values_spelled_otherwise_are_no_change(one: Any, other: Any) -> None:
    assert found(one, other) == {}
    assert found(other, one) == {}


def servers_document(
    *, op: list[str] | None = None, path: list[str] | None = None, root: list[str] | None = None
) -> dict[str, Any]:
    operation: dict[str, Any] = {"responses": {"200": {"description": "ok"}}}
    item: dict[str, Any] = {"get": operation}
    out: dict[str, Any] = {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}}
    for node, urls in ((operation, op), (item, path), (out, root)):
        if urls is not None:
            node["servers"] = [{"url": u} for u in urls]
    out["paths"] = {"/uploads": item}
    return out


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (
            servers_document(op=["https://a", "https://b"]),
            servers_document(op=["https://a"]),
            [("endpoint-server-removed", "warning", "/paths/~1uploads/get/servers")],
        ),
        (
            servers_document(op=["https://a"]),
            servers_document(op=["https://a", "https://c"]),
            [("endpoint-server-added", "info", "/paths/~1uploads/get/servers")],
        ),
        (
            servers_document(path=["https://a"]),
            servers_document(path=["https://b"]),
            [
                ("endpoint-server-added", "info", "/paths/~1uploads/servers"),
                ("endpoint-server-removed", "warning", "/paths/~1uploads/servers"),
            ],
        ),
        (
            # An override added: the operation is called elsewhere than the document says.
            servers_document(root=["https://api"]),
            servers_document(op=["https://upload"], root=["https://api"]),
            [
                ("endpoint-server-added", "info", "/paths/~1uploads/get/servers"),
                ("endpoint-server-removed", "warning", "/paths/~1uploads/get/servers"),
            ],
        ),
    ],
)
def test_operation_and_path_servers_have_rules(
    before: dict[str, Any], after: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    changes = diff_openapi(before, after)
    assert sorted((c.rule, c.severity.value, c.path) for c in changes) == expected


def test_document_servers_keep_their_rule_and_severity() -> None:
    # The operation rules reuse these severities: a removed URL warns, an added one informs.
    changes = diff_openapi(
        servers_document(root=["https://a"]), servers_document(root=["https://b"])
    )
    assert sorted((c.rule, c.severity.value) for c in changes) == [
        ("server-added", "info"),
        ("server-removed", "warning"),
    ]
