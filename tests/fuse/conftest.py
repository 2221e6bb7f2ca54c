"""Helpers of the fleet guard's tests through the API: calls that assert their status, a preflight
decision to link a trip to, a watch, and a trip as an agent's fuse reports it."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.conftest import OrgKey

TRIP = {
    "tripId": "run-42:step-7",
    "reason": "budget_exceeded",
    "tool": "search",
    "agentId": "billing-bot",
    "metadata": {"spentUsd": 12.5, "limitUsd": 10, "steps": ["plan", "search"]},
    "occurredAt": "2026-01-02T03:04:05+02:00",
}


def post(client: FlaskClient, who: OrgKey, path: str, body: Any, status: int = 201) -> Any:
    response = client.post(path, json=body, headers=who.headers)
    assert response.status_code == status, response.get_json()
    return response.get_json()


def get(client: FlaskClient, who: OrgKey, path: str, status: int = 200) -> Any:
    response = client.get(path, headers=who.headers)
    assert response.status_code == status, response.get_json()
    return response.get_json()


def decision(client: FlaskClient, who: OrgKey, **body: Any) -> str:
    answer = client.post("/api/preflight", json=body, headers=who.headers)
    assert answer.status_code == 200, answer.get_json()
    decision_id: str = answer.get_json()["decisionId"]
    return decision_id


def make_watch(client: FlaskClient, who: OrgKey, url: str, name: str = "payments") -> str:
    watch_id: str = post(client, who, "/api/watches", {"name": name, "url": url})["id"]
    return watch_id
