"""Signed agent cards end to end: an `a2a_card` watch made through the API with the keys it
trusts, checked by the real check engine (`contract_fetcher`, the assessments included)
against a loopback agent serving its card and another serving the owner's JWKS, and the run
gate's answer through `POST /api/preflight`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient
from joserfc.jwk import ECKey

from controller.cardtrust.assessor import build
from controller.checks.engine import CheckInput, CheckResult, contract_fetcher, run_check
from controller.crypto import load_secret_box
from controller.settings import Settings
from controller.sources.http import make_client
from controller.store.db import Database
from controller.store.models import DriftEvent, Watch
from controller.store.snapshots import decode_changes
from tests.cardtrust.conftest import card, jwks, public, sign
from tests.conftest import OrgKey
from tests.servers import SpecServer, spec_server

CARD_PATH = "/.well-known/agent-card.json"


@dataclass
class Agent:
    """The agent's card server, the owner's key server, and a watch on the card."""

    client: FlaskClient
    org: OrgKey
    database: Database
    settings: Settings
    cards: SpecServer
    keys: SpecServer
    # The gate reads the wall clock: checks a little before it are fresh.
    now: datetime = field(default_factory=lambda: datetime.now(UTC) - timedelta(minutes=5))

    def serve(self, document: dict[str, Any]) -> None:
        self.cards.set(CARD_PATH, json.dumps(document, indent=2))

    def watch(self, **fields: Any) -> str:
        body = {"name": "billing-card", "url": self.cards.url(CARD_PATH), "watchType": "a2a_card"}
        response = self.client.post(
            "/api/watches", json={**body, **fields}, headers=self.org.headers
        )
        assert response.status_code == 201, response.get_json()
        return str(response.get_json()["id"])

    def check(self, watch_id: str) -> CheckResult:
        self.now += timedelta(seconds=1)
        with make_client(allow_private=True, timeout=5.0) as http:
            return run_check(
                self.database,
                watch_id,
                box=load_secret_box(self.settings),
                fetcher=contract_fetcher(self.settings, http),
                now=self.now,
            )

    def gate(self, watch_id: str) -> dict[str, Any]:
        response = self.client.post(
            "/api/preflight", json={"watchIds": [watch_id]}, headers=self.org.headers
        )
        assert response.status_code == 200, response.get_json()
        answer: dict[str, Any] = response.get_json()
        return answer

    def rules(self, result: CheckResult) -> dict[str, str]:
        with self.database.session() as session:
            event = session.get_one(DriftEvent, result.drift_event_id)
            return {c["rule"]: c["severity"] for c in decode_changes(event.changes)}

    def row(self, watch_id: str) -> Watch:
        with self.database.session() as session:
            return session.get_one(Watch, watch_id)


@pytest.fixture
def agent(
    client: FlaskClient, acme: OrgKey, database: Database, settings: Settings
) -> Iterator[Agent]:
    with spec_server() as cards, spec_server() as keys:
        yield Agent(client, acme, database, settings, cards, keys)


def test_a_card_re_signed_or_unsigned_blocks_the_gate(
    agent: Agent, owner_key: ECKey, attacker_key: ECKey
) -> None:
    agent.keys.set("/jwks.json", jwks(owner_key))
    agent.keys.set("/attacker.json", jwks(attacker_key))
    agent.serve(sign(card(), owner_key))
    watch_id = agent.watch(cardKeys={"jwksUrl": agent.keys.url("/jwks.json")})

    first = agent.check(watch_id)
    assert (first.outcome, first.status) == ("baseline", "ok")
    assert agent.gate(watch_id)["allowed"] is True

    # The owner signs again (a new ECDSA signature, the same card): the same snapshot.
    agent.serve(sign(card(), owner_key))
    assert agent.check(watch_id).outcome == "unchanged"

    # Someone else serves the card, signed with their key, its jku at their own key set.
    forged = sign(card(), attacker_key, jku=agent.keys.url("/attacker.json"))
    agent.serve(forged)
    drifted = agent.check(watch_id)
    assert (drifted.outcome, drifted.status) == ("changed", "drifted")
    assert agent.rules(drifted) == {"card-signature-untrusted": "breaking"}
    assert "/attacker.json" not in [path for _, path, _ in agent.keys.requests]
    answer = agent.gate(watch_id)
    assert answer["allowed"] is False
    (row,) = answer["blocked"]
    assert row["reasons"] == ["breaking_drift", "card_signature_invalid"]
    assert row["agentActions"][0] == "verify_agent_card"

    # Unsigned: still blocked, for its own reason.
    agent.serve(card())
    unsigned = agent.check(watch_id)
    assert unsigned.status == "drifted"
    assert agent.rules(unsigned) == {"card-signature-removed": "breaking"}
    assert agent.gate(watch_id)["allowed"] is False

    # Signed by the owner again: the baseline's verdict, the gate opens.
    agent.serve(sign(card(), owner_key))
    assert agent.check(watch_id).status == "ok"
    assert agent.gate(watch_id)["allowed"] is True


def test_a_changed_card_is_a_broken_signature_beside_its_contract_change(
    agent: Agent, owner_key: ECKey
) -> None:
    agent.serve(sign(card(), owner_key))
    watch_id = agent.watch(cardKeys={"keys": [public(owner_key)]})
    assert agent.check(watch_id).status == "ok"
    tampered = {**sign(card(), owner_key), "url": "https://evil.example/billing"}
    agent.serve(tampered)
    drifted = agent.check(watch_id)
    assert agent.rules(drifted) == {
        "card-signature-invalid": "breaking",
        "agent-url-changed": "warning",
    }


def test_a_first_check_of_an_unsigned_card_fails_closed(agent: Agent, owner_key: ECKey) -> None:
    agent.serve(card())
    watch_id = agent.watch(cardKeys={"keys": [public(owner_key)]})
    result = agent.check(watch_id)
    assert (result.outcome, result.status, result.failure_class) == (
        "error",
        "error",
        "invalid_contract",
    )
    watch = agent.row(watch_id)
    assert watch.baseline_snapshot_id is None and "not signed" in (watch.last_error or "")
    (row,) = agent.gate(watch_id)["blocked"]
    assert row["reasons"] == ["check_failed:invalid_contract"]


def test_a_key_set_that_cannot_be_read_fails_the_check(agent: Agent, owner_key: ECKey) -> None:
    agent.serve(sign(card(), owner_key))
    agent.keys.set("/broken.json", b'{"keys": "none"}')
    watch_id = agent.watch(cardKeys={"jwksUrl": agent.keys.url("/missing.json")})
    missing = agent.check(watch_id)
    assert (missing.status, missing.failure_class) == ("error", "http_error")
    assert "jwksUrl" in (agent.row(watch_id).last_error or "")
    agent.client.patch(
        f"/api/watches/{watch_id}",
        json={"cardKeys": {"jwksUrl": agent.keys.url("/broken.json")}},
        headers=agent.org.headers,
    )
    broken = agent.check(watch_id)
    assert (broken.status, broken.failure_class) == ("error", "invalid_contract")
    assert "not a JSON Web Key Set" in (agent.row(watch_id).last_error or "")


def test_the_assessor_never_fetches_a_jku_the_card_names(
    agent: Agent, owner_key: ECKey, attacker_key: ECKey
) -> None:
    agent.keys.set("/attacker.json", jwks(attacker_key))
    forged = sign(card(), attacker_key, jku=agent.keys.url("/attacker.json"))
    check = CheckInput(
        watch_id="w",
        org_id="o",
        watch_type="a2a_card",
        url=agent.cards.url(CARD_PATH),
        method=None,
        body=None,
        headers={},
        etag=None,
        last_modified=None,
        source_hash=None,
        baseline_snapshot_id=None,
        last_snapshot_id=None,
        card_keys={"keys": [public(owner_key)]},
    )
    with make_client(allow_private=True, timeout=5.0) as http:
        assess = build(agent.settings, http)
        verdict = assess(check, forged)
        assert verdict is not None
        assert (verdict["ok"], verdict["status"]) == (False, "untrusted")
        assert verdict["kids"] == ["attacker-1"] and "jku" in verdict["summary"]
        assert agent.keys.requests == []
        # A watch that names no keys asks nothing of its card.
        assert assess(replace(check, card_keys=None), forged) is None
