"""A merged draft pull request lifts the block of every agent bound to its watch (its contract
becomes the baseline), so the agents' remediation approval rules judge it, against the pull
request's own repository and base branch: GitHub's signed delivery says them (verified), a
merge recorded by hand is judged on the store's record of the pull request (not verified, and
nothing the caller sends counts). An acknowledgement's `repository` and `branch` are the
caller's statement, answered and audited as unverified. Real store, controller and app, the
loopback GitHub (tests/github_fake.py)."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.scheduler import Controller
from controller.store.db import Database
from controller.store.models import Agent, AuditEntry, DraftPr, Incident
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


def drifted_with_rules(
    client: FlaskClient, org: OrgKey, server: SpecServer, database: Database, rules: Any
) -> tuple[str, str, dict[str, Any]]:
    """A watch with an agent (killed by its drift) whose approval rules are `rules`, and the
    draft pull request of the drift, opened through the App on the repository's default
    branch. (watch id, agent id, the pull request's record as answered)"""
    link(client, org)
    watch_id = baselined(client, org, server)
    agent_id = bind_agent(database, org, watch_id)
    with database.transaction() as session:
        session.get_one(Agent, agent_id).approvals = rules
    event_id = drift(client, org, server, watch_id)
    opened = client.post(
        "/v1/draftpr/webhook", json=webhook_body(watch_id, event_id), headers=org.headers
    )
    assert opened.status_code == 201, opened.get_json()
    pr: dict[str, Any] = opened.get_json()
    assert pr["state"] == "draft" and pr["stub"] is False
    return watch_id, agent_id, pr


def merged_on_github(
    client: FlaskClient, github: FakeGitHub, database: Database, pr: dict[str, Any], hook: str
) -> dict[str, Any]:
    """Merge the pull request on GitHub, deliver GitHub's signed `pull_request` event and wait
    for the controller to record it; the audit entry of the merge."""
    merge(github, REPO, pr["number"])
    payload = delivery(
        github, "pull_request", "closed", REPO, number=pr["number"], installation=INSTALLATION
    )
    assert payload["pull_request"]["base"]["ref"] == "main"
    answer = client.post("/v1/draftpr/github/webhook", **signed(payload, "pull_request", hook))
    assert answer.status_code == 202, answer.get_json()

    def recorded() -> bool:
        with database.session() as session:
            return session.get_one(DraftPr, pr["draftPrId"]).state == "merged"

    wait_until(recorded)
    with database.session() as session:
        entry = session.scalars(
            select(AuditEntry).where(
                AuditEntry.action == "draftpr.merged", AuditEntry.target_id == pr["draftPrId"]
            )
        ).one()
        return dict(entry.details)


def incident_statuses(database: Database, watch_id: str) -> list[str]:
    with database.session() as session:
        return [
            i.status for i in session.scalars(select(Incident).where(Incident.watch_id == watch_id))
        ]


def runtime_state(database: Database, agent_id: str) -> str:
    with database.session() as session:
        return session.get_one(Agent, agent_id).runtime_state


def test_a_merge_github_signs_is_judged_on_its_repository_and_base_branch(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    database: Database,
) -> None:
    client = live_app.test_client()
    rules = [{"repository": REPO.upper(), "branches": ["release/*", "main"]}]
    watch_id, agent_id, pr = drifted_with_rules(client, org, server, database, rules)
    assert runtime_state(database, agent_id) == "killed"

    audited = merged_on_github(client, github, database, pr, "d-accepted")
    assert audited["verified"] is True
    assert (audited["repository"], audited["branch"]) == (REPO, "main")
    assert audited["approvals"] == {"billing-bot": rules[0]}
    assert audited["approvalRefused"] == [] and audited["unblocked"] == [agent_id]
    assert incident_statuses(database, watch_id) == ["resolved"]
    assert runtime_state(database, agent_id) == "running"


def test_a_merge_into_a_repository_the_rules_do_not_name_lifts_nothing(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    database: Database,
) -> None:
    client = live_app.test_client()
    rules = [{"repository": "acme/billing-agent", "branches": ["main"]}]
    watch_id, agent_id, pr = drifted_with_rules(client, org, server, database, rules)

    # By hand: judged on the pull request's record, whatever the body says; refused, and
    # nothing is stored.
    by_hand = client.post(
        "/v1/draftpr/draft-pr/merged",
        json={"draftPrId": pr["draftPrId"]},
        headers=org.headers,
    )
    assert by_hand.status_code == 403, by_hand.get_json()
    refused = by_hand.get_json()
    assert refused["error"] == "approval_refused"
    assert f"accepts {REPO}@main" in refused["message"]
    assert refused["details"] == [
        {"agentId": "billing-bot", "rule": rules[0], "failed": "repository"}
    ]
    with database.session() as session:
        assert session.get_one(DraftPr, pr["draftPrId"]).state == "draft"
    assert incident_statuses(database, watch_id) == ["open"]

    # On GitHub's signed word: the merge is a fact and is recorded, but it does not count as
    # the agent's remediation: the incident stays open and the agent stays killed.
    audited = merged_on_github(client, github, database, pr, "d-refused")
    assert audited["verified"] is True and audited["unblocked"] == []
    assert audited["approvalRefused"] == [
        {"agentId": "billing-bot", "rule": rules[0], "failed": "repository"}
    ]
    assert incident_statuses(database, watch_id) == ["open"]
    assert runtime_state(database, agent_id) == "killed"


def test_a_merge_by_hand_is_judged_on_the_record_and_answered_unverified(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    org: OrgKey,
    server: SpecServer,
    database: Database,
) -> None:
    client = live_app.test_client()
    rules = [{"repository": REPO, "branches": ["main"]}]
    watch_id, agent_id, pr = drifted_with_rules(client, org, server, database, rules)
    with database.session() as session:
        # The App opened it on the default branch, which GitHub named: recorded as its base.
        assert session.get_one(DraftPr, pr["draftPrId"]).request["base"] == "main"

    merged = client.post(
        "/v1/draftpr/draft-pr/merged",
        json={"draftPrId": pr["draftPrId"]},
        headers=org.headers,
    )
    assert merged.status_code == 200, merged.get_json()
    answer = merged.get_json()
    assert answer["approval"] == {
        "repository": REPO,
        "branch": "main",
        "verified": False,
        "approvals": {"billing-bot": {"repository": REPO, "branches": ["main"]}},
    }
    assert answer["incidentResolved"] is True and answer["unblockedAgentIds"] == [agent_id]
    assert incident_statuses(database, watch_id) == ["resolved"]


def test_an_acknowledgements_repository_and_branch_are_answered_and_audited_unverified(
    live_app: Flask, org: OrgKey, server: SpecServer, database: Database, controller: Controller
) -> None:
    client = live_app.test_client()
    watch_id = baselined(client, org, server)
    agent_id = bind_agent(database, org, watch_id)
    with database.transaction() as session:
        session.get_one(Agent, agent_id).approvals = [{"repository": REPO, "branches": ["*"]}]
    drift(client, org, server, watch_id)
    acked = client.post(
        "/api/agents/billing-bot/ack",
        json={"note": "fixed", "repository": REPO, "branch": "main"},
        headers=org.headers,
    )
    assert acked.status_code == 200, acked.get_json()
    assert acked.get_json()["approvalVerified"] is False
    assert acked.get_json()["approval"] == {"repository": REPO, "branches": ["*"]}
    with database.session() as session:
        entry = session.scalars(select(AuditEntry).where(AuditEntry.action == "agent.ack")).one()
        assert entry.details["verified"] is False
        assert (entry.details["repository"], entry.details["branch"]) == (REPO, "main")
