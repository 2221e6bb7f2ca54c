"""Draft pull requests end to end: a real store, a real controller, a real app, and a loopback
GitHub that checks the App's JWTs and tokens and validates every request and answer against
GitHub's published REST description (tests/github_fake.py).

The story: a watch drifts -> the drift webhook opens a draft pull request (branch, changelog,
vendored contract, one commit) -> the same event again does nothing new -> GitHub's signed
`pull_request` delivery says it was merged -> the contract is the new baseline, the incident
is resolved and the bound agent runs again. A `draft_pr` policy opens one by itself when the
watch drifts, and so does a remediation asked for through the API.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

from flask import Flask
from sqlalchemy import select

from controller.draftpr import service as draftpr
from controller.scheduler import Controller
from controller.store.db import Database
from controller.store.models import (
    Agent,
    DraftPr,
    DriftEvent,
    Incident,
    Watch,
)
from tests.conftest import OrgKey
from tests.draftpr.conftest import (
    INSTALLATION,
    REPO,
    baselined,
    bind_agent,
    drift,
    link,
    signed,
    webhook_body,
)
from tests.github_fake import FakeGitHub, delivery, merge
from tests.processes import wait_until
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

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

    wait_until(merged)
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


# -- automatically: a draft_pr policy, and a remediation asked for ---------------------------


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
    client.post(f"/api/watches/{watch_id}/check?wait=60", headers=org.headers)

    def opened() -> bool:
        with database.session() as session:
            rows = session.scalars(select(DraftPr)).all()
            return len(rows) == 1 and rows[0].state == "draft"

    wait_until(opened)
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
    back = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=org.headers)
    assert back.get_json()["watch"]["driftStatus"] == "ok"
    server.set("/openapi.json", as_json(drifted))
    again_drifted = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=org.headers)
    assert again_drifted.get_json()["watch"]["incident"]["flapCount"] == 1
    with database.session() as session:
        assert len(session.scalars(select(DraftPr)).all()) == 1


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
    client.post(f"/api/watches/{watch_id}/check?wait=60", headers=org.headers)
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
