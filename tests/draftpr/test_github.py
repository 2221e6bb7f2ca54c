"""GitHub's side of draft pull requests: signed deliveries verified and installation events
marking links, the install flow, and a GitHub out of reach or answering what is not GitHub's
(502 naming the cause, never a 500, never a secret in the answer)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from controller.crypto import load_secret_box
from controller.draftpr import service as draftpr
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import (
    GitHubInstallation,
    Job,
)
from tests.conftest import OrgKey, make_settings
from tests.draftpr.conftest import (
    HOOK_SECRET,
    INSTALLATION,
    REPO,
    drifted,
    install,
    link,
    link_by_id,
    open_pr,
    signed,
)
from tests.github_fake import APP_ID, FakeGitHub, delivery
from tests.processes import free_port, wait_until
from tests.servers import SpecServer

# -- GitHub's side -------------------------------------------------------------------------


def test_deliveries_are_verified_and_installation_events_mark_links(
    live_app: Flask, controller: Controller, github: FakeGitHub, org: OrgKey, database: Database
) -> None:
    client = live_app.test_client()
    link(client, org)
    payload = delivery(github, "installation", "deleted", REPO, installation=INSTALLATION)
    forged = signed(payload, "installation", "d-9", secret="not-the-secret")
    assert client.post("/v1/draftpr/github/webhook", **forged).status_code == 401
    unsigned = client.post(
        "/v1/draftpr/github/webhook", json=payload, headers={"X-GitHub-Event": "installation"}
    )
    assert unsigned.status_code == 401
    with database.session() as session:
        assert session.scalars(select(Job).where(Job.kind == "github_delivery")).all() == []
    ping = client.post("/v1/draftpr/github/webhook", **signed({"zen": "hi"}, "ping", "d-8"))
    assert ping.status_code == 202 and ping.get_json()["queued"] == []
    bad = client.post(
        "/v1/draftpr/github/webhook", **signed({"action": "closed"}, "pull_request", "d-7")
    )
    assert bad.status_code == 400
    answer = client.post("/v1/draftpr/github/webhook", **signed(payload, "installation", "d-10"))
    assert answer.status_code == 202

    def marked() -> bool:
        with database.session() as session:
            return session.scalars(select(GitHubInstallation)).one().status == "deleted"

    wait_until(marked)


def test_the_install_flow_links_the_org_its_signed_state_names(
    live_app: Flask, live_settings: Settings, github: FakeGitHub, org: OrgKey, database: Database
) -> None:
    client = live_app.test_client()
    box = load_secret_box(live_settings)
    state = draftpr.sign_state(box, org.org_id, datetime.now(UTC))
    back = client.get(
        f"/api/account/draftpr/github/callback?installation_id={INSTALLATION}&setup_action=install&state={state}"
    )
    assert back.status_code == 200 and back.get_json()["installationId"] == INSTALLATION
    with database.session() as session:
        assert [
            (i.org_id, i.installation_id, i.account)
            for i in session.scalars(select(GitHubInstallation))
        ] == [(org.org_id, INSTALLATION, "acme")]
    expired = draftpr.sign_state(box, org.org_id, datetime.now(UTC) - timedelta(hours=2))
    forged = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
    for token in (expired, forged, "garbage"):
        refused = client.get(
            f"/api/account/draftpr/github/callback?installation_id=5&state={token}"
        )
        assert refused.status_code == 401, token
    unknown = client.post(
        "/v1/draftpr/installations", json={"installationId": 999}, headers=org.headers
    )
    assert unknown.status_code == 502 and "999" in unknown.get_json()["message"]


# -- GitHub out of reach (issue 40, point 8): 502 naming the cause, never a 500 --------------


def secrets_in(answer: Any, github: FakeGitHub) -> list[str]:
    """Whatever of the App's credentials an answer's text shows (the key, a JWT, a token)."""
    text = json.dumps(answer.get_json())
    key_lines = [line for line in github.private_pem.splitlines() if "-----" not in line]
    found = [line for line in key_lines if line in text]
    return found + [word for word in ("eyJ", "ghs_", "BEGIN", "Bearer") if word in text]


@pytest.mark.parametrize("reach", ["closed-port", "address-refused"])
def test_a_github_that_cannot_be_reached_is_502_on_every_request_path(
    tmp_path: Path,
    database: Database,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    reach: str,
) -> None:
    """Linking by id, the install callback and the drift webhook's pull request answer 502
    with the error envelope when GitHub refuses the connection (a closed port) or the address
    rules refuse GitHub (a loopback address without allow_private_targets); nothing is
    linked, nothing reaches GitHub, and no credential is in the message."""
    from web.app import create_app

    closed = reach == "closed-port"
    settings = make_settings(
        tmp_path,
        database_url=database.url,
        # Refused: every private address but the spec server's, which checks must reach.
        allow_private_targets=closed,
        private_target_allowlist=[f"127.0.0.1:{server.port}"],
        github_webhook_secret=HOOK_SECRET,
        github_app_id=APP_ID,
        github_app_private_key=github.private_pem,
        github_api_url=f"http://127.0.0.1:{free_port()}" if closed else github.url,
    )
    code, words = (
        ("github_unreachable", "GitHub cannot be reached")
        if closed
        else ("github_address_refused", "DRIFTGATE_ALLOW_PRIVATE_TARGETS")
    )
    client = create_app(settings, database=database).test_client()
    for answer in (link_by_id(client, org, INSTALLATION), install(client, org)):
        assert answer.status_code == 502, answer.get_json()
        body = answer.get_json()
        assert (body["error"], sorted(body)) == (code, ["error", "message"]), body
        assert words in body["message"] and secrets_in(answer, github) == []
    with database.session() as session:
        assert session.scalars(select(GitHubInstallation)).all() == []
    # A link made while GitHub answered: the pull request's job meets the same GitHub.
    with database.transaction() as session:
        session.add(
            GitHubInstallation(
                org_id=org.org_id,
                installation_id=INSTALLATION,
                linked_by="install",
                account="acme",
                account_id=1000,
                repository_selection="selected",
                status="active",
            )
        )
    controller = Controller(
        settings, database, load_secret_box(settings), concurrency=2, tick_seconds=0.2
    )
    controller.start()
    try:
        watch_id, event_id = drifted(client, org, server)
        answer = open_pr(client, org, watch_id, event_id)
    finally:
        controller.stop(grace=5)
    assert answer.status_code == 502, answer.get_json()
    assert answer.get_json()["error"] == "github_error"
    assert words in answer.get_json()["message"] and secrets_in(answer, github) == []
    assert github.calls == []


def test_an_answer_that_is_not_githubs_is_502(
    tmp_path: Path, database: Database, github: FakeGitHub, org: OrgKey, server: SpecServer
) -> None:
    """A proxy's HTML page with status 200 where GitHub's installation belongs: 502 naming
    it, nothing linked (before: a 500 on `data.get`)."""
    from web.app import create_app

    server.set(
        f"/app/installations/{INSTALLATION}", "<html>sign in</html>", content_type="text/html"
    )
    settings = make_settings(
        tmp_path,
        database_url=database.url,
        allow_private_targets=True,
        github_app_id=APP_ID,
        github_app_private_key=github.private_pem,
        github_api_url=server.url(""),
    )
    client = create_app(settings, database=database).test_client()
    answer = link_by_id(client, org, INSTALLATION)
    assert answer.status_code == 502, answer.get_json()
    assert answer.get_json()["error"] == "github_malformed"
    assert "not what its API describes" in answer.get_json()["message"]
    with database.session() as session:
        assert session.scalars(select(GitHubInstallation)).all() == []
