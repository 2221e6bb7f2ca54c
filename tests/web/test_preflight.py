"""`POST /api/preflight` through the app on a real store: tokens, statuses, limits, org scope,
the recorded decision and its log line. (The full story with real checks and a signed kill is
in tests/gate/test_run_gate.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import PreflightDecision
from tests.conftest import OrgKey
from tests.factories import make_watch, set_state


def preflight(client: FlaskClient, who: OrgKey, body: Any, status: int = 200) -> Any:
    response = client.post("/api/preflight", json=body, headers=who.headers)
    assert response.status_code == status, response.get_json()
    return response.get_json()


@pytest.fixture
def fleet(client: FlaskClient, acme: OrgKey, database: Database) -> dict[str, str]:
    ids = {name: make_watch(client, acme, name) for name in ("ok", "drift", "err", "new", "off")}
    set_state(database, ids["ok"], "ok")
    set_state(database, ids["drift"], "drifted", incident="open")
    set_state(database, ids["err"], "error", failure="auth")
    client.post(f"/api/watches/{ids['off']}/pause", headers=acme.headers)
    return ids


def test_a_watch_list_reports_every_token_with_200(
    client: FlaskClient, acme: OrgKey, fleet: dict[str, str], database: Database
) -> None:
    body = preflight(client, acme, {"watchIds": [*fleet.values(), "missing-id"]})
    assert body["allowed"] is False and body["policyBlocked"] is False
    rows = {row["watchId"]: row for row in body["blocked"]}
    assert {k: rows[v]["reasons"] for k, v in fleet.items() if v in rows} == {
        "drift": ["breaking_drift"],
        "err": ["check_failed:auth"],
        "new": ["never_checked"],
        "off": ["disabled"],
    }
    assert rows["missing-id"]["reasons"] == ["not_found"] and rows["missing-id"]["name"] is None
    drift = rows[fleet["drift"]]
    assert drift["incidentId"] and drift["lastCheckedAt"] and drift["driftStatus"] == "drifted"
    assert "ack_incident" in drift["agentActions"]
    assert rows[fleet["new"]]["lastCheckedAt"] is None
    assert isinstance(body["durationMs"], int) and body["decisionId"] and body["evaluatedAt"]
    assert body["agent"] is None and body["ignored"] == []
    assert preflight(client, acme, {"watchIds": [fleet["ok"]]})["allowed"] is True
    assert preflight(client, acme, {"watchIds": []})["allowed"] is True


@pytest.mark.hosted_routes
def test_limits_shapes_and_auth(
    client: FlaskClient, acme: OrgKey, fleet: dict[str, str], make_org: Callable[..., OrgKey]
) -> None:
    too_many = preflight(client, acme, {"watchIds": [f"w{i}" for i in range(101)]}, 400)
    assert too_many["error"] == "validation_error" and "watchIds" in json.dumps(too_many)
    hundred = preflight(client, acme, {"watchIds": [fleet["ok"]] * 100})
    assert hundred["allowed"] is True
    assert preflight(client, acme, {}, 400)["error"] == "validation_error"
    both = {"watchIds": [], "agentId": "x"}
    assert preflight(client, acme, both, 400)["error"] == "validation_error"
    for not_a_boolean in (1, "true"):  # `dryRun` is a boolean, as published
        refused = preflight(client, acme, {"watchIds": [], "dryRun": not_a_boolean}, 400)
        assert [d["path"] for d in refused["details"]] == ["/dryRun"]
    assert preflight(client, acme, {"agentId": "nobody"}, 404)["error"] == "not_found"
    dup = preflight(client, acme, {"watchIds": [fleet["drift"], fleet["drift"]]})
    assert len(dup["blocked"]) == 1
    assert client.post("/api/preflight", json={"watchIds": []}).status_code == 401
    trial = client.post("/api/trial/session").get_json()
    anonymous = client.post(
        "/api/preflight",
        json={"agentId": "x"},
        headers={"X-Service-Trial": trial.get("token") or trial.get("trialToken") or "t"},
    )
    assert anonymous.status_code == 401
    other = make_org("globex")
    theirs = preflight(client, other, {"watchIds": [fleet["ok"], fleet["drift"]]})
    assert [r["reasons"] for r in theirs["blocked"]] == [["not_found"], ["not_found"]]
    assert all(r["name"] is None for r in theirs["blocked"])


def test_agents_apply_their_policy_with_409_ignore_and_dry_run(
    client: FlaskClient, acme: OrgKey, fleet: dict[str, str], database: Database
) -> None:
    for name, policy in (("strict", "staging-strict"), ("guard", "production-guard")):
        launched = client.post(
            "/api/watches/from-template",
            json={
                "templateId": "system/openapi-json",
                "url": f"https://{name}.example.com/openapi.json",
                "policyPreset": policy,
                "agent": {"id": f"{name}-bot"},
            },
            headers=acme.headers,
        )
        assert launched.status_code == 201
        watch_id = launched.get_json()["watch"]["id"]
        set_state(database, watch_id, "drifted", incident="open")

    blocked = preflight(client, acme, {"agentId": "strict-bot"}, 409)
    assert blocked["policyBlocked"] is True and blocked["allowed"] is False
    assert blocked["blocked"][0]["reasons"] == ["breaking_drift", "policy_block:block_new_runs"]
    assert blocked["agent"] == {
        "id": "strict-bot",
        "slug": "strict-bot",
        "policy": "staging-strict",
        "runtimeState": "running",
        "reasons": [],
        "agentActions": [],
        "unresolvedReferences": [],
    }
    guard = preflight(client, acme, {"agentId": "guard-bot"}, 409)
    assert guard["blocked"][0]["reasons"][-1] == "policy_block:kill_in_flight"
    dry = preflight(client, acme, {"agentId": "guard-bot", "dryRun": True})
    assert dry["policyBlocked"] is False and dry["wouldPolicyBlock"] is True and dry["dryRun"]
    waived = preflight(
        client,
        acme,
        {
            "agentId": "strict-bot",
            "ignore": [{"watchId": blocked["blocked"][0]["watchId"], "reason": "x"}],
        },
        409,
    )
    assert waived["ignored"] == [] and len(waived["blocked"]) == 1
    plain = preflight(
        client,
        acme,
        {
            "watchIds": [fleet["new"], fleet["ok"]],
            "ignore": [{"watchId": fleet["new"], "reason": "first run"}],
        },
    )
    assert plain["allowed"] is True and plain["ignored"][0]["ignoreReason"] == "first run"

    acked = client.post(
        "/api/agents/strict-bot/ack", json={"note": "migrating"}, headers=acme.headers
    )
    assert acked.status_code == 200, acked.get_json()
    assert preflight(client, acme, {"agentId": "strict-bot"})["allowed"] is True
    still = preflight(client, acme, {"watchIds": [blocked["blocked"][0]["watchId"]]})
    assert still["blocked"][0]["reasons"] == ["breaking_drift"]  # a plain list still blocks


def test_every_decision_is_recorded_and_logged(
    client: FlaskClient,
    acme: OrgKey,
    fleet: dict[str, str],
    database: Database,
    capfd: pytest.CaptureFixture[str],
) -> None:
    capfd.readouterr()
    body = preflight(client, acme, {"watchIds": [fleet["ok"], fleet["new"], "gone"]})
    err = capfd.readouterr().err
    with database.session() as session:
        row = session.get_one(PreflightDecision, body["decisionId"])
        assert row.org_id == acme.org_id and row.watch_count == 3 and row.status_code == 200
        assert row.allowed is False and row.actor == f"api_key:{acme.key_id}"
        assert row.inputs["watchIds"] == [fleet["ok"], fleet["new"], "gone"]
        assert [r["reasons"] for r in row.result["blocked"]] == [["never_checked"], ["not_found"]]
        count = len(list(session.scalars(select(PreflightDecision.id))))
    assert count == 1
    lines = [json.loads(x) for x in err.splitlines() if '"preflight.complete"' in x]
    assert len(lines) == 1
    fields = lines[0]
    assert fields["org"] == acme.org_id and fields["watchCount"] == 3
    assert fields["outcome"] == "blocked" and fields["status"] == 200
    assert fields["decisionId"] == body["decisionId"] and isinstance(fields["durationMs"], int)
    assert acme.key not in err


def test_decisions_are_in_the_signed_audit_export(
    client: FlaskClient, acme: OrgKey, fleet: dict[str, str], make_org: Callable[..., OrgKey]
) -> None:
    first = preflight(client, acme, {"watchIds": [fleet["drift"]]})
    second = preflight(client, acme, {"watchIds": [fleet["ok"]], "dryRun": True})
    preflight(client, make_org("globex"), {"watchIds": []})
    with client.get("/api/drift/export?format=audit", headers=acme.headers) as exported:
        document = json.loads(exported.get_data())
    decisions = document["preflightDecisions"]
    assert [d["decisionId"] for d in decisions] == [first["decisionId"], second["decisionId"]]
    assert decisions[0]["result"]["blocked"][0]["reasons"] == ["breaking_drift"]
    assert decisions[1]["allowed"] is True and decisions[1]["dryRun"] is True
    assert document["signature"].startswith("hmac-sha256:")


def test_hand_built_answers_write_instants_as_every_route_does(
    client: FlaskClient, acme: OrgKey, fleet: dict[str, str]
) -> None:
    """The run gate builds its answer by hand (the hot path); its instants are written in UTC
    with `Z`, as pydantic writes them in every other answer, and so are the portfolio's and
    the export's."""
    body = preflight(client, acme, {"watchIds": list(fleet.values())})
    instants = [body["evaluatedAt"], *(r["lastCheckedAt"] for r in body["blocked"])]
    assert all(value is None or value.endswith("Z") for value in instants), instants
    assert any(r["lastCheckedAt"] for r in body["blocked"])
    portfolio = client.get("/api/portfolio/status", headers=acme.headers).get_json()
    assert all(
        w["lastCheckedAt"] is None or w["lastCheckedAt"].endswith("Z") for w in portfolio["watches"]
    )
    exported = client.get("/api/drift/export", headers=acme.headers).get_data(as_text=True)
    assert json.loads(exported)["exportedAt"].endswith("Z")


