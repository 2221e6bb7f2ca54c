"""Factories the tests share: rows and states made through the API or the store, as a test
module needs them (test modules never import each other)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from controller.accounts import service as accounts
from controller.crypto import load_secret_box
from controller.gitsources.reconcile import Reconciler, RunResult
from controller.model.principal import Principal
from controller.model.watch import WatchCreate
from controller.orgs.service import get_org
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import Incident, Watch
from controller.store.types import utcnow
from controller.watches import service as watch_service
from tests.conftest import OrgKey, make_settings


def make_watch(client: FlaskClient, who: OrgKey, name: str) -> str:
    response = client.post(
        "/api/watches",
        json={"name": name, "url": f"https://{name}.example.com/openapi.json"},
        headers=who.headers,
    )
    assert response.status_code == 201
    return str(response.get_json()["id"])


def make_watches(
    database: Database, org: OrgKey, tmp_path: Path, urls: list[str], **fields: Any
) -> list[str]:
    """OpenAPI watches on `urls` made in the store (no app), named by their URL (unique in the
    org, so a test may make more later); `fields` are more of `WatchCreate`'s."""
    box = load_secret_box(make_settings(tmp_path, database_url=database.url))
    principal = Principal(org.org_id, org.org_name, "pro", frozenset(), "api_key", org.key_id)
    with database.transaction() as session:
        return [
            watch_service.create_watch(
                session,
                principal,
                WatchCreate.model_validate(
                    {
                        "name": url.split("//")[1].replace("/", "-"),
                        "url": url,
                        "watchType": "openapi",
                        **fields,
                    }
                ),
                box,
            ).id
            for url in urls
        ]


def set_state(
    database: Database,
    watch_id: str,
    status: str,
    *,
    failure: str | None = None,
    incident: str | None = None,
) -> str | None:
    """Put a watch in a state as the checks would leave it (status, last check, incident)."""
    with database.transaction() as session:
        watch = session.get_one(Watch, watch_id)
        watch.drift_status = status
        watch.failure_class = failure
        watch.last_checked_at = datetime.now(UTC)
        if incident is None:
            return None
        row = Incident(org_id=watch.org_id, watch_id=watch.id, status=incident, breaking_count=2)
        session.add(row)
        session.flush()
        watch.incident_id = row.id
        watch.open_breaking = 2
        return row.id


# The console's people: a user with a password, signed in through the form with its CSRF token.

PASSWORD = "correct horse battery staple"


def make_user(database: Database, org: str, email: str, role: str = "admin") -> str:
    """A user with a password set through its one-time link's service."""
    with database.transaction() as session:
        _user, token = accounts.create_user(
            session, get_org(session, org), email, role, actor="test", now=utcnow()
        )
        accounts.set_password(session, token, PASSWORD, utcnow())
    return email


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def sign_in(client: FlaskClient, email: str, password: str = PASSWORD) -> FlaskClient:
    form = client.get("/console/sign-in").get_data(as_text=True)
    answer = client.post(
        "/console/sign-in",
        data={"email": email, "password": password, "csrf_token": csrf_of(form)},
    )
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return client


# A fleet repository for reconcile tests: three .driftgate/ files, the env they read.

AGENTS = """\
version: 1
policies:
  careful:
    on_breaking: [block_new_runs]
    require_ack_to_unblock: true
agents:
  - id: billing-agent
    environment: production
    policy: production-guard
    watches:
      - stripe-api
      - github-mcp
    repoRef: acme/billing@main
    vendoredPaths:
      stripe-api: contracts/stripe.json
  - id: triage-bot
    environment: staging
    policy: careful
    watches:
      - github-mcp
"""

TEMPLATES = """\
version: 1
templates:
  - name: stripe
    watchType: openapi
    urlPattern: http://127.0.0.1:9/specs/stripe.json
    tags: [vendor:stripe]
"""

WATCH_SETS = """\
version: 1
watchSets:
  - name: production
    environment: production
    watches:
      - name: stripe-api
        template: stripe
        tags: [env:prod]
      - name: github-mcp
        url: http://127.0.0.1:9/mcp
        watchType: mcp
        headers:
          Authorization: ${env:GITHUB_TOKEN}
"""

FILES = {
    ".driftgate/agents.yaml": AGENTS,
    ".driftgate/templates.yaml": TEMPLATES,
    ".driftgate/watch-sets.yaml": WATCH_SETS,
}
ENV = {"GITHUB_TOKEN": "Bearer ghp_secret_value_123"}


Make = Callable[..., tuple[Reconciler, Settings]]


def run(reconciler: Reconciler, settings: Settings, name: str = "fleet", **kw: Any) -> RunResult:
    spec = settings.source(name)
    assert spec is not None
    return reconciler.reconcile(spec, **kw)
