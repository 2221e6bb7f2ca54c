"""Who owns a GitHub App installation (issue 31, point 1): another org's installation is refused
everywhere, a link by id needs an account the org has proven, the operator links and unlinks
from the CLI, and installation ids are integers or their digits, published so."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from controller.draftpr import service as draftpr
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import (
    Agent,
    DraftPr,
    DriftEvent,
    GitHubInstallation,
    Watch,
)
from tests.conftest import OrgKey
from tests.draftpr.conftest import (
    INSTALLATION,
    REPO,
    bind_agent,
    drifted,
    install,
    link,
    link_by_id,
    open_pr,
    signed,
    webhook_body,
)
from tests.github_fake import APP_ID, FakeGitHub, delivery, merge
from tests.processes import wait_until
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec


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
    client.post(f"/api/watches/{watch_id}/check?wait=60", headers=intruder.headers)
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    client.post(f"/api/watches/{watch_id}/check?wait=60", headers=intruder.headers)

    def policy_failed() -> bool:
        with database.session() as session:
            rows = session.scalars(
                select(DraftPr).where(DraftPr.org_id == intruder.org_id, DraftPr.state == "failed")
            ).all()
            return any(r.request.get("agentId") == "billing-bot" for r in rows)

    wait_until(policy_failed)
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

    wait_until(merged)
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
    assert [line.split() for line in listed.output.splitlines()] == [
        ["ORG", "INSTALLATION", "ACCOUNT", "STATUS", "LINKED", "BY"],
        ["globex", "88", "globex", "active", "operator"],
    ], (listed, listed.stderr)
    assert run("unlink-installation", "acme", "88").exit_code == 2
    unlinked = run("unlink-installation", "globex", "88")
    assert unlinked.exit_code == 0, unlinked.stderr
    assert run("installations", "globex").output.split() == [
        "ORG",
        "INSTALLATION",
        "ACCOUNT",
        "STATUS",
        "LINKED",
        "BY",
    ]
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
