"""The hosted product's anonymous routes (trial sessions, funnel events, the coverage preview)
on a self-hosted server: off by default, so that an anonymous request creates nothing (no
row in any table), each answering 404 `not_found` before anything of the request is read;
each family switched on by its own setting works as before, the others staying off; a trial
token minted while trials were on opens nothing once they are off. The real app, on the
test's migrated database (docs/operations.md, "Hosted-product routes")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.settings import load_settings
from controller.store.db import Database
from controller.store.models import Base
from tests.conftest import OrgKey, make_settings
from web.api import REGISTRY

# (setting, method and path, a valid body, the status it answers when on)
FAMILIES = {
    "trial_sessions_enabled": ("/api/trial/session", None, 201),
    "funnel_events_enabled": ("/api/funnel/events", {"event": "cli.install"}, 202),
    "coverage_preview_enabled": (
        "/api/coverage/preview",
        {"text": "https://mcp.example.com/mcp"},
        200,
    ),
}


def counts(database: Database) -> dict[str, int]:
    """The number of rows of every table of the store."""
    with database.session() as session:
        return {
            table.name: session.scalar(select(func.count()).select_from(table)) or 0
            for table in Base.metadata.sorted_tables
        }


def app_with(tmp_path: Path, database: Database, **values: Any) -> Flask:
    from web.app import create_app

    settings = make_settings(tmp_path, database_url=database.url, **values)
    return create_app(settings, database=database)


def test_an_anonymous_request_creates_nothing_on_a_default_server(
    client: FlaskClient, database: Database, acme: OrgKey
) -> None:
    before = counts(database)
    assert before["orgs"] == 1 and before["api_keys"] == 1  # acme, and nothing else
    for setting, (path, body, _) in FAMILIES.items():
        variable = f"DRIFTGATE_{setting.upper()}"
        # A valid body, a malformed one, none: the same 404, nothing read, no rate limit.
        for sent in (body, {"nonsense": True}, None):
            for _ in range(3):
                answer = client.post(path, json=sent)
                assert answer.status_code == 404, (path, answer.get_json())
                assert answer.get_json()["error"] == "not_found"
                assert variable in answer.get_json()["message"]
        bad_json = client.post(path, data=b"{", content_type="application/json")
        assert bad_json.status_code == 404
    many = [client.post("/api/trial/session").status_code for _ in range(30)]
    assert set(many) == {404}  # no bucket of the trial limit (10 at once) was touched
    # The trial header is not read: a request with only it has no credentials.
    refused = client.get("/api/watches", headers={"X-Service-Trial": "dgt_anything"})
    assert refused.status_code == 401 and refused.get_json()["error"] == "missing_credentials"
    assert "DRIFTGATE_TRIAL_SESSIONS_ENABLED" in refused.get_json()["message"]
    # What keys do is not affected: the coverage gate (with a key) still answers.
    gate = client.post(
        "/api/coverage/assert",
        json={"text": "https://mcp.example.com/mcp"},
        headers=acme.headers,
    )
    assert gate.status_code == 422 and gate.get_json()["error"] == "missing_watches"
    assert counts(database) == before


@pytest.mark.parametrize("setting", sorted(FAMILIES))
def test_each_family_is_switched_on_by_its_own_setting(
    tmp_path: Path, database: Database, setting: str
) -> None:
    client = app_with(tmp_path, database, **{setting: True}).test_client()
    before = counts(database)
    path, body, status = FAMILIES[setting]
    answer = client.post(path, json=body)
    assert answer.status_code == status, answer.get_json()
    for other, (other_path, other_body, _) in FAMILIES.items():
        if other != setting:
            assert client.post(other_path, json=other_body).status_code == 404
    grown = {name: n - before[name] for name, n in counts(database).items() if n != before[name]}
    expected: dict[str, dict[str, int]] = {
        "trial_sessions_enabled": {"orgs": 1, "trial_sessions": 1},
        "funnel_events_enabled": {"funnel_counters": 1},
        "coverage_preview_enabled": {},
    }
    assert grown == expected[setting]
    if setting == "trial_sessions_enabled":
        token = answer.get_json()["token"]
        me = client.get("/api/me", headers={"X-Service-Trial": token})
        assert me.status_code == 200 and me.get_json()["plan"] == "free"


def test_a_trial_minted_while_trials_were_on_opens_nothing_once_they_are_off(
    tmp_path: Path, database: Database
) -> None:
    on = app_with(tmp_path / "on", database, trial_sessions_enabled=True).test_client()
    token = on.post("/api/trial/session").get_json()["token"]
    assert on.get("/api/watches", headers={"X-Service-Trial": token}).status_code == 200
    off = app_with(tmp_path / "off", database).test_client()
    for headers in ({"X-Service-Trial": token}, {"X-DriftGuard-Trial": token}):
        assert off.get("/api/watches", headers=headers).status_code == 401
        assert off.post("/api/validate", json={"payload": {}}, headers=headers).status_code == 401


def test_the_routes_stay_published_with_their_switch_and_404() -> None:
    document = REGISTRY.openapi(load_settings(env={}))
    for setting, (path, _, status) in FAMILIES.items():
        operation = document["paths"][path]["post"]
        assert {str(status), "404"} <= set(operation["responses"])
        assert f"`DRIFTGATE_{setting.upper()}=true`; off by default" in operation["description"]


def test_a_switch_names_a_setting_that_exists() -> None:
    from web.routes import HostedSwitch

    with pytest.raises(ValueError, match="no such setting"):
        HostedSwitch("trials_on", "trial sessions")


def test_the_console_serves_no_trial_or_funnel_page(app: Flask) -> None:
    # The only routes of these families are the API's three, which the switches hold.
    rules = [str(rule) for rule in app.url_map.iter_rules()]
    hosted = [r for r in rules if any(w in r for w in ("trial", "funnel", "preview"))]
    assert sorted(hosted) == ["/api/coverage/preview", "/api/funnel/events", "/api/trial/session"]
