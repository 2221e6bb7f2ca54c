"""Draft pull requests end to end: a real store, a real controller, a real app, and a loopback
GitHub that checks the App's JWTs and tokens and validates every request and answer against
GitHub's published REST description (tests/github_fake.py).

The story: a watch drifts -> the drift webhook opens a draft pull request (branch, changelog,
vendored contract, one commit) -> the same event again does nothing new -> GitHub's signed
`pull_request` delivery says it was merged -> the contract is the new baseline, the incident
is resolved and the bound agent runs again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from controller.agents import service as agent_service
from controller.crypto import load_secret_box
from controller.draftpr import changelog
from controller.draftpr import service as draftpr
from controller.model.principal import Principal
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import (
    Agent,
    DraftPr,
    DriftEvent,
    GitHubInstallation,
    Incident,
    Job,
    Org,
    Watch,
)
from tests.conftest import OrgKey, make_settings
from tests.github_fake import APP_ID, FakeGitHub, delivery, merge
from tests.processes import free_port, wait_until
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
    first = client.post(f"/api/watches/{watch_id}/check?wait=30", headers=who.headers)
    assert first.status_code == 200, first.get_json()
    return watch_id


def drift(client: FlaskClient, who: OrgKey, server: SpecServer, watch_id: str) -> str:
    """The second spec drops an endpoint (breaking): the drift event's id."""
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    second = client.post(f"/api/watches/{watch_id}/check?wait=30", headers=who.headers)
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


# -- the whole story -----------------------------------------------------------------------


def test_drift_opens_a_draft_pull_request_and_its_merge_resolves_everything(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    database: Database,
) -> None:
    client = live_app.test_client()
    linked = link(client, org)
    assert linked["account"] == "acme" and linked["repositorySelection"] == "selected"
    listed = client.get("/v1/draftpr/installations", headers=org.headers).get_json()
    assert [i["installationId"] for i in listed["items"]] == [INSTALLATION]
    assert listed["installUrl"].startswith(
        f"{github.url}/apps/driftgate-test/installations/new?state="
    )

    watch_id = baselined(client, org, server)
    agent_id = bind_agent(database, org, watch_id)
    event_id = drift(client, org, server, watch_id)
    with database.session() as session:
        assert session.get_one(Agent, agent_id).runtime_state == "killed"

    body = webhook_body(watch_id, event_id, vendoredPath="contracts/payments.json")
    opened = client.post("/v1/draftpr/webhook", json=body, headers=org.headers)
    assert opened.status_code == 201, opened.get_json()
    pr = opened.get_json()
    assert pr["state"] == "draft" and pr["stub"] is False and pr["draftRefused"] is False
    assert pr["number"] == 1 and pr["url"] == f"https://github.example/{REPO}/pull/1"
    assert pr["branch"] == f"driftgate/drift/{event_id}"
    assert (pr["watchId"], pr["driftEventId"], pr["repoFullName"]) == (watch_id, event_id, REPO)

    repo = github.repositories[REPO]
    files = repo.files(pr["branch"])
    log = files[f".driftgate/changes/{event_id}.md"]
    assert "| breaking | endpoint-removed | `/paths/~1v1~1refunds/get` |" in log
    assert "`update_client_schema`" in log  # the agentAction of the rule
    # What a client sees fail leads the row (issue 41, point 5), in the file and the body.
    fails = "A request to `GET /v1/refunds` now fails: the operation no longer exists"
    assert fails in log and fails in repo.pulls[0]["body"]
    assert json.loads(files["contracts/payments.json"]) == charges_spec(refunds=False)
    assert files["README.md"] == f"# {REPO}\n"  # the default branch's tree is kept
    commit = repo.commits[repo.refs[pr["branch"]]]
    assert commit["parents"] == [repo.refs["main"]]  # one commit on the default branch
    assert repo.pulls[0]["draft"] is True and repo.pulls[0]["base"] == "main"

    # The same event again: the same record, nothing new on GitHub.
    calls = len(github.calls)
    again = client.post("/v1/draftpr/webhook", json=body, headers=org.headers)
    assert again.status_code == 200 and again.get_json()["draftPrId"] == pr["draftPrId"]
    assert len(github.calls) == calls and len(repo.pulls) == 1
    shown = client.get(f"/v1/draftpr/draft-prs/{pr['draftPrId']}", headers=org.headers).get_json()
    assert shown == again.get_json()
    assert [
        p["draftPrId"]
        for p in client.get("/v1/draftpr/draft-prs", headers=org.headers).get_json()["items"]
    ] == [pr["draftPrId"]]

    # Merged on GitHub: the signed delivery is queued (202) and handled by the controller.
    merge(github, REPO, 1)
    payload = delivery(github, "pull_request", "closed", REPO, number=1, installation=INSTALLATION)
    hooked = client.post("/v1/draftpr/github/webhook", **signed(payload, "pull_request", "d-1"))
    assert hooked.status_code == 202 and hooked.get_json() == {
        "queued": ["draftpr"],
        "duplicate": False,
    }

    def merged() -> bool:
        return (
            client.get(f"/v1/draftpr/draft-prs/{pr['draftPrId']}", headers=org.headers).get_json()[
                "state"
            ]
            == "merged"
        )

    wait_until(merged, timeout=15)
    with database.session() as session:
        watch = session.get_one(Watch, watch_id)
        event = session.get_one(DriftEvent, event_id)
        assert watch.baseline_snapshot_id == event.snapshot_id
        assert watch.drift_status != "drifted"
        incidents = list(session.scalars(select(Incident).where(Incident.watch_id == watch_id)))
        assert incidents and all(i.status == "resolved" for i in incidents)
        assert session.get_one(Agent, agent_id).runtime_state == "running"
        assert session.get_one(Agent, agent_id).runtime_reason == "unblocked"
    duplicate = client.post("/v1/draftpr/github/webhook", **signed(payload, "pull_request", "d-1"))
    assert duplicate.status_code == 202 and duplicate.get_json()["duplicate"] is True


