"""Helpers of the console's tests (the people and their sign-in are in tests/factories.py)."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.factories import csrf_of


def post(client: FlaskClient, path: str, page: str = "/console/", **form: str) -> int:
    token = csrf_of(client.get(page).get_data(as_text=True))
    answer = client.post(path, data={"csrf_token": token, **form})
    return answer.status_code
