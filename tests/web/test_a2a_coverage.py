"""`POST /api/a2a/coverage/assert`: the hosted agents manifest's watches against the org's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient

from controller.store.db import Database
from controller.store.models import Watch
from tests.conftest import OrgKey

ROUTE = "/api/a2a/coverage/assert"
CARD = "https://billing.acme.test/.well-known/agent.json"
MCP = "https://mcp.acme.test/sse"


def manifest(**agent: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "agents": [
            {
                "id": "billing-refund",
                "slug": "billing-refund",
                "environment": "staging",
                "policy": "staging-strict",
                "a2a": {"cardUrl": CARD},
                "mcp": {"configPath": ".cursor/mcp.json", "skillToolMap": {"refund": ["r"]}},
                "watches": [{"type": "a2a_card", "url": CARD}, {"type": "mcp", "url": MCP}],
                **agent,
            }
        ],
    }


def add_watch(database: Database, org: OrgKey, name: str, url: str, kind: str) -> str:
    with database.transaction() as session:
        watch = Watch(org_id=org.org_id, name=name, url=url, watch_type=kind)
        session.add(watch)
        session.flush()
        return watch.id


def test_missing_watches_are_422_then_200_once_registered(
    client: FlaskClient, acme: OrgKey, database: Database, make_org: Callable[..., OrgKey]
) -> None:
    other = make_org("globex", "pro")
    add_watch(database, other, "card", CARD, "a2a_card")  # another org's never counts
    add_watch(database, acme, "card-as-rest", CARD, "rest")  # the type must match too
    headers = {**acme.headers, "X-DriftGuard-CI-Repo": "acme/billing"}
    answer = client.post(ROUTE, json={"manifest": manifest()}, headers=headers)
    assert answer.status_code == 422
    body = answer.get_json()
    assert body["ok"] is False and body["error"] == "missing_watches"
    assert body["missingWatchUrls"] == [CARD, MCP]
    assert body["agents"][0]["id"] == "billing-refund"
    assert body["agents"][0]["missingWatches"] == [
        {"type": "a2a_card", "url": CARD},
        {"type": "mcp", "url": MCP},
    ]
    assert body["repo"] == "acme/billing"

    card = add_watch(database, acme, "card", CARD + "/", "a2a_card")  # a trailing slash
    answer = client.post(ROUTE, json={"manifest": manifest(), "repo": "acme/x"}, headers=headers)
    assert answer.status_code == 422
    assert answer.get_json()["missingWatchUrls"] == [MCP]
    assert answer.get_json()["repo"] == "acme/x"  # the body wins over the header

    tools = add_watch(database, acme, "tools", MCP, "mcp")
    answer = client.post(ROUTE, json={"manifest": manifest()}, headers=acme.headers)
    assert answer.status_code == 200
    body = answer.get_json()
    assert body["ok"] is True and body["missingWatchUrls"] == []
    assert [w["watchId"] for w in body["agents"][0]["watches"]] == [card, tools]
    assert body["agents"][0]["missingWatches"] == []
    with database.session() as session:  # read-only: nothing was created
        assert len(session.query(Watch).all()) == 4


def test_an_api_watch_is_a_rest_watch_and_a_reference_matches_by_name(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    add_watch(database, acme, "ledger", "https://ledger.acme.test/v2", "rest")
    document = manifest(
        a2a=None,
        mcp=None,
        watches=[{"type": "api", "url": "https://ledger.acme.test/v2"}, "ledger"],
    )
    del document["agents"][0]["a2a"], document["agents"][0]["mcp"]
    answer = client.post(ROUTE, json={"manifest": document}, headers=acme.headers)
    assert answer.status_code == 200, answer.get_json()
    # The hosted `api` covers an HTTP API driftgate watches as `openapi` too (one family);
    # an `mcp` watch of the URL does not.
    add_watch(database, acme, "spec", "https://spec.acme.test/openapi.json", "openapi")
    add_watch(database, acme, "tools", "https://tools.acme.test/mcp", "mcp")
    document["agents"][0]["watches"] = [
        {"type": "api", "url": "https://spec.acme.test/openapi.json"},
        {"type": "api", "url": "https://tools.acme.test/mcp"},
    ]
    answer = client.post(ROUTE, json={"manifest": document}, headers=acme.headers)
    assert answer.status_code == 422, answer.get_json()
    assert answer.get_json()["missingWatchUrls"] == ["https://tools.acme.test/mcp"]


def test_a_bad_manifest_is_refused_with_pointers(client: FlaskClient, acme: OrgKey) -> None:
    bad = manifest(policy="whatever", runtime_webhook="http://hook.acme.test/x")
    answer = client.post(ROUTE, json={"manifest": bad}, headers=acme.headers)
    assert answer.status_code == 400
    body = answer.get_json()
    assert body["error"] == "validation_error"
    assert body["details"] == [
        {
            "path": "/manifest/agents/0/runtime_webhook",
            "message": "runtime_webhook must be an https:// URL",
        }
    ]
    # What no schema can state is 422, with the same envelope.
    no_card = manifest(watches=[{"type": "mcp", "url": MCP}])
    answer = client.post(ROUTE, json={"manifest": no_card}, headers=acme.headers)
    assert answer.status_code == 422 and answer.get_json()["error"] == "validation_error"
    assert [d["path"] for d in answer.get_json()["details"]] == ["/manifest/agents/0/a2a/cardUrl"]
    assert client.post(ROUTE, json={}, headers=acme.headers).status_code == 400


def test_it_needs_a_key_on_a_plan_with_the_coverage_gate(
    client: FlaskClient, make_org: Callable[..., OrgKey]
) -> None:
    free = make_org("freebie", "free")
    assert client.post(ROUTE, json={"manifest": manifest()}).status_code == 401
    refused = client.post(ROUTE, json={"manifest": manifest()}, headers=free.headers)
    assert refused.status_code == 403
