"""OpenAPI engine: operations, parameters, bodies, responses, security, versions and refs."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest

from controller.diffs import ContractParseError, DiffOptions, diff_openapi, load_document


def spec(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths, **extra}


def op(**kw: Any) -> dict[str, Any]:
    return {"responses": {"200": {"description": "ok"}}, **kw}


def json_body(schema: Any) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def rules(base: Any, rev: Any, **kw: Any) -> dict[str, str]:
    return {c.rule: c.severity.value for c in diff_openapi(base, rev, **kw)}


def test_identical_documents_have_no_changes() -> None:
    doc = spec({"/a": {"get": op()}})
    assert diff_openapi(doc, copy.deepcopy(doc)) == []


def test_a_difference_no_rule_classifies_is_never_no_change() -> None:
    """Documents that differ in substance where no rule looks yield one `unclassified-difference`
    warning at the first such path; documentation and a renamed path parameter do not."""
    base = spec({"/a/{id}": {"get": op(**{"x-internal-owner": "team-a"})}})
    revision = copy.deepcopy(base)
    revision["paths"]["/a/{id}"]["get"]["x-internal-owner"] = "team-b"
    (change,) = diff_openapi(base, revision)
    assert (change.rule, change.severity.value) == ("unclassified-difference", "warning")
    assert change.path == "/paths/~1a~1{}/get/x-internal-owner"
    assert change.path in change.summary

    documented = copy.deepcopy(base)
    documented["info"]["description"] = "now with words"
    documented["paths"]["/a/{id}"]["get"]["summary"] = "Fetch an a"
    assert diff_openapi(base, documented) == []
    renamed = copy.deepcopy(base)
    renamed["paths"] = {"/a/{key}": renamed["paths"]["/a/{id}"]}
    assert diff_openapi(base, renamed) == []


def test_extensible_enums_matter_only_to_senders() -> None:
    """`x-extensible-enum`: a value removed from what clients send is breaking; readers
    accept unknown values by contract, so responses change only at info."""

    def doc(values: list[str]) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": {"kind": {"type": "string", "x-extensible-enum": values}},
        }
        answer = {"200": {"description": "ok", **json_body(schema)}}
        return spec({"/a": {"post": {"requestBody": json_body(schema), "responses": answer}}})

    assert rules(doc(["card", "bank"]), doc(["card"])) == {
        "request-property-x-extensible-enum-value-removed": "breaking",
        "response-property-x-extensible-enum-value-removed": "info",
    }
    assert rules(doc(["card"]), doc(["card", "bank"])) == {
        "request-property-x-extensible-enum-value-added": "info",
        "response-property-x-extensible-enum-value-added": "info",
    }


def test_a_required_response_property_becoming_write_only_is_reported() -> None:
    def doc(write_only: bool) -> dict[str, Any]:
        schema = {
            "type": "object",
            "required": ["secret"],
            "properties": {"secret": {"type": "string", "writeOnly": write_only}},
        }
        return spec(
            {"/a": {"get": {"responses": {"200": {"description": "ok", **json_body(schema)}}}}}
        )

    # writeOnly values are never returned: readers lose the field.
    assert rules(doc(False), doc(True)) == {"response-property-became-write-only": "breaking"}
    assert rules(doc(True), doc(False)) == {"response-property-became-not-write-only": "warning"}


def test_operation_removed_is_breaking_with_location() -> None:
    changes = diff_openapi(spec({"/v1/charges": {"get": op()}}), spec({}))
    assert [(c.rule, c.severity.value, c.location and c.location.operation) for c in changes] == [
        ("endpoint-removed", "breaking", "GET /v1/charges")
    ]


def test_deprecated_operation_removed_is_a_warning() -> None:
    assert rules(spec({"/a": {"get": op(deprecated=True)}}), spec({})) == {
        "endpoint-removed-deprecated": "warning"
    }


def test_removed_before_sunset_is_breaking_when_today_is_known() -> None:
    base = spec({"/a": {"get": op(deprecated=True, **{"x-sunset": "2999-01-01"})}})
    opts = DiffOptions(today=dt.date(2024, 1, 1))
    assert rules(base, spec({}), options=opts) == {"endpoint-removed-before-sunset": "breaking"}


def test_renamed_path_parameter_is_the_same_operation() -> None:
    param = {"in": "path", "required": True, "schema": {"type": "string"}}
    base = spec({"/users/{id}": {"get": op(parameters=[{**param, "name": "id"}])}})
    rev = spec({"/users/{userId}": {"get": op(parameters=[{**param, "name": "userId"}])}})
    assert diff_openapi(base, rev) == []


def test_endpoint_added_is_info() -> None:
    assert rules(spec({}), spec({"/a": {"post": op()}})) == {"endpoint-added": "info"}


@pytest.mark.parametrize("where", ["query", "header", "cookie"])
def test_parameters_in_every_location(where: str) -> None:
    p = {"name": "x", "in": where, "schema": {"type": "string"}}
    base = spec({"/a": {"get": op(parameters=[p])}})
    required = spec({"/a": {"get": op(parameters=[{**p, "required": True}])}})
    assert rules(spec({"/a": {"get": op()}}), required) == {
        "request-parameter-added-required": "breaking"
    }
    assert rules(base, spec({"/a": {"get": op()}})) == {"request-parameter-removed": "warning"}
    assert rules(base, required) == {"request-parameter-became-required": "breaking"}
    # A parameter is text on the wire: an integer is a string that fewer texts satisfy.
    narrowed = spec({"/a": {"get": op(parameters=[{**p, "schema": {"type": "integer"}}])}})
    assert rules(base, narrowed) == {"request-parameter-type-specialized": "breaking"}
    assert rules(narrowed, base) == {"request-parameter-type-generalized": "info"}
    flag = spec({"/a": {"get": op(parameters=[{**p, "schema": {"type": "boolean"}}])}})
    assert rules(narrowed, flag) == {"request-parameter-type-changed": "breaking"}


def test_request_body_and_media_types() -> None:
    body = json_body({"type": "object", "properties": {"a": {"type": "string"}}})
    base = spec({"/a": {"post": op(requestBody=body)}})
    xml = {"content": {"application/xml": body["content"]["application/json"]}}
    assert rules(base, spec({"/a": {"post": op(requestBody=xml)}})) == {
        "request-body-media-type-removed": "breaking",
        "request-body-media-type-added": "info",
    }
    required = {**body, "required": True}
    assert rules(
        spec({"/a": {"post": op()}}), spec({"/a": {"post": op(requestBody=required)}})
    ) == {"request-body-added-required": "breaking"}


def test_responses_status_codes_and_headers() -> None:
    resp = {
        "description": "ok",
        "headers": {"X-Rate": {"required": True, "schema": {"type": "integer"}}},
    }
    base = spec({"/a": {"get": {"responses": {"200": resp, "404": {"description": "no"}}}}})
    created = {"description": "ok", **json_body({"type": "object"})}
    rev = spec({"/a": {"get": {"responses": {"201": created}}}})
    assert rules(base, rev) == {
        "response-success-status-removed": "breaking",
        "response-non-success-status-removed": "info",
        "response-success-status-added": "info",
    }
    no_header = spec(
        {"/a": {"get": {"responses": {"200": {"description": "ok"}, "404": {"description": "no"}}}}}
    )
    assert rules(base, no_header) == {"response-header-removed-required": "breaking"}


def test_a_success_status_removed_where_the_answers_left_were_known_is_a_warning() -> None:
    body = {"description": "ok", **json_body({"type": "object"})}
    both = spec({"/a": {"post": {"responses": {"200": body, "201": body}}}})
    # 201 gone, 200 documented before: the operation answers as a reader already handled.
    assert rules(both, spec({"/a": {"post": {"responses": {"200": body}}}})) == {
        "response-success-status-removed-covered": "warning"
    }
    # 200 without a body became 204: nothing to parse either way.
    empty = spec({"/a": {"delete": {"responses": {"200": {"description": "ok"}}}}})
    no_content = spec({"/a": {"delete": {"responses": {"204": {"description": "gone"}}}}})
    assert rules(empty, no_content) == {
        "response-success-status-removed-covered": "warning",
        "response-success-status-added": "info",
    }
    # 201 with a body became 200 with a body: a status the reader never saw documented.
    created = spec({"/a": {"post": {"responses": {"201": body}}}})
    assert (
        rules(created, spec({"/a": {"post": {"responses": {"200": body}}}}))[
            "response-success-status-removed"
        ]
        == "breaking"
    )


def test_response_property_removed_is_breaking_when_required() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    base = spec({"/a": {"get": {"responses": {"200": {"description": "", **json_body(schema)}}}}})
    rev_schema = {"type": "object", "properties": {}}
    rev = spec(
        {"/a": {"get": {"responses": {"200": {"description": "", **json_body(rev_schema)}}}}}
    )
    [change] = diff_openapi(base, rev)
    assert change.rule == "response-property-removed-required"
    assert change.severity.value == "breaking"
    assert change.path.endswith("/responses/200/content/application~1json/schema/properties/id")
    assert change.location is not None and change.location.operation == "GET /a"


def test_security_requirements() -> None:
    base = spec({"/a": {"get": op()}})
    rev = spec({"/a": {"get": op(security=[{"oauth": ["read"]}])}})
    assert rules(base, rev) == {"security-requirement-added": "breaking"}
    scoped = spec({"/a": {"get": op(security=[{"oauth": ["read", "write"]}])}})
    assert rules(rev, scoped) == {"security-scope-added": "breaking"}
    assert rules(scoped, rev) == {"security-scope-removed": "info"}


def test_servers() -> None:
    base = spec({}, servers=[{"url": "https://a.example"}])
    rev = spec({}, servers=[{"url": "https://b.example"}])
    assert rules(base, rev) == {"server-removed": "warning", "server-added": "info"}


def test_swagger_2_body_and_responses() -> None:
    def swagger(prop_type: str) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"n": {"type": prop_type}}, "required": ["n"]}
        return {
            "swagger": "2.0",
            "info": {"title": "t", "version": "1"},
            "paths": {
                "/a": {
                    "post": {
                        "parameters": [{"in": "body", "name": "b", "schema": schema}],
                        "responses": {"200": {"description": "ok", "schema": schema}},
                    }
                }
            },
        }

    assert rules(swagger("string"), swagger("integer")) == {
        "request-property-type-changed": "breaking",
        "response-property-type-changed": "breaking",
    }


def test_openapi_31_type_arrays() -> None:
    def doc(t: Any) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"v": {"type": t}}}
        d = spec({"/a": {"get": {"responses": {"200": {"description": "", **json_body(schema)}}}}})
        d["openapi"] = "3.1.0"
        return d

    assert rules(doc("string"), doc(["string", "null"])) == {
        "response-property-became-nullable": "breaking"
    }


def test_ref_cycles_are_compared_without_inlining() -> None:
    def doc(extra_type: str) -> dict[str, Any]:
        node = {
            "type": "object",
            "properties": {
                "next": {"$ref": "#/components/schemas/Node"},
                "other": {"anyOf": [{"$ref": "#/components/schemas/Node"}, {"type": "string"}]},
                "v": {"type": extra_type},
            },
        }
        ref = {"$ref": "#/components/schemas/Node"}
        return spec(
            {"/a": {"get": {"responses": {"200": {"description": "", **json_body(ref)}}}}},
            components={"schemas": {"Node": node}},
        )

    changes = diff_openapi(doc("string"), doc("integer"))
    assert [(c.rule, c.severity.value) for c in changes] == [
        ("response-property-type-changed", "breaking")
    ]
    assert changes[0].path.endswith("/schema/properties/v")


def test_mutually_recursive_refs_terminate() -> None:
    def doc(t: str) -> dict[str, Any]:
        schemas = {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
            "B": {
                "type": "object",
                "properties": {"a": {"$ref": "#/components/schemas/A"}, "x": {"type": t}},
            },
        }
        ref = {"$ref": "#/components/schemas/A"}
        return spec(
            {"/a": {"post": op(requestBody=json_body(ref))}}, components={"schemas": schemas}
        )

    assert rules(doc("string"), doc("boolean")) == {"request-property-type-changed": "breaking"}


def test_example_refs_are_not_resolved() -> None:
    text = json.dumps(
        spec(
            {"/a": {"get": op()}},
            components={"examples": {"scim": {"value": {"$ref": "https://api.example/x"}}}},
        )
    )
    doc = load_document(text, "spec.json")
    assert diff_openapi(doc, doc) == []


def test_external_refs_go_through_the_resolver() -> None:
    files = {
        "schemas.yaml": {"Pet": {"type": "object", "properties": {"n": {"type": "string"}}}},
        "schemas2.yaml": {"Pet": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }

    def doc(name: str) -> dict[str, Any]:
        ref = {"$ref": f"{name}#/Pet"}
        return spec({"/a": {"get": {"responses": {"200": {"description": "", **json_body(ref)}}}}})

    changes = diff_openapi(doc("schemas.yaml"), doc("schemas2.yaml"), resolver=files.__getitem__)
    assert [c.rule for c in changes] == ["response-property-type-changed"]
    with pytest.raises(ContractParseError, match="resolver"):
        diff_openapi(doc("schemas.yaml"), doc("schemas2.yaml"))


def test_security_schemes_are_compared() -> None:
    """`components.securitySchemes`: how credentials are sent and tokens obtained."""

    def doc(**schemes: Any) -> dict[str, Any]:
        return spec({"/a": {"get": op()}}, components={"securitySchemes": schemes})

    oauth = {
        "type": "oauth2",
        "flows": {
            "clientCredentials": {
                "tokenUrl": "https://auth.example.com/token",
                "scopes": {"read": "Read", "write": "Write"},
            }
        },
    }
    moved = copy.deepcopy(oauth)
    flow = moved["flows"]["clientCredentials"]
    flow["tokenUrl"] = "https://login.example.com/token"
    del flow["scopes"]["write"]
    flow["scopes"]["admin"] = "Admin"
    key = {"type": "apiKey", "in": "header", "name": "X-Key"}
    assert rules(doc(oauth=oauth, key=key), doc(oauth=moved, key={**key, "in": "query"})) == {
        "security-scheme-oauth-token-url-changed": "breaking",
        "security-scheme-oauth-scope-removed": "warning",
        "security-scheme-oauth-scope-added": "info",
        "security-scheme-type-changed": "breaking",
    }
    assert rules(doc(oauth=oauth), doc(key=key)) == {
        "security-scheme-removed": "warning",
        "security-scheme-added": "info",
    }


def test_callbacks_links_and_webhooks_are_never_silent() -> None:
    """No rule reads callbacks, links or 3.1 webhooks yet: a difference there is an
    `unclassified-difference` warning at its path, beside whatever else changed."""
    hook = {"post": {"requestBody": json_body({"type": "object"}), **op()}}
    base = spec(
        {
            "/a": {
                "get": op(
                    parameters=[{"name": "q", "in": "query", "schema": {"type": "string"}}],
                    callbacks={"done": {"{$request.body#/url}": copy.deepcopy(hook)}},
                )
            }
        },
        webhooks={"charge.created": copy.deepcopy(hook)},
    )
    revision = copy.deepcopy(base)
    get = revision["paths"]["/a"]["get"]
    get["callbacks"]["done"]["{$request.body#/url}"]["post"]["summary"] = "x"  # documentation
    get["callbacks"]["done"]["{$request.body#/url}"]["post"]["requestBody"]["required"] = True
    callback_body = get["callbacks"]["done"]["{$request.body#/url}"]["post"]["requestBody"]
    callback_body["content"]["application/json"]["schema"]["type"] = "array"
    del get["parameters"]
    del revision["webhooks"]["charge.created"]
    found = {(c.rule, c.path) for c in diff_openapi(base, revision)}
    assert ("request-parameter-removed", "/paths/~1a/get/parameters/q") in found
    callback = "/paths/~1a/get/callbacks/done/{$request.body#~1url}/post/requestBody"
    # The first difference in the callback, its schema included: no schema rule reads it.
    assert ("unclassified-difference", callback + "/content/application~1json/schema/type") in found
    assert ("webhook-removed", "/webhooks/charge.created") in found
    assert len(found) == 3
    changed = copy.deepcopy(base)
    changed["webhooks"]["charge.created"]["post"]["requestBody"]["required"] = True
    changed["webhooks"]["refund.created"] = hook
    found = {(c.rule, c.path) for c in diff_openapi(base, changed)}
    assert found == {
        ("webhook-added", "/webhooks/refund.created"),
        ("unclassified-difference", "/webhooks/charge.created/post/requestBody/required"),
    }


def test_an_xml_representation_change_is_a_warning() -> None:
    def doc(xml: dict[str, Any]) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": {"id": {"type": "string", "xml": xml}},
        }
        answer = {"200": {"description": "ok", "content": {"application/xml": {"schema": schema}}}}
        return spec({"/a": {"get": {"responses": answer}}})

    assert rules(doc({"attribute": True}), doc({"name": "ident"})) == {
        "response-property-xml-changed": "warning"
    }


def test_equivalent_schema_forms_are_no_difference() -> None:
    """A reference inlined, or `oneOf` members reordered: the schema differ finds nothing
    and the fallback does not call it a difference either."""
    pet = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    cat = {"type": "object", "properties": {"meow": {"type": "boolean"}}}
    dog = {"type": "object", "properties": {"bark": {"type": "boolean"}}}

    def doc(schema: dict[str, Any]) -> dict[str, Any]:
        answer = {"200": {"description": "ok", **json_body(schema)}}
        components = {"schemas": {"Pet": pet, "Cat": cat, "Dog": dog}}
        return spec({"/a": {"get": {"responses": answer}}}, components=components)

    def ref(name: str) -> dict[str, str]:
        return {"$ref": f"#/components/schemas/{name}"}

    assert diff_openapi(doc(ref("Pet")), doc(copy.deepcopy(pet))) == []
    assert diff_openapi(doc(ref("Pet")), doc({"allOf": [ref("Pet")], "description": "A pet"})) == []
    narrowed = {"allOf": [{**pet, "required": []}]}
    assert rules(doc(ref("Pet")), doc(narrowed)) == {
        "response-property-became-optional": "breaking"
    }
    assert (
        diff_openapi(
            doc({"oneOf": [ref("Cat"), ref("Dog")]}), doc({"oneOf": [ref("Dog"), ref("Cat")]})
        )
        == []
    )


def test_a_required_header_declared_as_an_api_key_scheme_is_not_a_new_credential() -> None:
    # SendGrid v3 -> v4: `Authorization` was a required header parameter; v4 names it as an
    # apiKey scheme on the same header. Clients send the same header as before.
    header = {"name": "Authorization", "in": "header", "required": True, "type": "string"}
    ok = {"200": {"description": ""}}
    old = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"get": {"parameters": [header], "responses": ok}}},
    }
    scheme = {"type": "apiKey", "in": "header", "name": "Authorization"}
    new = {
        **old,
        "securityDefinitions": {"Key": scheme},
        "paths": {
            "/a": {
                "get": {
                    "parameters": [header],
                    "security": [{"Key": []}],
                    "responses": {"200": {"description": ""}},
                }
            }
        },
    }
    assert rules(old, new) == {
        "security-requirement-declared": "info",
        "security-scheme-added": "info",
    }
    # Without that parameter before, the credential is new: breaking.
    bare = {**old, "paths": {"/a": {"get": {"responses": {"200": {"description": ""}}}}}}
    assert rules(bare, new)["security-requirement-added"] == "breaking"


def test_an_empty_placeholder_body_dropped_or_swapped_is_not_breaking() -> None:
    # SendGrid (Swagger 2.0) wrote "no body" as `{type: object, properties: {}}`, later as
    # `{type: 'null'}`, later as nothing: no field a reader could have read.
    def doc(schema: Any) -> dict[str, Any]:
        resp: dict[str, Any] = {"description": ""}
        if schema is not None:
            resp["schema"] = schema
        return {
            "swagger": "2.0",
            "info": {"title": "t", "version": "1"},
            "produces": ["application/json"],
            "paths": {"/send": {"post": {"responses": {"202": resp}}}},
        }

    empty = {"type": "object", "properties": {}}
    assert rules(doc(empty), doc({"type": "null"})) == {"response-body-placeholder-changed": "info"}
    assert rules(doc({"type": "null"}), doc(None)) == {
        "response-media-type-removed-placeholder": "warning"
    }
    # A body with a field to read is another matter.
    real = {"type": "object", "properties": {"id": {"type": "string"}}}
    assert rules(doc(real), doc(None)) == {"response-media-type-removed": "breaking"}