# -- refusals ------------------------------------------------------------------------------


def test_with_the_product_off_the_webhook_is_accepted_and_does_nothing(
    live_app: Flask, make_org: Callable[..., OrgKey], github: FakeGitHub
) -> None:
    client = live_app.test_client()
    plain = make_org("plain", "pro")
    answer = client.post("/v1/draftpr/webhook", json=webhook_body("w", "e"), headers=plain.headers)
    assert answer.status_code == 202
    assert answer.get_json() == {
        "error": "schemasync_disabled",
        "message": "the draftpr_repo product is not enabled for this org",
        "code": "schemasync_disabled",
    }
    merged = client.post(
        "/v1/draftpr/draft-pr/merged", json={"draftPrId": "x"}, headers=plain.headers
    )
    assert (
        merged.status_code == 403 and merged.get_json()["error"] == "PRODUCT_REQUIRED: draftpr_repo"
    )
    linked = client.post(
        "/v1/draftpr/installations", json={"installationId": 1}, headers=plain.headers
    )
    assert linked.status_code == 403
    assert github.calls == []


def test_an_event_of_another_watch_or_org_is_not_found(
    live_app: Flask,
    controller: Controller,
    org: OrgKey,
    make_org: Callable[..., OrgKey],
    server: SpecServer,
) -> None:
    client = live_app.test_client()
    watch_id, event_id = drifted(client, org, server)
    other = client.post(
        "/api/watches",
        json={"name": "other", "url": server.url("/openapi.json")},
        headers=org.headers,
    ).get_json()["id"]
    for body, who in (
        (webhook_body(other, event_id), org),
        (webhook_body(watch_id, "no-such-event"), org),
        (webhook_body(watch_id, event_id), make_org("intruder", "pro", products=("draftpr_repo",))),
    ):
        answer = client.post("/v1/draftpr/webhook", json=body, headers=who.headers)
        assert answer.status_code == 404 and answer.get_json()["message"] == "Drift event not found"


def test_github_refusals_are_502_naming_the_cause(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    database: Database,
) -> None:
    client = live_app.test_client()
    link(client, org)
    watch_id, event_id = drifted(client, org, server)
    inaccessible = open_pr(client, org, watch_id, event_id, "acme/elsewhere")
    assert inaccessible.status_code == 502, inaccessible.get_json()
    assert "acme/elsewhere is not accessible" in inaccessible.get_json()["message"]
    # The installation may read the repository but not write to it.
    github.installations[INSTALLATION].read_only = True
    read_only = open_pr(client, org, watch_id, event_id, "acme/no-drafts")
    assert read_only.status_code == 502
    assert "contents and pull requests read and write" in read_only.get_json()["message"]
    github.installations[INSTALLATION].read_only = False
    # The App was uninstalled since it was linked.
    del github.installations[INSTALLATION]
    gone = open_pr(client, org, watch_id, event_id)
    assert gone.status_code == 502
    assert f"installation {INSTALLATION} is gone" in gone.get_json()["message"]
    with database.session() as session:
        states = {r.repo_full_name: r.state for r in session.scalars(select(DraftPr))}
    assert states == {"acme/elsewhere": "failed", "acme/no-drafts": "failed", REPO: "failed"}
    assert not any(t.startswith("ghs_") for t in json.dumps(gone.get_json()).split('"'))


def test_a_repository_that_refuses_drafts_gets_a_labelled_pull_request(
    live_app: Flask, controller: Controller, github: FakeGitHub, org: OrgKey, server: SpecServer
) -> None:
    client = live_app.test_client()
    link(client, org)
    watch_id, event_id = drifted(client, org, server)
    answer = open_pr(client, org, watch_id, event_id, "acme/no-drafts")
    assert answer.status_code == 201, answer.get_json()
    pr = answer.get_json()
    assert pr["state"] == "open" and pr["draftRefused"] is True
    repo = github.repositories["acme/no-drafts"]
    assert repo.pulls[0]["draft"] is False
    assert repo.labels[1] == [changelog.DRAFT_LABEL]


