"""Who is blocked, at a glance (issue 43, point 7), through Flask's client on a real store, a
real git source and a real loopback webhook receiver:

- the overview's "Blocked now": killed and gate-blocked agents, stalled sources and failing
  destinations, each linked and explained, and a plain sentence when nothing is;
- a watch's page lists its bound agents and whether the gate blocks them now, and its checks
  never read "healthy" beside "drifted";
- an agent whose policy needs an acknowledgement before unblocking offers Acknowledge first
  and Unblock disabled until then;
- MTTR under a minute to the tenth of a second; deliveries name scheme, host, port and path;
  every activity row names its object (a deleted watch by the name it had); the source's
  "Now" line reads a time as every page does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

from flask.testing import FlaskClient

from controller.crypto import load_secret_box
from controller.events.delivery import deliver_due
from controller.events.outbox import emit
from controller.settings import Settings
from controller.sources.http import configured_client
from controller.store.db import Database
from controller.store.models import Incident, OutboxMessage
from tests.conftest import OrgKey
from tests.console.conftest import post
from tests.factories import TEMPLATES, make_user, make_watch, run, set_state, sign_in
from tests.gitrepos import RepoBuilder
from tests.receivers import Receiver

BAD_AGENTS = "version: 1\nagents:\n  - id: bad-bot\n    polcy: notify-only\n    watches: []\n"


def _text(html: str) -> str:
    """A page's text without its tags, its whitespace squeezed (none before punctuation)."""
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))
    return re.sub(r" ([:;,.)])", r"\1", text)


def _blocked(page: str) -> str:
    """The overview's "Blocked now" section."""
    found = re.search(r'<section class="card blocked-now[^"]*".*?</section>', page, re.S)
    assert found is not None, page
    return found.group(0)


def _bind(admin: FlaskClient, key: str, watch_id: str, policy: str) -> None:
    form = {"key": key, "watchId": watch_id, "policy": policy}
    assert post(admin, "/console/agents", "/console/agents", **form) == 302


