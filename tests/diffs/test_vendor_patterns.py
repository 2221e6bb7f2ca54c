"""Patterns found in real vendors' histories (issue 41): the same values written another way
are not a break, and what really breaks is still named. Each test is a small document in the
shape a vendor wrote (the vendor and pair are named), diffed both ways where it matters."""

from __future__ import annotations

import copy
from typing import Any

from controller.diffs.openapi import diff_openapi


def document(
    schema: Any, *, version: str = "3.0.3", components: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One POST operation taking and returning `schema` (the request and the 200 body)."""
    body = {"content": {"application/json": {"schema": schema}}}
    return {
        "openapi": version,
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/things": {
                "post": {"requestBody": body, "responses": {"200": {"description": "", **body}}}
            }
        },
        "components": {"schemas": components or {}},
    }


def found(base: dict[str, Any], revision: dict[str, Any]) -> dict[str, str]:
    return {c.rule: c.severity.value for c in diff_openapi(base, revision)}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


OBJ = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def test_an_extension_beside_a_one_part_all_of_changes_nothing() -> None:
    # Okta v3 -> v4: `x-okta-ignore-redocly-rules-for-sdk` added beside `allOf: [$ref Base]`
    # made every subtype of Base read as removed.
    base = {"Base": OBJ, "Simple": {"allOf": [ref("Base")]}}
    revision = {**base, "Simple": {"x-vendor-note": True, "allOf": [ref("Base")]}}
    assert (
        found(
            document(ref("Simple"), components=base), document(ref("Simple"), components=revision)
        )
        == {}
    )


def test_a_ref_sibling_is_ignored_before_3_1_and_compared_from_3_1() -> None:
    # Xero v2 -> v3: `{$ref: Contact, type: string}` -> `$ref: Contact`; a Reference Object's
    # siblings are ignored in OpenAPI 3.0, so the property always was the Contact object.
    components = {"Contact": OBJ}
    with_sibling = {"type": "object", "properties": {"c": {**ref("Contact"), "type": "string"}}}
    plain = {"type": "object", "properties": {"c": ref("Contact")}}
    assert (
        found(document(with_sibling, components=components), document(plain, components=components))
        == {}
    )
    # In 3.1 the sibling constrains: the property was a string and an object at once.
    assert found(
        document(with_sibling, version="3.1.0", components=components),
        document(plain, version="3.1.0", components=components),
    ) == {"request-property-type-changed": "breaking", "response-property-type-changed": "breaking"}


def test_a_type_written_out_where_the_alternatives_imply_it_is_info() -> None:
    # Box v1 -> v2: the inline `oneOf [AiAgentAsk, AiAgentReference]` moved into a named
    # schema that adds `type: object`; both alternatives are objects.
    components = {"A": OBJ, "B": {"type": "object", "properties": {"x": {"type": "integer"}}}}
    before = {"type": "object", "properties": {"agent": {"oneOf": [ref("A"), ref("B")]}}}
    after = {
        "type": "object",
        "properties": {"agent": {"type": "object", "oneOf": [ref("A"), ref("B")]}},
    }
    assert found(
        document(before, components=components), document(after, components=components)
    ) == {
        "request-property-type-made-explicit": "info",
        "response-property-type-made-explicit": "info",
    }


def test_a_type_dropped_where_properties_still_imply_it_is_info() -> None:
    # Linode v4 -> v5: `type: object` dropped, the properties kept.
    untyped = {k: v for k, v in OBJ.items() if k != "type"}
    assert found(document(OBJ), document(untyped)) == {
        "request-body-type-left-implied": "info",
        "response-body-type-left-implied": "info",
    }


def test_an_unknown_format_corrected_to_a_known_one_adds_a_check() -> None:
    # Linode v1 -> v2: `format: datetime` (checks nothing) -> `format: date-time`.
    before = {"type": "object", "properties": {"at": {"type": "string", "format": "datetime"}}}
    after = copy.deepcopy(before)
    after["properties"]["at"]["format"] = "date-time"
    assert found(document(before), document(after)) == {
        "request-property-format-added": "warning",
        "response-property-format-added": "info",
    }


def test_a_property_defined_in_two_all_of_parts_is_their_conjunction() -> None:
    # SendGrid v3 -> v4 (POST /senders): the body became `allOf [$ref sender, {from:
    # {required: [email]}, required: [...]}]`; the same properties, the same requirements.
    sender = {
        "type": "object",
        "properties": {
            "nickname": {"type": "string"},
            "from": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
    }
    inline = copy.deepcopy(sender)
    inline["properties"]["from"]["required"] = ["email"]
    inline["required"] = ["nickname"]
    split = {
        "allOf": [
            ref("Sender"),
            {
                "type": "object",
                "properties": {"from": {"type": "object", "required": ["email"]}},
                "required": ["nickname"],
            },
        ]
    }
    components = {"Sender": sender}
    assert (
        found(document(inline, components=components), document(split, components=components)) == {}
    )


def test_access_keywords_moved_inside_a_read_only_property_change_nothing_for_senders() -> None:
    # Okta v1 -> v2: HrefObject lost its object-level readOnly and its fields got one each,
    # inside `_links`, read-only on both sides: never sent either way.
    link_v1 = {
        "type": "object",
        "readOnly": True,
        "properties": {"href": {"type": "string"}, "name": {"type": "string"}},
    }
    link_v2 = {
        "type": "object",
        "properties": {"href": {"type": "string"}, "name": {"type": "string", "readOnly": True}},
    }
    body = {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "_links": {"type": "object", "readOnly": True, "properties": {"self": ref("Link")}},
        },
    }
    changes = found(
        document(body, components={"Link": link_v1}), document(body, components={"Link": link_v2})
    )
    assert not any(v == "breaking" for v in changes.values()), changes


def test_required_fields_inside_a_formerly_read_only_object_do_not_refuse_old_senders() -> None:
    # Okta v2 -> v3: IDVEndpoints was read-only (never sent); it became writable with four
    # required fields. Old senders never sent it, and it stays optional in its parent.
    endpoints_v2 = {"type": "object", "readOnly": True, "properties": {"token": {"type": "string"}}}
    endpoints_v3 = {
        "type": "object",
        "properties": {"token": {"type": "string"}, "jwks": {"type": "string"}},
        "required": ["token", "jwks"],
    }
    body = {"type": "object", "properties": {"endpoints": ref("Endpoints")}}
    changes = found(
        document(body, components={"Endpoints": endpoints_v2}),
        document(body, components={"Endpoints": endpoints_v3}),
    )
    assert changes.get("request-property-became-not-read-only-optional") == "info"
    assert not any(v == "breaking" for k, v in changes.items() if k.startswith("request")), changes


def test_the_discriminator_property_dropped_from_a_subtypes_required_list_is_no_break() -> None:
    # Okta v2 -> v3: AppConfigActiveDirectory stopped listing `type` (AppConfig's
    # discriminator) as required; every value still carries it for dispatch.
    parent = {
        "type": "object",
        "properties": {"type": {"type": "string"}},
        "discriminator": {"propertyName": "type"},
    }
    sub = {"allOf": [ref("AppConfig")], "type": "object", "properties": {"dn": {"type": "string"}}}
    before = {"AppConfig": parent, "AD": {**sub, "required": ["dn", "type"]}}
    after = {"AppConfig": parent, "AD": {**sub, "required": ["dn"]}}
    changes = found(document(ref("AD"), components=before), document(ref("AD"), components=after))
    assert not any(v == "breaking" for v in changes.values()), changes


def test_a_required_name_no_schema_defines_is_judged_as_undeclared() -> None:
    # Okta v3 -> v4: RoleGovernanceSource required `resources`, a property it never defined.
    before = {**OBJ, "required": ["id", "resources"]}
    assert found(document(before), document(OBJ)) == {
        "request-property-undeclared-became-optional": "info",
        "response-property-undeclared-became-optional": "warning",
    }
    assert (
        found(document(OBJ), document(before))["request-property-undeclared-became-required"]
        == "breaking"
    )


def test_a_schema_on_a_204_is_not_compared() -> None:
    # SendGrid v1 -> v2: a schema dropped from a 204 No Content answer.
    def doc(resp: dict[str, Any]) -> dict[str, Any]:
        return {
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "paths": {"/x": {"delete": {"responses": {"204": resp}}}},
        }

    with_body = {"description": "", "content": {"application/json": {"schema": OBJ}}}
    assert found(doc(with_body), doc({"description": ""})) == {}


def test_swagger_items_listed_as_a_union_read_as_any_of() -> None:
    # Slack (Swagger 2.0) wrote unions as `items: [A, B]` without `type: array`.
    a = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "file": {"type": "string"}},
        "required": ["ok"],
    }
    b = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "msg": {"type": "string"}},
        "required": ["ok"],
    }

    def doc(schema: Any) -> dict[str, Any]:
        return {
            "swagger": "2.0",
            "info": {"title": "t", "version": "1"},
            "produces": ["application/json"],
            "paths": {"/r": {"get": {"responses": {"200": {"description": "", "schema": schema}}}}},
        }

    plain = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    union = {"type": "object", "items": [a, b]}
    # Every alternative still requires `ok`: no reader loses it.
    assert found(doc(plain), doc(union)) == {"response-body-rewritten-as-alternatives": "info"}
    # An alternative without `ok` is named.
    c = {"type": "object", "properties": {"msg": {"type": "string"}}}
    assert found(doc(plain), doc({"type": "object", "items": [a, c]})) == {
        "response-property-removed-required": "breaking"
    }


def test_a_map_schema_dropped_is_a_warning_but_its_new_keys_must_fit_the_old_values() -> None:
    # Okta v3 -> v4: Group._embedded, a map of objects, became an object with two object
    # properties and no schema for other keys: documented keys still hold objects.
    entry = {"type": "object", "properties": {"n": {"type": "integer"}}}
    old_map = {"type": "object", "additionalProperties": entry}
    as_object = {"type": "object", "properties": {"stats": entry, "app": entry}}
    assert found(document(old_map), document(as_object)) == {
        "request-body-additional-properties-unconstrained": "info",
        "request-property-added-optional": "info",
        "response-body-additional-properties-unconstrained": "warning",
        "response-property-added-optional": "info",
    }
    # Okta v1 -> v2: ProfileMapping.properties, a map of objects, became one object whose
    # keys hold strings: a reader of the map gets a string where it read an object.
    strings = {"type": "object", "properties": {"expression": {"type": "string"}}}
    changes = found(document(old_map), document(strings))
    assert changes["response-property-type-changed"] == "breaking"


def test_an_enum_value_cleaned_of_leaked_markup_is_a_correction() -> None:
    # Okta v4 -> v5: `<x-lifecycle class="ea"></x-lifecycle> DEVICE_SIGNAL_COLLECTION` became
    # `DEVICE_SIGNAL_COLLECTION`; the marked-up text was never a value a server took.
    marked = '<x-lifecycle class="ea"></x-lifecycle> DEVICE_SIGNAL_COLLECTION'
    before = {
        "type": "object",
        "properties": {"t": {"type": "string", "enum": ["PASSWORD", marked]}},
    }
    after = copy.deepcopy(before)
    after["properties"]["t"]["enum"] = ["PASSWORD", "DEVICE_SIGNAL_COLLECTION"]
    assert found(document(before), document(after)) == {
        "request-property-enum-value-corrected": "info",
        "response-property-enum-value-corrected": "info",
    }
    # A value really dropped is still a removal.
    after["properties"]["t"]["enum"] = ["DEVICE_SIGNAL_COLLECTION"]
    assert found(document(before), document(after))["request-property-enum-value-removed"] == (
        "breaking"
    )


def test_a_name_required_by_another_all_of_part_already_is_not_newly_required() -> None:
    # Okta v4 -> v5: an email server subtype's own part started requiring `authType`, which
    # its base part (BaseEmailServer) defined and required all along.
    base = {
        "type": "object",
        "properties": {"authType": {"type": "string"}},
        "required": ["authType"],
    }
    own = {"type": "object", "properties": {"clientId": {"type": "string"}}}
    before = {"allOf": [ref("Base"), own]}
    after = {"allOf": [ref("Base"), {**own, "required": ["authType"]}]}
    components = {"Base": base}
    assert (
        found(document(before, components=components), document(after, components=components)) == {}
    )
    # Not required anywhere before: a sender is refused without it.
    loose = {"Base": {**base, "required": []}}
    assert found(document(before, components=loose), document(after, components=loose)) == {
        "request-property-became-required": "breaking",
        "response-property-became-required": "info",
    }


def test_shared_properties_beside_alternatives_are_judged_as_the_alternatives() -> None:
    # Okta v1 -> v2: a JSON Web Key object became `allOf [Base]` + `oneOf [Rsa, EC]`: each
    # alternative a key with the old fields, pinned to one `kty`. Readers get old values only.
    jwk = {
        "type": "object",
        "properties": {
            "kid": {"type": "string"},
            "kty": {"type": "string"},
            "n": {"type": "string"},
        },
    }
    base = {"type": "object", "properties": {"kid": {"type": "string"}}}
    rsa = {
        "type": "object",
        "properties": {"kty": {"type": "string", "enum": ["RSA"]}, "n": {"type": "string"}},
    }
    ec = {
        "type": "object",
        "properties": {"kty": {"type": "string", "enum": ["EC"]}, "n": {"type": "string"}},
    }
    split = {"allOf": [ref("Base")], "oneOf": [ref("Rsa"), ref("Ec")]}
    components = {"Jwk": jwk, "Split": split, "Base": base, "Rsa": rsa, "Ec": ec}
    changes = found(
        document(ref("Jwk"), components=components), document(ref("Split"), components=components)
    )
    assert changes["response-body-rewritten-as-alternatives"] == "info"
    assert not any(v == "breaking" for k, v in changes.items() if k.startswith("response")), changes
