"""The OpenAPI document: valid 3.1, lists every registered route, and says its constraints in
JSON Schema's words. That the server honours it is tests/web/test_schemathesis.py's job."""

from __future__ import annotations

import re

import jsonschema_rs
import pytest
from flask import Flask
from flask.testing import FlaskClient
from openapi_spec_validator import validate
from pydantic import BaseModel

from controller.model.jsonvalue import json_value_problem
from tests.conftest import OrgKey
from web.api import REGISTRY
from web.routes import Call, Registry, Reply


def test_document_is_valid_openapi_310(client: FlaskClient) -> None:
    document = client.get("/openapi.json").json
    assert document["openapi"] == "3.1.0"
    assert document["info"]["version"] == "0.6.0"
    validate(document)


def test_document_lists_every_registered_route(app: Flask, client: FlaskClient) -> None:
    document = client.get("/openapi.json").json
    documented = {
        (method.upper(), path) for path, item in document["paths"].items() for method in item
    }
    registered = {(route.method, route.openapi_path) for route in REGISTRY.routes}
    assert documented == registered
    # Every Flask rule of the app comes from the registry, but the static handler and the
    # console's pages (for people, under /console, and the redirects of / and of the icon
    # browsers ask for at /favicon.ico to the console's).
    flask_rules = {
        (method, re.sub(r"<(?:[^<>]*:)?([^<>:]+)>", r"{\1}", rule.rule))  # converters dropped
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static"
        and not rule.endpoint.startswith("console.")
        and rule.rule not in ("/", "/favicon.ico")
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    assert flask_rules == registered
    assert all(not path.startswith("/console") for _method, path in registered)


def test_every_operation_documents_its_errors(client: FlaskClient) -> None:
    document = client.get("/openapi.json").json
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert "500" in responses, (method, path)
            if operation["security"]:
                assert "401" in responses, (method, path)
            if "{" in path:
                assert "404" in responses, (method, path)
            if "requestBody" in operation:
                assert "400" in responses, (method, path)
            # What the server answers on any route before a handler runs (a body, request
            # line or header section over its limit), each with the envelope.
            for status in ("413", "414", "431"):
                schema = responses[status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}, (method, path)


# pydantic's names of constraints: in the document they mean nothing to a client (JSON Schema
# says `minimum`, `maxLength` ...). One appears when a constraint is written after a validator
# in `Annotated[...]` (see `controller.model.base.JsonNumber`).
PYDANTIC_ONLY = {"ge", "gt", "le", "lt", "min_length", "max_length", "multiple_of", "strict"}


def test_constraints_are_published_as_json_schema(client: FlaskClient) -> None:
    document = client.get("/openapi.json").json
    leaked: list[str] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in PYDANTIC_ONLY and not path.endswith("/properties"):
                    leaked.append(f"{path}/{key}")
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}/{index}")

    walk(document, "")
    assert leaked == []


def test_a_body_of_optional_fields_is_documented_as_optional(client: FlaskClient) -> None:
    # An empty body reads as {}: the document says a body is required only when {} is refused.
    paths = client.get("/openapi.json").json["paths"]
    assert paths["/api/agents/{agent_id}/ack"]["post"]["requestBody"]["required"] is False
    assert paths["/api/watches"]["post"]["requestBody"]["required"] is True


def test_a_fixed_path_segment_is_never_read_as_an_id(client: FlaskClient, acme: OrgKey) -> None:
    answer = client.get("/api/watches/from-template", headers=acme.headers)
    assert answer.status_code == 405
    assert set(answer.headers["Allow"].split(", ")) - {"OPTIONS"} == {"POST"}
    assert answer.get_json()["error"] == "method_not_allowed"
    nested = client.post("/api/watches/from-template/pause", headers=acme.headers)
    assert nested.status_code == 404
    assert client.get("/api/watches/from-templates", headers=acme.headers).status_code == 404


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ({"a": [1, 2.5, True, None, "x"]}, True),
        ([[[[[[{"deep": "fine"}]]]]]], True),
        ([[[[[[{"\u00f5\u0000": False}]]]]]], False),  # a NUL key below any fixed depth
        ({"k": [[[[[["a\u0000"]]]]]]}, False),
    ],
)
def test_a_free_form_value_is_published_as_it_is_checked(
    client: FlaskClient, value: object, stored: bool
) -> None:
    # A watch's request `body` holds any JSON the stores can keep; the document says which at
    # every depth, so a value the schema accepts is never refused by the input check.
    document = client.get("/openapi.json").json
    body = document["components"]["schemas"]["WatchCreate"]["properties"]["body"]
    validator = jsonschema_rs.validator_for({**body, "components": document["components"]})
    assert validator.is_valid(value) is stored
    assert (json_value_problem(value) is None) is stored


# Request text that may hold NUL because nothing keeps it or looks it up: it is read, and
# dropped (what a service makes of it, such as a watch from a pasted URL, is checked then).
NEVER_STORED = {
    "ValidateIn.payload": "the payload to check",
    "RepoFile.content": "a repository file's text, scanned",
    "CoverageIn.text": "pasted text, scanned for URLs",
    "CoverageIn.mcpJson": "a pasted configuration, parsed",
    "CoverageIn.config": "a pasted configuration, parsed",
    "SuggestIn.text": "pasted text, scanned for URLs",
    "SuggestIn.mcpJson": "a pasted configuration, parsed",
    "SuggestIn.config": "a pasted configuration, parsed",
    "ChangeIn": "POST /api/drift/explain only words what it is sent",
    "LocationIn": "POST /api/drift/explain only words what it is sent",
    "CallbackQuery.state": "a signed state, verified",
    "CallbackQuery.setup_action": "compared with GitHub's words",
}
KNOWN_FINDINGS: set[str] = set()


