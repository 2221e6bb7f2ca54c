"""The OpenAPI document: valid 3.1, lists every registered route, and says its constraints in
JSON Schema's words. That the server honours it is tests/web/test_schemathesis.py's job."""

from __future__ import annotations

import re

import jsonschema_rs
import pytest
from flask import Flask
from flask.testing import FlaskClient
from openapi_spec_validator import validate

from controller.model.jsonvalue import json_value_problem
from tests.conftest import OrgKey
from web.api import REGISTRY


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
    # console's pages (for people, under /console, and the redirect of / to it).
    flask_rules = {
        (method, re.sub(r"<(?:[^<>]*:)?([^<>:]+)>", r"{\1}", rule.rule))  # converters dropped
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static"
        and not rule.endpoint.startswith("console.")
        and rule.rule != "/"
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
                assert {"400", "413"} <= set(responses), (method, path)


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
