"""The console as an operations tool (issue 35, points 3, 6, 7, 8) through Flask's client on
the real app: the overview's tiles open the list they count, search stays in the org, a
watch is added from the list (a refused form stores nothing), admins invite members, change
roles and remove them (never the last admin), a free org's Ask shows no made-up figures,
and a running agent is not offered "Unblock"."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.portfolio.answers import FIXTURES
from controller.portfolio.ask import read
from controller.store.db import Database
from controller.store.models import User, Watch
from controller.store.types import utcnow
from tests.conftest import OrgKey
from tests.factories import csrf_of, make_user, sign_in
from tests.portfolio.seed import seed


def _form(client: FlaskClient, path: str, page: str, **form: str) -> tuple[int, str]:
    token = csrf_of(client.get(page).get_data(as_text=True))
    answer = client.post(path, data={"csrf_token": token, **form})
    return answer.status_code, answer.get_data(as_text=True)


def _watches(database: Database, org_id: str) -> int:
    with database.session() as session:
        return int(session.scalar(select(func.count()).where(Watch.org_id == org_id)) or 0)


def test_a_tile_opens_the_list_it_counts(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    with database.transaction() as session:
        seed(session, "acme", utcnow(), watches=40, events=100, incidents=20, jobs=1,
             org_id=acme.org_id)  # fmt: skip
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    overview = admin.get("/console/").get_data(as_text=True)
    tiles = dict(
        (label, (unescape(href), int(figure)))
        for href, figure, label in re.findall(
            r'<a class="tile" href="([^"]+)"><span class="figure">(\d+)</span> ([a-z ]+)</a>',
            overview,
        )
    )
    assert set(tiles) == {"watches", "drifted", "degraded", "stale", "open incidents"}
    assert tiles["drifted"][0] == "/console/watches?status=drifted"
    for label, (href, figure) in tiles.items():
        listed = admin.get(href)
        assert listed.status_code == 200, href
        rows = listed.get_data(as_text=True).count('<td data-label="Type">')
        assert rows == min(figure, 25), (label, rows, figure)
    drifted = admin.get(tiles["drifted"][0]).get_data(as_text=True)
    statuses = re.findall(r'<td data-label="Status"><span class="status (\w+)">', drifted)
    assert statuses and set(statuses) == {"drifted"}
    # A dashboard's tiles carry its filters; an unknown filter is a 400 page naming it.
    mcp = admin.get("/console/?dashboard=system.mcp-health").get_data(as_text=True)
    assert 'href="/console/watches?status=drifted&amp;type=mcp"' in mcp
    refused = admin.get("/console/watches?health=sideways")
    assert refused.status_code == 400 and "sideways" in refused.get_data(as_text=True)
    # MTTR in human units, never "0.01 h".
    assert re.search(
        r'<span class="figure">(–|\d+ (s|min|h|d)( \d+ (min|h))?)</span> MTTR', overview
    )


def test_search_finds_the_orgs_things_only(
    client: FlaskClient,
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
    database: Database,
    app: Flask,
) -> None:
    globex = make_org("globex")
    api = app.test_client()
    for who, name in ((acme, "payments-eu"), (acme, "payroll"), (globex, "payments-us")):
        made = api.post(
            "/api/watches",
            json={"name": name, "url": "https://api.example.com/openapi.json"},
            headers=who.headers,
        )
        assert made.status_code == 201, made.get_json()
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    assert 'role="search"' in admin.get("/console/").get_data(as_text=True)
    found = admin.get("/console/search?q=PAY").get_data(as_text=True)
    assert "payments-eu" in found and "payroll" in found and "payments-us" not in found
    assert "payroll" not in admin.get("/console/search?q=payments").get_data(as_text=True)
    link = re.search(r'href="(/console/watches/[^"]+)">payments-eu', found)
    assert link is not None and admin.get(link.group(1)).status_code == 200
    # Wildcards are literal; nothing found says so.
    assert "Nothing in acme" in admin.get("/console/search?q=%25").get_data(as_text=True)


def test_a_watch_is_added_from_the_list_and_a_refused_form_stores_nothing(
    client: FlaskClient, acme: OrgKey, database: Database, app: Flask
) -> None:
    make_user(database, "acme", "admin@example.com")
    make_user(database, "acme", "viewer@example.com", role="viewer")
    admin = sign_in(client, "admin@example.com")
    listed = admin.get("/console/watches").get_data(as_text=True)
    assert (
        "Add a watch" in listed
        and 'id="add-interval" name="interval" inputmode="numeric" value="15"' in listed
    )
    status, refused = _form(
        admin,
        "/console/watches",
        "/console/watches",
        name="orders",
        url="not a url",
        interval="soon",
    )
    assert status == 400
    assert re.search(r'id="add-url"[^>]*aria-invalid="true"', refused)
    assert re.search(r'id="add-url-error">[^<]*URL', refused, re.IGNORECASE)
    assert 'id="add-interval-error"' in refused and 'value="orders"' in refused
    assert _watches(database, acme.org_id) == 0
    url = "https://api.example.com/orders/openapi.json"
    added = admin.post(
        "/console/watches",
        data={
            "csrf_token": csrf_of(listed),
            "name": "orders",
            "url": url,
            "interval": "30",
            "tags": "vendor:example, team:ops",
        },
    )
    assert added.status_code == 302 and "/console/watches/" in added.headers["Location"]
    shown = admin.get("/api/watches").get_json()["watches"]
    assert [(w["name"], w["intervalMinutes"], sorted(w["tags"])) for w in shown] == [
        ("orders", 30, ["team:ops", "vendor:example"])
    ]
    status, twice = _form(admin, "/console/watches", "/console/watches", name="orders", url=url)
    assert status == 409 and 'id="add-name-error"' in twice
    assert _watches(database, acme.org_id) == 1
    viewer = sign_in(app.test_client(), "viewer@example.com")
    assert "Add a watch" not in viewer.get("/console/watches").get_data(as_text=True)
    assert _form(viewer, "/console/watches", "/console/watches", name="x", url=url)[0] == 403


def test_admins_invite_change_roles_and_remove_members(
    client: FlaskClient,
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
    database: Database,
    app: Flask,
) -> None:
    make_user(database, "acme", "admin@example.com")
    make_user(database, "acme", "viewer@example.com", role="viewer")
    make_org("globex")
    make_user(database, "globex", "g@example.com")
    admin = sign_in(client, "admin@example.com")
    settings = "/console/settings"
    status, invited = _form(
        admin, f"{settings}/members", settings, email="New@Example.com", role="viewer"
    )
    assert status == 201
    link = re.search(r'<code id="invite-link">([^<]+)</code>', invited)
    assert link is not None and "/console/set-password?token=" in link.group(1)
    path = link.group(1)[link.group(1).index("/console/") :]
    assert app.test_client().get(path).status_code == 200  # the one-time link works
    assert "new@example.com" in invited and "invited" in invited
    status, again = _form(admin, f"{settings}/members", settings, email="new@example.com")
    assert status == 409 and 'id="invite-error"' in again

    def member_id(email: str) -> str:
        with database.session() as session:
            return str(session.scalar(select(User.id).where(User.email == email)))

    me, viewer_id = member_id("admin@example.com"), member_id("viewer@example.com")
    # The last admin can be neither demoted nor removed.
    status, page = _form(admin, f"{settings}/members/{me}/role", settings, role="viewer")
    assert status == 409 and "last admin" in page
    assert _form(admin, f"{settings}/members/{me}/remove", settings)[0] == 409
    # A viewer cannot manage members; another org's member is 404.
    viewer = sign_in(app.test_client(), "viewer@example.com")
    assert "Invite a member" not in viewer.get(settings).get_data(as_text=True)
    assert _form(viewer, f"{settings}/members", settings, email="x@example.com")[0] == 403
    assert _form(viewer, f"{settings}/members/{me}/remove", settings)[0] == 403
    stranger = member_id("g@example.com")
    assert _form(admin, f"{settings}/members/{stranger}/remove", settings)[0] == 404
    assert _form(admin, f"{settings}/members/{stranger}/role", settings, role="viewer")[0] == 404
    # Promote the viewer; then the first admin may step down; remove the invited member.
    assert _form(admin, f"{settings}/members/{viewer_id}/role", settings, role="admin")[0] == 302
    assert _form(admin, f"{settings}/members/{me}/role", settings, role="viewer")[0] == 302
    promoted = sign_in(app.test_client(), "viewer@example.com")
    new_id = member_id("new@example.com")
    assert _form(promoted, f"{settings}/members/{new_id}/remove", settings)[0] == 302
    with database.session() as session:
        roles = dict(
            session.execute(select(User.email, User.role).where(User.org_id == acme.org_id)).all()
        )
    assert roles == {"admin@example.com": "viewer", "viewer@example.com": "admin"}


def test_a_free_orgs_ask_shows_no_made_up_figures(
    client: FlaskClient, make_org: Callable[..., OrgKey], database: Database
) -> None:
    free = make_org("freebie", "free")
    with database.transaction() as session:
        seed(session, "freebie", utcnow(), watches=10, events=50, incidents=5, jobs=1,
             org_id=free.org_id)  # fmt: skip
    make_user(database, "freebie", "f@example.com")
    asker = sign_in(client, "f@example.com")
    first = asker.get("/console/ask").get_data(as_text=True)
    assert "Live answers need the pro plan or higher" in first and "Try one of these" in first
    for question in ("what broke this week?", "MTTR last 90 days", "is any MCP server unhealthy?"):
        page = asker.get("/console/ask", query_string={"q": question}).get_data(as_text=True)
        assert "How the question reads" in page and "Would count" in page
        shown = unescape(page)
        for made_up in ("drift event(s)", "31 breaking", "19.5 h", "docs-search", "1 of 6"):
            assert made_up not in shown and made_up in " ".join(t for t, _ in FIXTURES.values())
        assert "example data" not in page and "stripe" not in page


def test_which_watches_drifted_counts_warning_drift(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    assert read("which watches drifted this week?").any_severity
    assert not read("what broke this week?").any_severity
    with database.transaction() as session:
        seed(session, "acme", utcnow(), watches=20, events=200, incidents=10, jobs=1,
             org_id=acme.org_id)  # fmt: skip
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    page = admin.get("/console/ask?q=which watches drifted in the last 90 days").get_data(
        as_text=True
    )
    assert "with breaking or warning changes" in page and "warning</a>" in page


def test_a_running_agent_is_not_offered_unblock(
    client: FlaskClient, acme: OrgKey, database: Database, app: Flask
) -> None:
    made = app.test_client().post(
        "/api/watches",
        json={"name": "payments", "url": "https://api.example.com/openapi.json"},
        headers=acme.headers,
    )
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    bound = admin.post(
        "/console/agents",
        data={
            "csrf_token": csrf_of(admin.get("/console/agents").get_data(as_text=True)),
            "key": "billing-bot",
            "watchId": made.get_json()["id"],
            "policy": "production-guard",
        },
    )
    agent_page = bound.headers["Location"]
    running = admin.get(agent_page).get_data(as_text=True)
    assert ">Kill</button>" in running and "Unblock" not in running
    assert _form(admin, f"{agent_page}/kill", agent_page, note="stop")[0] == 302
    killed = admin.get(agent_page).get_data(as_text=True)
    assert ">Unblock</button>" in killed and ">Kill</button>" not in killed
    listed = admin.get("/console/agents").get_data(as_text=True)
    assert re.search(r'<span class="status \w+">(allowed|blocked)</span>', listed)