def test_a_rate_limit_queues_a_later_try(
    live_app: Flask,
    live_settings: Settings,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    database: Database,
) -> None:
    client = live_app.test_client()
    link(client, org)
    controller = Controller(
        live_settings, database, load_secret_box(live_settings), concurrency=1, tick_seconds=0.2
    )
    controller.start()
    try:
        watch_id, event_id = drifted(client, org, server)
        github.rate_limited = 1
        body = webhook_body(watch_id, event_id)
        # The first try meets the limit; the record stays pending with a later job queued.
        with database.transaction() as session:
            principal_org = session.get_one(Org, org.org_id)
            principal = Principal(
                org.org_id,
                principal_org.name,
                principal_org.plan,
                frozenset(principal_org.products),
                "api_key",
                org.key_id,
            )
            row, _ = draftpr.request_draft_pr(
                session,
                principal,
                draftpr.DraftPrWebhookIn.model_validate(body),
                live_settings,
                datetime.now(UTC),
            )
            row_id = row.id

        def retried() -> bool:
            with database.session() as session:
                later = session.scalars(
                    select(Job).where(Job.key == f"draft_pr:{row_id}", Job.period != "open")
                ).all()
                return bool(later)

        wait_until(retried, timeout=15)
        with database.session() as session:
            later = session.scalars(
                select(Job).where(Job.key == f"draft_pr:{row_id}", Job.period != "open")
            ).one()
            assert later.status == "queued"
            assert later.run_after > datetime.now(UTC) + timedelta(seconds=10)
            assert session.get_one(DraftPr, row_id).state == "pending"
        # When the wait is over, the later job opens it.
        with database.transaction() as session:
            session.execute(
                update(Job).where(Job.id == later.id).values(run_after=datetime.now(UTC))
            )
        wait_until(
            lambda: draftpr.wait_for_draft_pr(database, row_id, 0).state == "draft", timeout=15
        )
    finally:
        controller.stop(grace=5)


def test_without_app_credentials_pull_requests_are_stubs(
    tmp_path: Path, database: Database, org: OrgKey, server: SpecServer
) -> None:
    from web.app import create_app

    settings = app_settings(tmp_path, database, None)
    client = create_app(settings, database=database).test_client()
    controller = Controller(
        settings, database, load_secret_box(settings), concurrency=1, tick_seconds=0.2
    )
    controller.start()
    try:
        watch_id, event_id = drifted(client, org, server)
    finally:
        controller.stop(grace=5)
    answer = open_pr(client, org, watch_id, event_id)
    assert answer.status_code == 201, answer.get_json()
    pr = answer.get_json()
    assert pr["stub"] is True and pr["state"] == "draft"
    assert pr["number"] == changelog.stub_number(event_id, REPO)
    assert open_pr(client, org, watch_id, event_id).get_json()["number"] == pr["number"]
    # SPEC.md behaviour 2 with an installation id (SPEC.md types it as numeric text): no link
    # is needed, since nothing could verify one; the same event answers the same record.
    named = [
        client.post(
            "/v1/draftpr/webhook",
            json=webhook_body(watch_id, event_id, "acme/other", installationId=given),
            headers=org.headers,
        )
        for given in ("4242", 4242)
    ]
    assert [a.status_code for a in named] == [201, 200], [a.get_json() for a in named]
    first, second = (a.get_json() for a in named)
    assert first["stub"] is True and first["installationId"] == 4242
    assert first["number"] == changelog.stub_number(event_id, "acme/other")
    assert (second["draftPrId"], second["number"]) == (first["draftPrId"], first["number"])
    # A link made here is recorded unverified: nothing could confirm it.
    unverified = client.post(
        "/v1/draftpr/installations", json={"installationId": "4242"}, headers=org.headers
    )
    assert unverified.status_code == 201, unverified.get_json()
    assert (unverified.get_json()["linkedBy"], unverified.get_json()["account"]) == (
        "unverified",
        "",
    )
    merged = client.post(
        "/v1/draftpr/draft-pr/merged", json={"draftPrId": pr["draftPrId"]}, headers=org.headers
    )
    assert merged.status_code == 200, merged.get_json()
    assert (
        merged.get_json()["draftPr"]["state"] == "merged"
        and merged.get_json()["incidentResolved"] is True
    )


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

    wait_until(marked, timeout=15)


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


# -- overlay products ----------------------------------------------------------------------


