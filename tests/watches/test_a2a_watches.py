"""A2A agent-card watches end to end: a card served by a real HTTP server on 127.0.0.1,
checked through the API with a real controller, gated by preflight; a card that breaks fails
the check closed; a watch set that declares one validates and reconciles from a real git
repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from flask import Flask
from sqlalchemy import select

from cli.main import main
from controller.discovery.extract import from_urls
from controller.model.watch import WatchType, infer_watch_type
from controller.scheduler import Controller
from controller.store.db import Database
from controller.store.models import Watch
from tests.conftest import OrgKey
from tests.factories import Make, run
from tests.gitrepos import RepoBuilder
from tests.servers import SpecServer

CARD_PATH = "/.well-known/agent-card.json"


def order_input(*required: str) -> dict[str, Any]:
    """An input schema with `orderId` and every required field (all strings)."""
    names = ("orderId", *required)
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in names},
        "required": list(dict.fromkeys(names)),
    }


def card(*, refund: bool = True, invoice_required: tuple[str, ...] = ()) -> bytes:
    skills: list[dict[str, Any]] = [
        {
            "id": "invoice",
            "name": "Invoice",
            "description": "Issue an invoice for an order",
            "tags": ["billing"],
            "inputSchema": order_input(*invoice_required),
        }
    ]
    if refund:
        skills.insert(
            0,
            {
                "id": "refund",
                "name": "Refund",
                "description": "Refund an order",
                "tags": ["billing"],
                "examples": ["refund order 42"],
                "inputSchema": order_input(),
            },
        )
    return json.dumps(
        {
            "protocolVersion": "0.3.0",
            "name": "Billing agent",
            "description": "Refunds and invoices",
            "url": "https://billing.example/a2a",
            "version": "1.0.0",
            "capabilities": {"streaming": True},
            "defaultInputModes": ["application/json"],
            "defaultOutputModes": ["application/json"],
            "skills": skills,
        }
    ).encode()


def test_agent_card_urls_tell_their_type() -> None:
    for url in (
        "https://a.example/.well-known/agent.json",
        "https://a.example/.well-known/agent-card.json",
    ):
        assert infer_watch_type(url) is WatchType.A2A_CARD
        # A suggestion from the same URL gets the type the watch would get.
        (candidate,) = from_urls([url])
        assert candidate.watch_type == "a2a_card" and "A2A agent card" in candidate.reasons[0]
    assert infer_watch_type("https://a.example/agent.json") is None


def test_a_card_at_another_json_url_is_told_by_what_it_serves(
    live_app: Flask, acme: OrgKey, server: SpecServer
) -> None:
    server.set("/agents/billing.json", card())
    created = live_app.test_client().post(
        "/api/watches",
        json={"name": "billing", "url": server.url("/agents/billing.json")},
        headers=acme.headers,
    )
    assert created.status_code == 201, created.json
    assert created.json["watchType"] == "a2a_card"


def test_a_card_drifts_and_preflight_blocks_it(
    live_app: Flask, acme: OrgKey, server: SpecServer, controller: Controller
) -> None:
    client = live_app.test_client()
    h = acme.headers
    server.set(CARD_PATH, card())
    created = client.post(
        "/api/watches",
        json={"name": "billing-agent-card", "url": server.url(CARD_PATH)},
        headers=h,
    )
    assert created.status_code == 201, created.json
    assert created.json["watchType"] == "a2a_card"  # inferred from the well-known path
    path = f"/api/watches/{created.json['id']}"

    first = client.post(f"{path}/check?wait=60", headers=h).json
    assert first["status"] == "done" and first["watch"]["driftStatus"] == "ok"
    assert first["watch"]["baseline"]["snapshotId"]
    ok = client.post("/api/preflight", json={"watchIds": [created.json["id"]]}, headers=h).json
    assert ok["allowed"] is True

    # The vendor drops a skill and makes another skill's input ask for a new field.
    server.set(CARD_PATH, card(refund=False, invoice_required=("currency",)))
    drifted = client.post(f"{path}/check?wait=60", headers=h).json
    assert drifted["watch"]["driftStatus"] == "drifted"
    assert drifted["watch"]["incident"]["status"] == "open"
    assert drifted["watch"]["openChanges"]["breaking"] == 2

    status = client.get(f"{path}/status", headers=h).json
    assert status["watchType"] == "a2a_card" and status["reasons"] == ["breaking_drift"]
    changes = {c["rule"]: c for c in status["lastDriftEvent"]["changes"]}
    assert changes["skill-removed"]["severity"] == "breaking"
    assert changes["skill-removed"]["location"] == {"tool": "refund"}
    required = changes["tool-input-property-added-required"]
    assert required["severity"] == "breaking" and required["location"] == {"tool": "invoice"}
    assert required["summary"].startswith("skill invoice input")
    assert all(c["hint"] for c in changes.values())

    blocked = client.post("/api/preflight", json={"watchIds": [created.json["id"]]}, headers=h).json
    assert blocked["allowed"] is False
    row = blocked["blocked"][0]
    assert row["driftStatus"] == "drifted" and row["reasons"] == ["breaking_drift"]
    # The most useful action first: stop using the removed skill, send the new field.
    assert row["agentActions"][:2] == ["remove_tool_usage", "send_new_required_field"]


def test_a_card_that_breaks_fails_the_check_closed(
    live_app: Flask, acme: OrgKey, server: SpecServer, controller: Controller
) -> None:
    client = live_app.test_client()
    h = acme.headers
    server.set(CARD_PATH, card())
    created = client.post(
        "/api/watches",
        json={"name": "card", "url": server.url(CARD_PATH), "watchType": "a2a_card"},
        headers=h,
    ).json
    path = f"/api/watches/{created['id']}"
    assert client.post(f"{path}/check?wait=60", headers=h).json["watch"]["driftStatus"] == "ok"

    for body, content_type, says in (
        (b"<html><body>Sign in</body></html>", "text/html", "HTML or XML, not JSON"),
        (b'{"name": "Billing agent"}', "application/json", "'skills' list"),
        (b'["not", "a", "card"]', "application/json", "expected a JSON object"),
    ):
        server.set(CARD_PATH, body, content_type=content_type)
        failed = client.post(f"{path}/check?wait=60", headers=h).json["watch"]
        assert failed["driftStatus"] == "error", failed
        assert failed["failureClass"] == "invalid_contract"
        assert says in failed["lastError"] and "not an A2A agent card" in failed["lastError"]
        gate = client.post("/api/preflight", json={"watchIds": [created["id"]]}, headers=h).json
        assert gate["allowed"] is False
        assert gate["blocked"][0]["reasons"] == ["check_failed:invalid_contract"]

    # The card comes back unchanged: the watch is healthy again against its baseline.
    server.set(CARD_PATH, card())
    again = client.post(f"{path}/check?wait=60", headers=h).json["watch"]
    assert again["driftStatus"] == "ok" and again["failureClass"] is None


def test_a_card_that_never_was_one_stays_error(
    live_app: Flask, acme: OrgKey, server: SpecServer, controller: Controller
) -> None:
    client = live_app.test_client()
    h = acme.headers
    server.set(CARD_PATH, b"<!doctype html><p>Not found</p>", content_type="text/html")
    created = client.post(
        "/api/watches", json={"name": "card", "url": server.url(CARD_PATH)}, headers=h
    ).json
    watch = client.post(f"/api/watches/{created['id']}/check?wait=60", headers=h).json["watch"]
    assert watch["driftStatus"] == "error" and watch["baseline"] is None
    gate = client.post("/api/preflight", json={"watchIds": [created["id"]]}, headers=h).json
    assert gate["blocked"][0]["reasons"] == ["check_failed:invalid_contract"]


AGENT_CARDS = """\
version: 1
watchSets:
  - name: agents
    environment: production
    watches:
      - name: billing-agent-card
        url: http://127.0.0.1:9/.well-known/agent-card.json
        watchType: a2a_card
        tags: [kind:a2a]
      - name: legacy-agent-card
        url: http://127.0.0.1:9/.well-known/agent.json
        watchType: a2a_card
"""


def test_a_watch_set_declaring_agent_cards_validates_and_reconciles(
    tmp_path: Path,
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
) -> None:
    files = {".driftgate/watch-sets.yaml": AGENT_CARDS}
    local = tmp_path / "checkout" / ".driftgate"
    local.mkdir(parents=True)
    (local / "watch-sets.yaml").write_text(AGENT_CARDS)
    checked = CliRunner().invoke(main, ["validate", str(local.parent)])
    assert checked.exit_code == 0, checked.output

    (local / "watch-sets.yaml").write_text(AGENT_CARDS.replace("a2a_card\n", "a2a\n", 1))
    wrong = CliRunner().invoke(main, ["validate", str(local.parent)])
    assert wrong.exit_code != 0 and "watch-sets.yaml:8" in wrong.output

    repo.commit(files)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    with database.session() as session:
        watches = {w.name: w for w in session.scalars(select(Watch))}
        assert {name: w.watch_type for name, w in watches.items()} == {
            "billing-agent-card": "a2a_card",
            "legacy-agent-card": "a2a_card",
        }
        assert watches["billing-agent-card"].managed_path == ".driftgate/watch-sets.yaml"
    assert run(reconciler, settings).result == "unchanged"