def test_the_overview_says_who_is_blocked_and_why(
    repo: RepoBuilder,
    make_reconciler: Callable[..., Any],
    acme: OrgKey,
    database: Database,
) -> None:
    from web.app import create_app

    repo.commit({".driftgate/templates.yaml": TEMPLATES})
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, allow_private_targets=True
    )
    assert run(reconciler, settings).result == "applied"
    app = create_app(settings, database=database)
    api = app.test_client()
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(app.test_client(), "admin@example.com")

    # Nothing yet: said plainly.
    clear = _text(_blocked(admin.get("/console/").get_data(as_text=True)))
    assert "Nothing is blocked: every agent may run" in clear

    # A drifted watch with an open incident blocks its production-guard agent (the policy's
    # block); another agent, on a watch that is fine, is killed by hand.
    payments = make_watch(api, acme, "payments")
    orders = make_watch(api, acme, "orders")
    _bind(admin, "billing-bot", payments, "production-guard")
    _bind(admin, "report-bot", orders, "notify-only")
    set_state(database, orders, "ok")
    set_state(database, payments, "drifted", incident="open")
    assert post(admin, "/console/agents/report-bot/kill", "/console/agents/report-bot") == 302
    # A bad commit stalls the source; the applied state keeps serving.
    repo.commit({".driftgate/agents.yaml": BAD_AGENTS}, message="bad")
    assert run(reconciler, settings).result == "stalled"
    # The org's destination fails every delivery.
    receiver = Receiver(fail_first=1000)
    try:
        _failing_delivery(api, acme, database, settings, receiver)
        page = admin.get("/console/").get_data(as_text=True)
        section = _blocked(page)
        text = _text(section)
        assert "2 agents, 1 git source, 1 destination" in text
        assert 'href="/console/agents/billing-bot"' in section
        assert (
            "payments: breaking drift, not acknowledged; the policy blocks new runs "
            "(block_new_runs, kill_in_flight)" in text
        )
        assert "Policy production-guard: preflight refuses (409)" in text
        assert f'href="/console/watches/{payments}"' in section
        assert 'href="/console/agents/report-bot"' in section
        assert "report-bot killed by console:admin@example.com just now" in text
        assert 'href="/console/sources/fleet"' in section
        assert re.search(r"fleet stalled a revision failed validation.*polcy", text)
        port = receiver.url.split(":")[2].split("/")[0]
        assert f"webhook http://127.0.0.1:{port}/hook failing" in text
        assert "1 message being retried (incident.open" in text
        assert "last error: HTTP 500" in text
        # The agent the gate lets run is not listed; neither is the healthy watch.
        assert "orders:" not in text

        # The destination takes the next message: it works again, and leaves the list.
        receiver.fail_first = 0
        _failing_delivery(api, acme, database, settings, receiver, expect="delivered")
        text = _text(_blocked(admin.get("/console/").get_data(as_text=True)))
        assert "2 agents, 1 git source, 0 destinations" in text
        assert "failing" not in text.replace("validation", "")

        # The activity names the destination in full (the API's stats keep the host only).
        activity = _text(admin.get("/console/activity?kind=delivery").get_data(as_text=True))
        assert f"incident.open to webhook http://127.0.0.1:{port}/hook: retrying" in activity
        assert f"incident.open to webhook http://127.0.0.1:{port}/hook: delivered" in activity
        stats = api.get("/api/alerts/stats", headers=acme.headers).get_json()
        assert {a["destination"] for a in stats["lastAttempts"]} == {"http://127.0.0.1"}
    finally:
        receiver.close()

    # The watch's page: its bound agent, blocked by it; checks that work beside "drifted".
    watch = admin.get(f"/console/watches/{payments}").get_data(as_text=True)
    agents = re.search(r'aria-labelledby="agents-heading">.*?</section>', watch, re.S)
    assert agents is not None
    listed = _text(agents.group(0))
    assert (
        "billing-bot production-guard running blocked this watch: breaking drift, not acknowledged"
        in listed
    )
    assert 'href="/console/agents/billing-bot"' in agents.group(0)
    facts = _text(watch.split('class="facts"')[1].split("</dl>")[0])
    assert "Drift drifted the contract differs from its baseline" in facts
    assert "Checks working every 15 min" in facts and "healthy" not in watch, facts
    assert "reached the contract" in facts
    assert "Acknowledge first: this incident blocks billing-bot" in _text(watch)
    quiet = _text(admin.get(f"/console/watches/{orders}").get_data(as_text=True))
    assert "report-bot notify-only killed blocked killed by console:admin@example.com" in quiet

    # Acknowledged, the incident no longer blocks the agent; a killed agent still is.
    assert post(admin, f"/console/watches/{payments}/incident/ack", "/console/", note="ok") == 302
    text = _text(_blocked(admin.get("/console/").get_data(as_text=True)))
    assert "1 agent, 1 git source" in text and "billing-bot" not in text
    assert "report-bot" in text


def _failing_delivery(
    api: FlaskClient,
    acme: OrgKey,
    database: Database,
    settings: Settings,
    receiver: Receiver,
    expect: str = "retrying",
) -> None:
    """An event for the org's destination (the receiver), delivered once, now."""
    box = load_secret_box(settings)
    answer = api.put(
        "/api/org/notification-defaults",
        headers=acme.headers,
        json={"destination": {"kind": "webhook", "url": receiver.url}},
    )
    assert answer.status_code == 200, answer.get_json()
    now = datetime.now(UTC)
    with database.transaction() as session:
        data = {"watchId": "w1", "watchName": "payments"}
        (message,) = emit(
            session, box, org_id=acme.org_id, event_type="incident.open", data=data, now=now
        )
        ident = message.id
    with configured_client(settings) as client:
        assert deliver_due(database, box, client, now, ids=[ident]) == 1
    with database.session() as session:
        assert session.get_one(OutboxMessage, ident).status == expect