def test_products_are_listed_and_toggled_by_the_org(
    client: FlaskClient, make_org: Callable[..., OrgKey], database: Database, tmp_path: Path
) -> None:
    paid = make_org("paid", "team")
    listed = client.get("/api/org/products", headers=paid.headers).get_json()
    assert listed == {
        "plan": "team",
        "canEnable": True,
        "products": [
            {"product": "replay_cloud", "enabled": False},
            {"product": "draftpr_repo", "enabled": False},
            {"product": "toolmanifest_org", "enabled": False},
        ],
    }
    on = client.put("/api/org/products/draftpr_repo", json={"enabled": True}, headers=paid.headers)
    assert on.status_code == 200
    assert [p["product"] for p in on.get_json()["products"] if p["enabled"]] == ["draftpr_repo"]
    # The key's cached products follow at once: the product-gated call is allowed now.
    assert (
        client.post(
            "/v1/draftpr/draft-pr/merged", json={"draftPrId": "nope"}, headers=paid.headers
        ).status_code
        == 404
    )
    free = make_org("freebie", "free")
    refused = client.put(
        "/api/org/products/replay_cloud", json={"enabled": True}, headers=free.headers
    )
    assert refused.status_code == 403 and "free plan" in refused.get_json()["message"]
    assert (
        client.put(
            "/api/org/products/nope", json={"enabled": True}, headers=paid.headers
        ).status_code
        == 404
    )
    assert (
        client.put(
            "/api/org/products/replay_cloud", json={"enabled": "yes"}, headers=paid.headers
        ).status_code
        == 400
    )


def test_state_tokens_and_stub_numbers_are_stable() -> None:
    assert changelog.stub_number("e1", "a/b") == changelog.stub_number("e1", "A/B")
    assert changelog.stub_number("e1", "a/b") != changelog.stub_number("e2", "a/b")
    assert 1000 <= changelog.stub_number(str(uuid.uuid4()), "x/y") < 100000
    lines = [
        changelog.ChangeLine("info", "/a|b", "x | y"),
        changelog.ChangeLine("breaking", "/z", "gone", "endpoint-removed"),
    ]
    text = changelog.render_changelog(
        watch_name="w", watch_url="https://v/x", event_id="e", changes=lines, link=None
    )
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| breaking | endpoint-removed |") and "\\|" in rows[1]


def test_a_pull_request_body_stays_under_githubs_limit() -> None:
    """250 changes of 500-character cells make a changelog file over 65,536 characters; the
    body keeps what fits and points at the file."""
    lines = [
        changelog.ChangeLine(
            "breaking", f"/p{i}/" + "x" * 500, "y" * 500, "endpoint-removed", "z" * 500
        )
        for i in range(250)
    ]
    parts = {"watch_name": "w", "watch_url": "https://v/x", "event_id": "e", "changes": lines}
    whole = changelog.render_changelog(**parts, link=None)  # type: ignore[arg-type]
    shown = changelog.render_changelog(
        **parts,
        link=None,
        max_chars=changelog.MAX_BODY_CHARS,  # type: ignore[arg-type]
    )
    assert len(whole) > 65_536 >= changelog.MAX_BODY_CHARS >= len(shown)
    kept = sum(line.startswith("| breaking |") for line in shown.splitlines())
    assert 0 < kept < 250
    assert f"…and {250 - kept} more of 250 changes: see `.driftgate/changes/e.md`." in shown
    assert shown.rstrip().endswith("unblocks the agents bound to the watch.")


# -- automatically, and with the tool-manifest lint ------------------------------------------


