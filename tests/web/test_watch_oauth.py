"""The `oauth` field of MCP watches through the API: secrets write-only and encrypted, shown
redacted; a malformed `oauth` is a 400 envelope, one the watch cannot use a 422."""

from __future__ import annotations

import json
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import AuditEntry, Watch
from tests.conftest import OrgKey

MCP_URL = "https://mcp.example.com/mcp"
SECRET = "client-secret-value-1234"
OAUTH = {"grant": "client_credentials", "clientId": "driftgate", "clientSecret": SECRET}


def create(client: FlaskClient, who: OrgKey, **body: Any) -> Any:
    payload = {"name": "tools", "url": MCP_URL, "watchType": "mcp", **body}
    return client.post("/api/watches", json=payload, headers=who.headers)


def test_oauth_is_stored_encrypted_and_shown_redacted(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    response = create(client, acme, oauth={**OAUTH, "scope": "mcp:read mcp:list"})
    assert response.status_code == 201, response.json
    assert response.json["oauth"] == {
        "grant": "client_credentials",
        "clientId": "driftgate",
        "clientSecret": "<redacted>",
        "refreshToken": None,
        "scope": "mcp:read mcp:list",
        "authorizationServer": None,
        "tokenExpiresAt": None,
    }
    watch_id = response.json["id"]
    for answer in (
        client.get(f"/api/watches/{watch_id}", headers=acme.headers),
        client.get("/api/watches", headers=acme.headers),
    ):
        assert SECRET not in answer.get_data(as_text=True)
    with database.session() as session:
        row = session.get(Watch, watch_id)
        assert row is not None and row.oauth_ciphertext is not None
        assert SECRET not in json.dumps(row.oauth) and SECRET not in row.oauth_ciphertext
        audited = session.scalars(select(AuditEntry.details)).all()
        assert SECRET not in json.dumps(audited, default=str)


def test_an_update_replaces_or_removes_oauth(client: FlaskClient, acme: OrgKey) -> None:
    watch_id = create(client, acme).json["id"]
    refresh = {"grant": "refresh_token", "clientId": "cli", "refreshToken": "rt-abcdefgh"}
    patched = client.patch(
        f"/api/watches/{watch_id}", json={"oauth": refresh}, headers=acme.headers
    )
    assert patched.status_code == 200, patched.json
    assert patched.json["oauth"]["refreshToken"] == "<redacted>"
    assert patched.json["oauth"]["clientSecret"] is None
    assert "rt-abcdefgh" not in patched.get_data(as_text=True)
    cleared = client.patch(f"/api/watches/{watch_id}", json={"oauth": None}, headers=acme.headers)
    assert cleared.status_code == 200 and cleared.json["oauth"] is None


def test_bad_oauth_is_a_400_envelope_without_the_secret(client: FlaskClient, acme: OrgKey) -> None:
    cases = [
        {"grant": "client_credentials", "clientId": "driftgate"},  # no secret
        {"grant": "refresh_token", "clientId": "driftgate", "clientSecret": SECRET},
        {"grant": "password", "clientId": "driftgate", "clientSecret": SECRET},
        {**OAUTH, "scope": 'bad"scope'},
        {**OAUTH, "authorizationServer": "ftp://issuer.example.com"},
    ]
    for oauth in cases:
        response = create(client, acme, oauth=oauth)
        assert response.status_code == 400, (oauth, response.json)
        assert response.json["error"] == "validation_error"
        assert SECRET not in response.get_data(as_text=True)


def test_oauth_only_on_remote_mcp_watches(client: FlaskClient, acme: OrgKey) -> None:
    openapi = create(
        client, acme, url="https://api.example.com/openapi.json", watchType="openapi", oauth=OAUTH
    )
    # Well-formed but unusable on this watch: 422, as a URL or header that cannot be sent.
    assert openapi.status_code == 422 and openapi.json["error"] == "validation_error"
    assert "only for watchType mcp" in json.dumps(openapi.json)
    both = create(client, acme, headers={"Authorization": "Bearer x"}, oauth=OAUTH)
    assert both.status_code == 422 and "conflicts with oauth" in json.dumps(both.json)
    assert SECRET not in json.dumps(both.json)
    watch_id = create(client, acme, oauth=OAUTH).json["id"]
    header = client.patch(
        f"/api/watches/{watch_id}",
        json={"headers": {"authorization": "Bearer x"}},
        headers=acme.headers,
    )
    assert header.status_code == 422
