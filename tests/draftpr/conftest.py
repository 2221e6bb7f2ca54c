"""Fixtures and helpers of the draft pull request tests: a loopback GitHub that checks the App's
JWTs and tokens and validates every request and answer against GitHub's REST description
(tests/github_fake.py), the App's settings, an org with the product, a watch drifted through
the API, the drift webhook's body, GitHub's signed deliveries, and installation links."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from controller.agents import service as agent_service
from controller.draftpr import service as draftpr
from controller.model.principal import Principal
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import (
    Org,
    Watch,
)
from tests.conftest import OrgKey, make_settings
from tests.github_fake import APP_ID, FakeGitHub
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

HOOK_SECRET = "whsec-driftgate-test"
INSTALLATION = 77
REPO = "acme/payments-client"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_repository(REPO)
    fake.add_repository("acme/no-drafts", allow_drafts=False)
    fake.add_repository("acme/elsewhere")  # not selected for the installation
    fake.add_installation(INSTALLATION, "acme", REPO, "acme/no-drafts")
    fake.start()
    yield fake
    fake.stop()
    assert fake.problems == []


def app_settings(tmp_path: Path, database: Database, github: FakeGitHub | None) -> Settings:
    extra: dict[str, Any] = {"github_webhook_secret": HOOK_SECRET}
    if github is not None:
        extra |= {
            "github_app_id": APP_ID,
            "github_app_private_key": github.private_pem,
            "github_api_url": github.url,
            "github_app_slug": "driftgate-test",
        }
    return make_settings(tmp_path, database_url=database.url, allow_private_targets=True, **extra)


@pytest.fixture
def live_settings(tmp_path: Path, database: Database, github: FakeGitHub) -> Settings:
    """conftest's settings for a live app and controller, with the fake GitHub's App."""
    return app_settings(tmp_path, database, github)


@pytest.fixture
def org(make_org: Callable[..., OrgKey]) -> OrgKey:
    return make_org("acme", "pro", products=("draftpr_repo",))


def baselined(client: FlaskClient, who: OrgKey, server: SpecServer) -> str:
    """A watch of the charges spec, checked once (its baseline)."""
    url = server.set("/openapi.json", as_json(charges_spec()))
    created = client.post(
        "/api/watches", json={"name": "payments", "url": url}, headers=who.headers
    )
    assert created.status_code == 201, created.get_json()
    watch_id: str = created.get_json()["id"]
    first = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers)
    assert first.status_code == 200, first.get_json()
    return watch_id


def drift(client: FlaskClient, who: OrgKey, server: SpecServer, watch_id: str) -> str:
    """The second spec drops an endpoint (breaking): the drift event's id."""
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    second = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers)
    assert second.get_json()["watch"]["driftStatus"] == "drifted", second.get_json()
    events = client.get(f"/api/drift?watchId={watch_id}", headers=who.headers).get_json()
    event_id: str = events["events"][0]["id"]
    return event_id


def drifted(client: FlaskClient, who: OrgKey, server: SpecServer) -> tuple[str, str]:
    """A watch checked twice: the second spec drops an endpoint (breaking). (watch, event)"""
    watch_id = baselined(client, who, server)
    return watch_id, drift(client, who, server, watch_id)


def webhook_body(watch_id: str, event_id: str, repo: str = REPO, **extra: Any) -> dict[str, Any]:
    return {
        "watchId": watch_id,
        "driftEventId": event_id,
        "repoFullName": repo,
        "changes": [
            {
                "path": "/paths/~1v1~1refunds/get",
                "severity": "breaking",
                "message": "endpoint GET /v1/refunds removed",
                "rule": "endpoint-removed",
            },
            {"path": "/info", "severity": "info", "summary": "description changed"},
        ],
        **extra,
    }


def signed(
    payload: dict[str, Any], event: str, delivery_id: str, secret: str = HOOK_SECRET
) -> dict[str, Any]:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "data": body,
        "headers": {
            "X-Hub-Signature-256": signature,
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id,
            "Content-Type": "application/json",
        },
    }


def bind_agent(database: Database, who: OrgKey, watch_id: str) -> str:
    """An agent under `production-guard` (kill_in_flight) bound to the watch before it drifts."""
    with database.transaction() as session:
        org = session.get_one(Org, who.org_id)
        principal = Principal(
            org.id, org.name, org.plan, frozenset(org.products), "api_key", who.key_id
        )
        watch = session.get_one(Watch, watch_id)
        agent = agent_service.bind(
            session, principal, "billing-bot", watch, policy="production-guard"
        )
        return agent.id


def open_pr(
    client: FlaskClient, who: OrgKey, watch_id: str, event_id: str, repo: str = REPO
) -> Any:
    """The drift webhook's answer for `event_id` in `repo`."""
    return client.post(
        "/v1/draftpr/webhook", json=webhook_body(watch_id, event_id, repo), headers=who.headers
    )


def install(client: FlaskClient, who: OrgKey, installation: int = INSTALLATION) -> Any:
    """GitHub's install flow coming back for `who`: the callback with a state signed for
    the org (what the org's install link carries)."""
    assert isinstance(client.application, Flask)
    box = client.application.extensions["driftgate.secret_box"]
    state = draftpr.sign_state(box, who.org_id, datetime.now(UTC))
    return client.get(
        "/api/account/draftpr/github/callback"
        f"?installation_id={installation}&setup_action=install&state={state}"
    )


def link(client: FlaskClient, who: OrgKey, installation: int = INSTALLATION) -> dict[str, Any]:
    """The installation linked to `who` through the install flow."""
    answer = install(client, who, installation)
    assert answer.status_code == 200, answer.get_json()
    linked: dict[str, Any] = answer.get_json()
    return linked


def link_by_id(client: FlaskClient, who: OrgKey, installation: Any) -> Any:
    return client.post(
        "/v1/draftpr/installations", json={"installationId": installation}, headers=who.headers
    )