def test_a_draft_pr_policy_opens_the_pull_request_when_the_watch_drifts(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    database: Database,
) -> None:
    client = live_app.test_client()
    link(client, org)
    watch_id = baselined(client, org, server)
    agent_id = bind_agent(database, org, watch_id)
    with database.transaction() as session:
        agent = session.get_one(Agent, agent_id)
        agent.policy, agent.policy_rules = "dev-pr", {"on_breaking": ["notify", "draft_pr"]}
        agent.repo_ref = f"{REPO}@main"
        agent.vendored_paths = {"payments": "contracts/payments.json"}
    drifted = charges_spec(refunds=False, required=("id",))
    server.set("/openapi.json", as_json(drifted))
    client.post(f"/api/watches/{watch_id}/check?wait=30", headers=org.headers)

    def opened() -> bool:
        with database.session() as session:
            rows = session.scalars(select(DraftPr)).all()
            return len(rows) == 1 and rows[0].state == "draft"

    wait_until(opened, timeout=15)
    repo = github.repositories[REPO]
    assert len(repo.pulls) == 1 and repo.pulls[0]["base"] == "main"
    with database.session() as session:
        row = session.scalars(select(DraftPr)).one()
        assert row.request["agentId"] == "billing-bot" and row.repo_full_name == REPO
        files = repo.files(row.branch)
        listed = files[f".driftgate/changes/{row.drift_event_id}.md"]
        assert "endpoint-removed" in listed
        # A change to a shared schema is listed by its cause, at the schema.
        assert (
            "| `#/components/schemas/Charge/properties/amount` | "
            "Charge: property 'amount' became optional (1 operation) |" in listed
        )
        assert repo.pulls[0]["body"] == listed  # under GitHub's limit: all of it
        # The agent declared where the contract is vendored: updated in the same commit.
        assert json.loads(files["contracts/payments.json"]) == drifted
        assert session.get_one(Agent, agent_id).runtime_state == "running"  # not killed
    # The same event again (a second replica, a retry) finds the record.
    with database.transaction() as session:
        row = session.scalars(select(DraftPr)).one()
        watch = session.get_one(Watch, watch_id)
        event = session.get_one(DriftEvent, row.drift_event_id)
        again, created = draftpr.open_record(
            session, watch, event, REPO, INSTALLATION, {}, lint=False, now=datetime.now(UTC)
        )
        assert (again.id, created) == (row.id, False)
    # A merged pull request lets the same watch drift again into a new one later.
    assert (
        client.get("/v1/draftpr/draft-prs", headers=org.headers).get_json()["items"][0]["state"]
        == "draft"
    )
    # A flapping vendor (back, then breaking again within the flap window) reopens the
    # incident and keeps its pull request: none per flip.
    server.set("/openapi.json", as_json(charges_spec()))
    back = client.post(f"/api/watches/{watch_id}/check?wait=30", headers=org.headers)
    assert back.get_json()["watch"]["driftStatus"] == "ok"
    server.set("/openapi.json", as_json(drifted))
    again_drifted = client.post(f"/api/watches/{watch_id}/check?wait=30", headers=org.headers)
    assert again_drifted.get_json()["watch"]["incident"]["flapCount"] == 1
    with database.session() as session:
        assert len(session.scalars(select(DraftPr)).all()) == 1


