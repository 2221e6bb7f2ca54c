"""The OpenAPI document: valid 3.1, lists every registered route, and the server honours it."""

from __future__ import annotations

import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from schemathesis.config import SchemathesisConfig

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
    # Every Flask rule of the app (but the static handler) comes from the registry.
    flask_rules = {
        (method, rule.rule.replace("<", "{").replace(">", "}"))
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static"
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    assert flask_rules == registered


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


# A schema-valid body may still be refused for semantic reasons with 422 (for example a
# watch URL whose type cannot be inferred); everything else schema-valid must be accepted.
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {
                "expected-statuses": ["2XX", "401", "403", "404", "409", "422", "429"]
            }
        }
    }
)


def test_server_honours_its_document(app: Flask, acme: OrgKey) -> None:
    """Schemathesis generates requests for every operation (bounded) and checks each answer:
    no 5xx, a documented status, a body and headers that match the document."""
    api = schemathesis.openapi.from_wsgi("/openapi.json", app, config=CONFIG)
    headers = {"Authorization": f"Bearer {acme.key}"}
    operations = [result.ok() for result in api.get_all_operations()]
    # Schemathesis leaves out the document's own route; every other route is exercised.
    expected = {f"{r.method} {r.openapi_path}" for r in REGISTRY.routes} - {"GET /openapi.json"}
    assert {operation.label for operation in operations} == expected
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def exercise(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=headers)

        exercise()
