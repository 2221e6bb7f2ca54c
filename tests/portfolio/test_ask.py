"""Ask: the grammar over a table of phrasings, live answers whose citations resolve to real
objects of the org (and to nothing for another org), fixture answers on free plans and trial
sessions, and questions that are not understood."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flask.testing import FlaskClient

from controller.portfolio.ask import read
from controller.store.db import Database
from tests.conftest import OrgKey
from tests.portfolio.seed import seed

VENDORS = [
    "api.stripe.example.com",
    "api.github.example.com",
    "mcp.docs.example.dev",
    "twilio-tagged",
]
TAGS = ["team:billing", "team:core"]

# (question, intent, days, vendor, tag, watch type)
PHRASINGS: list[tuple[str, str | None, int, str | None, str | None, str | None]] = [
    ("which vendors broke us most this quarter?", "hotspots", 90, None, None, None),
    ("is any MCP server unhealthy?", "mcp_health", 30, None, None, "mcp"),
    ("MTTR for stripe last 90 days", "mttr", 90, "api.stripe.example.com", None, None),
    ("what broke this week?", "breaking_drift", 7, None, None, None),
    (
        "breaking drift for github in the last 2 weeks",
        "breaking_drift",
        14,
        "api.github.example.com",
        None,
        None,
    ),
    ("how fast do we repair drift this quarter?", "mttr", 90, None, None, None),
    ("mean time to repair for twilio-tagged", "mttr", 30, "twilio-tagged", None, None),
    ("mean time to recover this year", "mttr", 365, None, None, None),
    ("time to fix breaking changes last month", "mttr", 30, None, None, None),
    ("how long does it take us to resolve incidents?", "mttr", 30, None, None, None),
    ("mcp health", "mcp_health", 30, None, None, "mcp"),
    ("are the MCP servers healthy today?", "mcp_health", 1, None, None, "mcp"),
    ("which mcp servers are down", "mcp_health", 30, None, None, "mcp"),
    ("status of our mcp tools", "mcp_health", 30, None, None, "mcp"),
    ("is the docs mcp server failing?", "mcp_health", 30, "mcp.docs.example.dev", None, "mcp"),
    ("top hotspots", "hotspots", 30, None, None, None),
    ("worst vendors this year", "hotspots", 365, None, None, None),
    ("which vendor changes the most?", "hotspots", 30, None, None, None),
    ("noisiest contracts in the past 3 months", "hotspots", 90, None, None, None),
    ("hotspots for tag team:billing", "hotspots", 30, None, "team:billing", None),
    ("coverage gaps", "coverage_gaps", 30, None, None, None),
    ("which watches are stale?", "coverage_gaps", 30, None, None, None),
    ("what was never run", "coverage_gaps", 30, None, None, None),
    ("gaps in team:core", "coverage_gaps", 30, None, "team:core", None),
    ("is stripe covered?", "coverage_gaps", 30, "api.stripe.example.com", None, None),
    ("did anything break yesterday", "breaking_drift", 2, None, None, None),
    (
        "breaking changes in openapi contracts last 10 days",
        "breaking_drift",
        10,
        None,
        None,
        "openapi",
    ),
    (
        "what drifted for github this month",
        "breaking_drift",
        30,
        "api.github.example.com",
        None,
        None,
    ),
    ("mcp drift in the past week", "breaking_drift", 7, None, None, "mcp"),
    ("did the stripe API change?", "breaking_drift", 30, "api.stripe.example.com", None, None),
    (
        "breaking drift tagged team:billing last 45 days",
        "breaking_drift",
        45,
        None,
        "team:billing",
        None,
    ),
    ("what's the weather like?", None, 30, None, None, None),
    ("hello", None, 30, None, None, None),
]


@pytest.mark.parametrize(
    ("question", "intent", "days", "vendor", "tag", "watch_type"),
    PHRASINGS,
    ids=range(len(PHRASINGS)),
)
def test_the_grammar_reads_each_phrasing(
    question: str,
    intent: str | None,
    days: int,
    vendor: str | None,
    tag: str | None,
    watch_type: str | None,
) -> None:
    reading = read(question, VENDORS, TAGS)
    assert (reading.intent, reading.days, reading.vendor, reading.tag, reading.watch_type) == (
        intent,
        days,
        vendor,
        tag,
        watch_type,
    )


def test_live_answers_cite_the_orgs_own_objects(
    client: FlaskClient, make_org: Callable[..., OrgKey], database: Database
) -> None:
    acme = make_org("acme", "pro")
    other = make_org("other", "pro")
    with database.transaction() as session:
        seed(
            session,
            "acme",
            datetime.now(UTC),
            org_id=acme.org_id,
            watches=60,
            events=800,
            incidents=80,
        )
        seed(
            session,
            "other",
            datetime.now(UTC),
            org_id=other.org_id,
            watches=10,
            events=50,
            incidents=10,
            seed_value=3,
        )

    def ask(question: str, who: OrgKey = acme) -> dict[str, Any]:
        answer = client.post("/api/ask", json={"question": question}, headers=who.headers)
        assert answer.status_code == 200, answer.get_json()
        return dict(answer.get_json())

    seen_intents = set()
    for question in (
        "what broke in the last 90 days?",
        "which vendors broke us most this quarter?",
        "MTTR for stripe last 180 days",
        "is any MCP server unhealthy?",
        "coverage gaps",
    ):
        answered = ask(question)
        assert answered["fixture"] is False and answered["answer"]
        seen_intents.add(answered["intent"])
        assert answered["citations"], question
        for citation in answered["citations"]:
            assert client.get(citation["url"], headers=acme.headers).status_code == 200, citation
            assert client.get(citation["url"], headers=other.headers).status_code == 404
    assert seen_intents == {"breaking_drift", "hotspots", "mttr", "mcp_health", "coverage_gaps"}
    stripe = ask("MTTR for stripe last 180 days")
    assert (
        stripe["filters"]["vendor"] == "api.stripe.example.com" and stripe["filters"]["days"] == 180
    )
    assert all("stripe" in r["key"] for r in stripe["data"]["mttr"]["byVendor"])

    unknown = ask("what's the weather like?")
    assert unknown["intent"] == "unknown" and len(unknown["intents"]) == 5
    assert client.post("/api/ask", json={"question": ""}, headers=acme.headers).status_code == 400


@pytest.mark.hosted_routes
def test_free_plans_and_trial_sessions_get_fixture_answers(
    client: FlaskClient, make_org: Callable[..., OrgKey], database: Database
) -> None:
    free = make_org("freebie", "free")
    with database.transaction() as session:
        seed(
            session,
            "freebie",
            datetime.now(UTC),
            org_id=free.org_id,
            watches=10,
            events=50,
            incidents=5,
        )
    answered = client.post(
        "/api/ask", json={"question": "what broke this week?"}, headers=free.headers
    ).get_json()
    assert answered["fixture"] is True and answered["citations"] == []
    assert answered["answer"].startswith("Example answer on fixture data")
    trial = client.post("/api/trial/session", json={}).get_json()
    token = trial.get("token") or trial.get("trialToken") or trial.get("sessionToken")
    assert token, trial
    by_trial = client.post(
        "/api/ask",
        json={"question": "is any MCP server unhealthy?"},
        headers={"X-Service-Trial": token},
    )
    assert by_trial.status_code == 200 and by_trial.get_json()["fixture"] is True
    assert by_trial.get_json()["intent"] == "mcp_health"
    assert client.post("/api/ask", json={"question": "mttr"}).status_code == 401