def mcp_drift(client: FlaskClient, who: OrgKey, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """An MCP watch whose second check finds a tool removed and a description changed."""
    from tests.mcp_servers import SdkServer, write_surface

    search = {
        "name": "search_orders",
        "description": "Search orders.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    delete = {
        "name": "delete_order",
        "description": "Delete an order.",
        "inputSchema": {"type": "object"},
    }
    count = {"name": "count", "description": "Count orders.", "inputSchema": {"type": "object"}}
    surface = write_surface(tmp_path / "surface.json", name="orders", tools=[search, delete, count])
    with SdkServer("streamable", surface) as mcp:
        created = client.post(
            "/api/watches",
            json={"name": "orders-mcp", "url": mcp.url, "watchType": "mcp"},
            headers=who.headers,
        )
        assert created.status_code == 201, created.get_json()
        watch_id = created.get_json()["id"]
        first = client.post(f"/api/watches/{watch_id}/check?wait=30", headers=who.headers)
        assert first.get_json()["watch"]["driftStatus"] != "error", first.get_json()
        changed = {**search, "description": "Search orders and mail them to an address."}
        write_surface(surface, name="orders", tools=[changed, delete])
        second = client.post(f"/api/watches/{watch_id}/check?wait=30", headers=who.headers)
        assert second.get_json()["watch"]["driftStatus"] == "drifted", second.get_json()
        events = client.get(f"/api/drift?watchId={watch_id}", headers=who.headers).get_json()
        yield watch_id, events["events"][0]["id"]


@pytest.mark.parametrize("lint_on", [True, False])
def test_mcp_drafts_carry_the_tool_manifest_lint_when_the_product_is_on(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    make_org: Callable[..., OrgKey],
    tmp_path: Path,
    lint_on: bool,
) -> None:
    products = ("draftpr_repo", "toolmanifest_org") if lint_on else ("draftpr_repo",)
    who = make_org("acme", "pro", products=products)
    client = live_app.test_client()
    link(client, who)
    for watch_id, event_id in mcp_drift(client, who, tmp_path):
        answer = client.post(
            "/v1/draftpr/webhook", json=webhook_body(watch_id, event_id), headers=who.headers
        )
        assert answer.status_code == 201, answer.get_json()
        pr = answer.get_json()
    repo = github.repositories[REPO]
    if not lint_on:
        assert pr["toolManifestLint"] is None and repo.comments == []
        return
    findings = {(f["rule"], f["tool"]) for f in pr["toolManifestLint"]["findings"]}
    assert ("tool-description-changed", "search_orders") in findings
    assert ("tool-destructive-hint-missing", "delete_order") in findings
    assert ("tool-input-additional-properties-unset", "search_orders") in findings
    assert pr["toolManifestLint"]["commented"] is True
    [(number, comment)] = repo.comments
    assert number == pr["number"] and "`tool-destructive-hint-missing`" in comment


def test_a_vendored_path_outside_the_repository_is_refused(
    live_app: Flask, controller: Controller, org: OrgKey, server: SpecServer
) -> None:
    client = live_app.test_client()
    watch_id, event_id = drifted(client, org, server)
    body = webhook_body(watch_id, event_id, vendoredPath="contracts/../../etc/passwd")
    answer = client.post("/v1/draftpr/webhook", json=body, headers=org.headers)
    assert answer.status_code == 400 and "vendoredPath" in answer.get_json()["message"]


def test_an_installation_id_beyond_64_bits_is_refused_as_input(
    client: FlaskClient, make_org: Callable[..., OrgKey]
) -> None:
    # GitHub's ids are 64-bit; a larger number is malformed input (400), never a store error.
    # So is anything but a positive integer or its digits (at most 18, as the schema says).
    org = make_org("wide", "pro", products=("draftpr_repo",))
    for installation in (
        2**63,
        10**21,
        "1000000000000000000",
        "0042",
        "0",
        0,
        "42 ",
        "4.2",
        4.5,
        True,
        None,
        [42],
    ):
        for path, body in (
            ("/v1/draftpr/installations", {"installationId": installation}),
            (
                "/v1/draftpr/webhook",
                webhook_body("w", "e", installationId=installation),
            ),
        ):
            if path.endswith("webhook") and installation is None:
                continue  # optional there: null is the default
            answer = client.post(path, json=body, headers=org.headers)
            assert answer.status_code == 400, (path, installation, answer.get_json())
            assert "installationId" in answer.get_json()["message"], answer.get_json()
    state = client.get(
        "/api/account/draftpr/github/callback?installation_id=1234567890123456789&state=x"
    )
    assert state.status_code == 400


# -- ownership of installations (issue 31, point 1) -------------------------------------------


def test_another_orgs_installation_is_refused_everywhere(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    make_org: Callable[..., OrgKey],
    server: SpecServer,
    database: Database,
) -> None:
    """The first org installed the App (installation 77 on its repositories). A second org
    that knows the id can neither link it (by id or through the install flow), nor open a
    pull request through it (the drift webhook, the `draft_pr` policy), nor have GitHub's
    deliveries for it touch its records: GitHub sees no write on the second org's behalf."""
    client = live_app.test_client()
    assert link(client, org)["linkedBy"] == "install"
    intruder = make_org("intruder", "pro", products=("draftpr_repo",))
    for given in (INSTALLATION, str(INSTALLATION)):
        refused = link_by_id(client, intruder, given)
        assert refused.status_code == 409, refused.get_json()
        assert refused.get_json()["error"] == "installation_linked_elsewhere"
    callback = install(client, intruder)
    assert callback.status_code == 409, callback.get_json()
    assert callback.get_json()["error"] == "installation_linked_elsewhere"
    listed = client.get("/v1/draftpr/installations", headers=intruder.headers).get_json()
    assert listed["items"] == []

    watch_id, event_id = drifted(client, intruder, server)
    named = client.post(
        "/v1/draftpr/webhook",
        json=webhook_body(watch_id, event_id, installationId=INSTALLATION),
        headers=intruder.headers,
    )
    assert named.status_code == 404, named.get_json()
    assert named.get_json()["error"] == "installation_not_linked"
    unnamed = open_pr(client, intruder, watch_id, event_id)
    assert unnamed.status_code == 502 and unnamed.get_json()["error"] == "installation_missing"
    # The `draft_pr` policy of an agent of the second org, when its watch drifts again.
    agent_id = bind_agent(database, intruder, watch_id)
    with database.transaction() as session:
        agent = session.get_one(Agent, agent_id)
        agent.policy, agent.policy_rules = "dev-pr", {"on_breaking": ["notify", "draft_pr"]}
        agent.repo_ref = REPO
    server.set("/openapi.json", as_json(charges_spec()))
    client.post(f"/api/watches/{watch_id}/check?wait=30", headers=intruder.headers)
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    client.post(f"/api/watches/{watch_id}/check?wait=30", headers=intruder.headers)

    def policy_failed() -> bool:
        with database.session() as session:
            rows = session.scalars(
                select(DraftPr).where(DraftPr.org_id == intruder.org_id, DraftPr.state == "failed")
            ).all()
            return any(r.request.get("agentId") == "billing-bot" for r in rows)

    wait_until(policy_failed, timeout=15)
    # A record queued through the installation before the link rules (or racing an unlink)
    # is refused when its job runs, before GitHub is asked for a token.
    with database.transaction() as session:
        event = session.get_one(DriftEvent, event_id)
        queued, _ = draftpr.open_record(
            session,
            session.get_one(Watch, watch_id),
            event,
            "acme/no-drafts",
            INSTALLATION,
            {"changes": []},
            lint=False,
            now=datetime.now(UTC),
        )
        queued_id = queued.id
    failed = draftpr.wait_for_draft_pr(database, queued_id, 15)
    assert failed.state == "failed" and f"installation {INSTALLATION} is not linked" in (
        failed.error or ""
    )
    assert github.writes() == []
    assert [c for c in github.paths() if "/access_tokens" in c or "/repos/" in c] == []

    # GitHub's delivery of a merge through installation 77 only touches the first org's
    # records, even where the second org holds one with the same repository and number.
    with database.transaction() as session:
        lookalike = session.get_one(DraftPr, queued_id)
        lookalike.repo_full_name, lookalike.number, lookalike.state = REPO, 1, "draft"
        lookalike.error = None
    owner_watch, owner_event = drifted(client, org, server)
    opened = open_pr(client, org, owner_watch, owner_event)
    assert opened.status_code == 201 and opened.get_json()["number"] == 1, opened.get_json()
    merge(github, REPO, 1)
    payload = delivery(github, "pull_request", "closed", REPO, number=1, installation=INSTALLATION)
    hooked = client.post("/v1/draftpr/github/webhook", **signed(payload, "pull_request", "d-77"))
    assert hooked.status_code == 202

    def merged() -> bool:
        return draftpr.wait_for_draft_pr(database, opened.get_json()["draftPrId"], 0).state == (
            "merged"
        )

    wait_until(merged, timeout=15)
    with database.session() as session:
        assert session.get_one(DraftPr, queued_id).state == "draft"
    # The store refuses a second org's link of the same installation too.
    with pytest.raises(IntegrityError), database.transaction() as session:
        session.add(
            GitHubInstallation(
                org_id=intruder.org_id, installation_id=INSTALLATION, linked_by="operator"
            )
        )


def test_a_link_by_id_needs_an_account_the_org_has_proven(
    live_app: Flask, github: FakeGitHub, org: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    """By id, an org links only an installation on a GitHub account it proved through the
    install flow (a reinstall makes a new id on the same account); the install flow itself
    takes only an installation made after its link was issued, or the org's own."""
    client = live_app.test_client()
    github.add_installation(88, "globex", "globex/api")
    unproven = link_by_id(client, org, 88)
    assert unproven.status_code == 403, unproven.get_json()
    assert unproven.get_json()["error"] == "installation_not_proven"
    assert "'globex'" in unproven.get_json()["message"]
    assert link(client, org)["account"] == "acme"
    # Uninstalled and installed again on the same account: a new id, linked by id.
    github.installations[INSTALLATION].suspended = True
    github.add_installation(79, "acme", REPO)
    again = link_by_id(client, org, "79")
    assert again.status_code == 201, again.get_json()
    assert (again.get_json()["installationId"], again.get_json()["linkedBy"]) == (79, "account")
    assert link_by_id(client, org, INSTALLATION).get_json()["status"] == "suspended"
    # An installation made before the install link was issued: the flow cannot prove it.
    github.add_installation(90, "initech", created_at=datetime.now(UTC) - timedelta(days=3))
    stale = install(client, make_org("initech", "pro", products=("draftpr_repo",)), 90)
    assert stale.status_code == 403, stale.get_json()
    assert stale.get_json()["error"] == "installation_not_proven"
    # The org's own installation comes back through the flow (GitHub's "redirect on update").
    assert install(client, org, INSTALLATION).status_code == 200


def test_the_operator_links_and_unlinks_installations_from_the_cli(
    live_settings: Settings,
    github: FakeGitHub,
    org: OrgKey,
    make_org: Callable[..., OrgKey],
    database: Database,
) -> None:
    from click.testing import CliRunner

    from cli.main import main

    env = {
        "DRIFTGATE_DATABASE_URL": database.url,
        "DRIFTGATE_DATA_DIR": str(live_settings.data_dir),
        "DRIFTGATE_GITHUB_APP_ID": str(APP_ID),
        "DRIFTGATE_GITHUB_APP_PRIVATE_KEY": github.private_pem,
        "DRIFTGATE_GITHUB_API_URL": github.url,
        "DRIFTGATE_ALLOW_PRIVATE_TARGETS": "true",
    }
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(main, ["orgs", *args], env=env)

    other = make_org("globex", "pro", products=("draftpr_repo",))
    github.add_installation(88, "globex", "globex/api")
    # A link recorded without App credentials (local development) proved nothing: it gives
    # way to a verified one.
    with database.transaction() as session:
        session.add(
            GitHubInstallation(
                org_id=org.org_id, installation_id=88, linked_by="unverified", account=""
            )
        )
    linked = run("link-installation", "globex", "88")
    assert linked.exit_code == 0, (linked.output, linked.stderr)
    assert linked.output == "linked installation 88 (globex) to org globex\n"
    taken = run("link-installation", "acme", "88")
    assert taken.exit_code == 2
    assert "installation 88 is linked to org 'globex'" in taken.stderr
    assert "driftgate orgs unlink-installation globex 88" in taken.stderr
    unknown = run("link-installation", "acme", "999")
    assert unknown.exit_code == 2 and "999 does not exist for this App" in unknown.stderr
    listed = run("installations")
    assert listed.output == "globex\t88\tglobex\tactive\toperator\n", (listed, listed.stderr)
    assert run("unlink-installation", "acme", "88").exit_code == 2
    unlinked = run("unlink-installation", "globex", "88")
    assert unlinked.exit_code == 0, unlinked.stderr
    assert run("installations", "globex").output == ""
    with database.session() as session:
        assert session.scalars(select(GitHubInstallation)).all() == []
    assert other.org_id  # the org stays; only its link went


def test_installation_ids_are_integers_or_their_digits_and_published_so(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
) -> None:
    """SPEC.md types `installationId` as a string (the numeric id): `"77"` and `77` are the
    same id wherever one is taken, and /openapi.json says so."""
    client = live_app.test_client()
    link(client, org)
    for given in ("77", 77, 77.0):
        relinked = link_by_id(client, org, given)
        assert relinked.status_code == 201, relinked.get_json()
        assert relinked.get_json()["installationId"] == INSTALLATION
    watch_id, event_id = drifted(client, org, server)
    answers = [
        client.post(
            "/v1/draftpr/webhook",
            json=webhook_body(watch_id, event_id, installationId=given),
            headers=org.headers,
        )
        for given in ("77", 77)
    ]
    assert [a.status_code for a in answers] == [201, 200], [a.get_json() for a in answers]
    assert answers[0].get_json()["installationId"] == INSTALLATION
    assert answers[1].get_json()["draftPrId"] == answers[0].get_json()["draftPrId"]

    document = client.get("/openapi.json").get_json()
    schemas = document["components"]["schemas"]
    expected = [
        {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
        {"type": "string", "pattern": "^[1-9][0-9]{0,17}$"},
    ]
    assert schemas["InstallationLinkIn"]["properties"]["installationId"]["anyOf"] == expected
    webhook = schemas["DraftPrWebhookIn"]["properties"]["installationId"]["anyOf"]
    assert webhook == [*expected, {"type": "null"}]
    callback = document["paths"]["/api/account/draftpr/github/callback"]["get"]["parameters"]
    [query] = [p for p in callback if p.get("name") == "installation_id"]
    assert query["schema"]["pattern"] == "^[1-9][0-9]{0,17}$"


def test_remediation_opens_the_pull_requests_the_draft_pr_policies_ask_for(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    database: Database,
    make_org: Callable[..., OrgKey],
) -> None:
    client = live_app.test_client()
    link(client, org)
    watch_id = baselined(client, org, server)
    agent_id = bind_agent(database, org, watch_id)
    hosted = f"/api/watches/{watch_id}/trigger_remediation"  # the hosted MCP server's name
    nothing = client.post(hosted, json={}, headers=org.headers)
    assert nothing.status_code == 422 and nothing.get_json()["error"] == "no_drift_event"
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    client.post(f"/api/watches/{watch_id}/check?wait=30", headers=org.headers)
    # The agent's policy does not list draft_pr: no repository to open it in.
    nowhere = client.post(hosted, json={}, headers=org.headers)
    assert nowhere.status_code == 422 and nowhere.get_json()["error"] == "no_remediation_target"
    with database.transaction() as session:
        agent = session.get_one(Agent, agent_id)
        agent.policy_rules = {"on_breaking": ["notify", "draft_pr"]}
        agent.policy, agent.repo_ref = "dev-pr", f"{REPO}@main"
    queued = client.post(hosted, json={}, headers=org.headers)
    assert queued.status_code == 202, queued.get_json()
    body = queued.get_json()
    (draft,) = body["draftPrs"]
    assert (draft["repoFullName"], draft["watchId"]) == (REPO, watch_id)
    assert draft["driftEventId"] == body["driftEventId"]
    wait_until(
        lambda: draftpr.wait_for_draft_pr(database, draft["draftPrId"], 0).state == "draft",
        timeout=15,
    )
    assert github.repositories[REPO].pulls[0]["base"] == "main"
    # driftgate's own route, the same again: the record that exists (200), nothing new.
    own = client.post(
        "/v1/draftpr/remediate",
        json={"watchId": watch_id, "driftEventId": body["driftEventId"]},
        headers=org.headers,
    )
    assert (
        own.status_code == 200
        and own.get_json()["draftPrs"][0]["draftPrId"] == (draft["draftPrId"])
    )
    assert len(github.repositories[REPO].pulls) == 1
    # Another org's watch, an unknown event, an id no watch has: 404; the product off: 403.
    other = make_org("other", "pro", products=("draftpr_repo",))
    assert client.post(hosted, json={}, headers=other.headers).status_code == 404
    unknown = client.post(hosted, json={"driftEventId": "nope"}, headers=org.headers)
    assert unknown.get_json() == {"error": "not_found", "message": "Drift event not found"}
    assert (
        client.post("/api/watches/x%20y/trigger_remediation", headers=org.headers).status_code
        == 404
    )
    off = make_org("off", "pro")
    refused = client.post(hosted, json={}, headers=off.headers)
    assert refused.status_code == 403
    assert refused.get_json()["error"] == "PRODUCT_REQUIRED: draftpr_repo"