def _matches_nul(pattern: str) -> bool:
    """Whether some text holding NUL can match `pattern`: whether any character class or
    literal it consumes admits NUL (read from Python's own parse of the pattern)."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    widening = {c.CATEGORY_NOT_SPACE, c.CATEGORY_NOT_DIGIT, c.CATEGORY_NOT_WORD}

    def admits(items: object) -> bool:
        for op, arg in items:  # type: ignore[attr-defined]
            if op is c.ANY or (op is c.LITERAL and arg == 0) or (op is c.NOT_LITERAL and arg):
                return True
            if op is c.IN:
                negated = any(o is c.NEGATE for o, _ in arg)
                hit = any(
                    (o is c.LITERAL and a == 0)
                    or (o is c.RANGE and a[0] == 0)
                    or (o is c.CATEGORY and a in widening)
                    for o, a in arg
                )
                if hit != negated:
                    return True
            if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and admits(arg[2]):
                return True
            if op is c.SUBPATTERN and admits(arg[3]):
                return True
            if op is c.BRANCH and any(admits(branch) for branch in arg[1]):
                return True
        return False

    return admits(_parser.parse(pattern))


def test_the_walk_reads_patterns() -> None:
    refusing = [r"^[^\x00-\x1f\x7f]*$", r"^[^\u0000]*$", r"^[A-Za-z0-9._:-]{1,64}$", r"^a(b|c)$"]
    admitting = [r"^https?://\S+$", r"^.*$", r"^[^\n]*$", r"^(a|[\x00-\x09])+$"]
    assert [_matches_nul(p) for p in refusing + admitting] == [False] * 4 + [True] * 4


def test_request_text_that_is_kept_refuses_nul(client: FlaskClient) -> None:
    # Postgres text and jsonb cannot hold NUL; SQLite can: text the API stores or looks up
    # must refuse it, and say so in the published schema (issue 31, point 6).
    document = client.get("/openapi.json").json
    schemas = document["components"]["schemas"]
    found: set[str] = set()

    def walk(node: object, where: str) -> None:
        if not isinstance(node, dict) or where.split(".")[0] in NEVER_STORED:
            return
        if where in NEVER_STORED:
            return
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                walk(schemas[name], name)
            return
        kinds = node.get("type")
        if "string" in (kinds if isinstance(kinds, list) else [kinds]):
            bounded = "enum" in node or "const" in node or node.get("format") == "date-time"
            if not bounded and ("pattern" not in node or _matches_nul(node["pattern"])):
                found.add(where)
        if node == {} or set(node) <= {"title", "description", "default", "examples"}:
            found.add(where)  # any JSON at all
        for key, value in (node.get("properties") or {}).items():
            walk(value, f"{where}.{key}")
        for key in ("items", "additionalProperties"):
            walk(node.get(key), f"{where}[]")
        if "propertyNames" in node:
            walk({"type": "string", **node["propertyNames"]}, f"{where}{{key}}")
        for key, value in (node.get("patternProperties") or {}).items():
            walk({"type": "string", "pattern": key}, f"{where}{{key}}")
            walk(value, f"{where}[]")
        if "properties" not in node:  # at an object, a composition only asks for its members
            for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
                for option in node.get(key) or []:
                    walk(option, where)

    seen: set[str] = set()
    inputs = {m.__name__ for r in REGISTRY.routes for m in (r.body, r.query) if m is not None}
    for name in sorted(inputs):
        seen.add(name)
        walk(schemas[name], name)
    assert len(inputs) > 40  # the walk sees the registry
    assert sorted(found) == sorted(KNOWN_FINDINGS)


class _Thing(BaseModel):
    name: str


def test_a_route_declares_its_answer_by_its_handler() -> None:
    """A module's routes: its tag unless one names another, the model the handler is annotated
    to return with 200 (or the status given), 204 for a handler without one."""
    registry = Registry()
    route = registry.tagged("things")

    @route("GET /api/things/<thing_id>", "Read a thing")
    def get_thing(call: Call) -> _Thing:
        return _Thing(name="x")

    @route("POST /api/things", "Create a thing", status=201, tag="other")
    def create_thing(call: Call) -> _Thing:
        return _Thing(name="x")

    @route("DELETE /api/things/<thing_id>", "Delete a thing")
    def delete_thing(call: Call) -> Reply:
        return Reply(204)

    declared = {(r.method, r.rule): (r.tag, r.responses) for r in registry.routes}
    assert declared == {
        ("GET", "/api/things/<thing_id>"): ("things", {200: _Thing}),
        ("POST", "/api/things"): ("other", {201: _Thing}),
        ("DELETE", "/api/things/<thing_id>"): ("things", {204: None}),
    }
    with pytest.raises(ValueError, match="METHOD /rule"):
        route("/api/things", "No method")
    with pytest.raises(ValueError, match="not both"):
        route("GET /api/things", "Both", out=_Thing, responses={200: _Thing})