def test_acknowledge_comes_before_unblock_when_the_policy_needs_it(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    watch = make_watch(client, acme, "payments")
    _bind(admin, "billing-bot", watch, "production-guard")
    set_state(database, watch, "drifted", incident="open")
    page = "/console/agents/billing-bot"
    assert post(admin, f"{page}/kill", page, note="stop") == 302
    shown = admin.get(page).get_data(as_text=True)
    actions = shown.split('aria-label="Actions"')[1]
    assert actions.index(">Acknowledge</button>") < actions.index(">Unblock</button>")
    assert re.search(
        r'<button type="submit" disabled aria-describedby="unblock-why">Unblock', actions
    )
    assert "requires acknowledgement before unblocking: acknowledge the open incident first" in (
        _text(actions)
    )
    # The server refuses an Unblock sent anyway, as the API does.
    assert post(admin, f"{page}/unblock", page) == 409
    assert post(admin, f"{page}/ack", page, note="fixing") == 302
    after = admin.get(page).get_data(as_text=True).split('aria-label="Actions"')[1]
    assert ">Acknowledge</button>" not in after
    assert '<button type="submit">Unblock</button>' in after
    assert post(admin, f"{page}/unblock", page) == 302
    # A policy without that rule: Unblock is offered at once.
    other = make_watch(client, acme, "orders")
    _bind(admin, "report-bot", other, "staging-strict")
    set_state(database, other, "drifted", incident="open")
    assert post(admin, "/console/agents/report-bot/kill", "/console/agents/report-bot") == 302
    loose = admin.get("/console/agents/report-bot").get_data(as_text=True)
    assert '<button type="submit">Unblock</button>' in loose
    assert "requires acknowledgement before unblocking" not in loose


def test_mttr_reads_to_the_tenth_of_a_second(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    watch = make_watch(client, acme, "payments")
    resolved = datetime.now(UTC) - timedelta(hours=1)
    with database.transaction() as session:
        session.add(
            Incident(
                org_id=acme.org_id,
                watch_id=watch,
                status="resolved",
                breaking_count=1,
                opened_at=resolved - timedelta(seconds=9.6),
                resolved_at=resolved,
                resolution="reverted",
            )
        )
    # The API keeps its hours to 0.01: 9.6 s is 0.0 h there.
    figures = client.get("/api/portfolio/overview", headers=acme.headers).get_json()
    assert figures["analytics"]["mttr"]["overallHours"] == 0.0
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    overview = admin.get("/console/").get_data(as_text=True)
    assert '<span class="figure">9.6 s</span> MTTR' in overview
    assert ">9.6 s</text>" in overview  # the vendor chart's bar
    # Ask writes it in the same units; its figures keep the API's hours.
    answer = client.post("/api/ask", json={"question": "mttr"}, headers=acme.headers)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["answer"].startswith("Mean time to repair: 9.6 s over 1 resolved")
    assert answer.get_json()["data"]["mttr"]["overallHours"] == 0.0


def test_every_activity_row_names_its_object(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    doomed = make_watch(client, acme, "doomed")
    kept = make_watch(client, acme, "kept")
    assert client.delete(f"/api/watches/{doomed}", headers=acme.headers).status_code == 204
    assert post(admin, "/console/settings/keys", "/console/settings/keys", name="ci") == 201
    entries = re.findall(
        r'<li class="entry kind-\w+">(.*?)</li>',
        admin.get("/console/activity").get_data(as_text=True),
        re.S,
    )
    rows = [_text(e).strip() for e in entries]
    assert any(f"Watch deleted · doomed ({doomed}, deleted)" in r for r in rows), rows
    assert any(f"Watch created · doomed ({doomed}, deleted)" in r for r in rows), rows
    assert any("Watch created · kept" in r for r in rows), rows
    assert any("API key created · ci" in r for r in rows), rows
    assert any("user: create · admin@example.com" in r for r in rows), rows
    assert any("org: create · acme" in r for r in rows), rows
    for row in rows:
        assert " · " in row.split(" · by ")[0], f"an activity row names no object: {row}"
    # A deleted watch is not linked (its page is gone); the kept one is.
    page = admin.get("/console/activity").get_data(as_text=True)
    assert f'href="/console/watches/{doomed}"' not in page
    assert f'href="/console/watches/{kept}"' in page


def test_one_time_format_on_a_sources_now_line(
    repo: RepoBuilder,
    make_reconciler: Callable[..., Any],
    acme: OrgKey,
    database: Database,
) -> None:
    from web.app import create_app

    repo.commit({".driftgate/templates.yaml": TEMPLATES})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    app = create_app(settings, database=database)
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(app.test_client(), "admin@example.com")
    strip = admin.get("/console/live/sources/fleet").get_data(as_text=True)
    assert re.search(
        r"last run applied, <time datetime=\"[^\"]+\" title=\"\d{4}-\d\d-\d\d \d\d:\d\d UTC\">",
        strip,
    )
    # No raw ISO timestamp anywhere on the source's pages.
    for path in ("/console/live/sources/fleet", "/console/sources/fleet", "/console/sources"):
        shown = _text(admin.get(path).get_data(as_text=True))
        assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", shown), (path, shown)
