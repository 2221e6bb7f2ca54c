"""The API's description is committed (docs/openapi.json): what `/openapi.json` serves is
byte for byte the committed copy, so a change to the API is a visible diff and a refactoring
shows that it changed nothing. `make generate` rewrites the copy."""

from __future__ import annotations

import json

from flask.testing import FlaskClient

from tests.gen_openapi_doc import OPENAPI_DOC, document, render


def test_the_served_description_is_the_committed_one() -> None:
    assert render(document()) == OPENAPI_DOC.read_text(encoding="utf-8"), (
        "the API's description changed: run `make generate` and review docs/openapi.json"
    )


def test_the_route_serves_that_description(client: FlaskClient) -> None:
    served = client.get("/openapi.json").get_json()
    # The suite's app has no public base URL either, so only the servers could differ.
    assert json.loads(OPENAPI_DOC.read_text(encoding="utf-8")) == served
