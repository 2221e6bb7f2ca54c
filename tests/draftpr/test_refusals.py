"""What the draft pull request routes refuse, and how: the product off, another org's watch or
event, GitHub's own refusals (502 naming the cause), a repository that refuses drafts, a rate
limit, no App credentials (stub pull requests), a vendored path outside the repository and an
installation id that is not one (400)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from controller.crypto import load_secret_box
from controller.draftpr import changelog
from controller.draftpr import service as draftpr
from controller.model.principal import Principal
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import (
    DraftPr,
    Job,
    Org,
)
from tests.conftest import OrgKey
from tests.draftpr.conftest import (
    INSTALLATION,
    REPO,
    app_settings,
    drifted,
    link,
    open_pr,
    webhook_body,
)
from tests.github_fake import FakeGitHub
from tests.processes import wait_until
from tests.servers import SpecServer


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

        wait_until(retried)
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