def test_agent_status_shows_each_watch_by_its_own_name_and_last_check(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    # Healthy watches share a compact entry in the gate's view; the status must still show
    # each watch's own name and last check, whatever its state.
    names = ("alpha-api", "beta-api", "gamma-api")
    for name in names:
        launched = client.post(
            "/api/watches/from-template",
            json={
                "templateId": "system/openapi-json",
                "name": name,
                "url": f"https://{name}.example.com/openapi.json",
                "agent": {"id": "status-bot"},
            },
            headers=acme.headers,
        )
        assert launched.status_code == 201, launched.get_json()
    by_name = {
        w["name"]: w["id"]
        for w in client.get("/api/watches", headers=acme.headers).get_json()["watches"]
    }
    set_state(database, by_name["alpha-api"], "ok")
    set_state(database, by_name["beta-api"], "ok")
    set_state(database, by_name["gamma-api"], "drifted", incident="open")
    checked = {
        w["name"]: w["lastCheckedAt"]
        for w in client.get("/api/watches", headers=acme.headers).get_json()["watches"]
    }
    status = client.get("/api/agents/status-bot/status", headers=acme.headers).get_json()
    shown = {w["watchId"]: w for w in status["watches"]}
    assert set(shown) == set(by_name.values())
    for name, watch_id in by_name.items():
        assert shown[watch_id]["name"] == name
        assert shown[watch_id]["lastCheckedAt"] == checked[name] is not None
    assert shown[by_name["alpha-api"]]["driftStatus"] == "ok"
    assert shown[by_name["gamma-api"]]["blocking"] is True
