"""The console in a real browser: Debian's Chromium driven by Playwright against `driftgate
up` (gunicorn and the controller) on a loopback port, on the test's store, with a loopback
spec server and a git source. The tour: set a password and sign in, create a key and use it
against the API, acknowledge an incident a real check produced, bind, kill and unblock an
agent, switch a product, follow a bad commit's problem to its file:line, ask a question.
Screenshots of each page go to `test-artifacts/console/` (kept by CI as artifacts).

Chromium comes from the system (`apt-get install chromium`; `.ci/run` installs it): without
it these tests skip, unless DRIFTGATE_REQUIRE_BROWSER=1 (CI sets it), where they fail.
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from controller.accounts import service as accounts
from controller.orgs.service import get_org
from controller.store.db import Database
from controller.store.types import utcnow
from tests.conftest import OrgKey
from tests.console.browser import (  # noqa: F401 - the fixtures
    PASSWORD,
    browser,
    repo,
    server,
    shot,
    shown,
    spec,
)
from tests.processes import PATIENCE
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

# Every page at a desktop's and a phone's size: nothing clips. A table either fits its box or
# sits in a box that scrolls sideways with a visible cue (class `scroll`: edge shadows); the
# page itself never scrolls sideways; chart text stays legible.
WIDTHS = {"desktop": (1440, 900), "phone": (390, 844)}
CLIPPED = """() => {
  const found = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width) {
    found.push(`the page is ${document.documentElement.scrollWidth} px wide in ${width}`);
  }
  for (const table of document.querySelectorAll("table")) {
    let box = table.parentElement;
    const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
    while (box && box !== document.body && !scrolls(box)) {
      box = box.parentElement;
    }
    const name = table.querySelector("th, td")?.textContent.trim() || "table";
    if (!box || box === document.body) {
      if (table.getBoundingClientRect().right > width + 1) found.push(`${name}: past the screen`);
    } else if (box.scrollWidth > box.clientWidth + 1 && !box.classList.contains("scroll")) {
      found.push(`${name}: clipped (${box.scrollWidth} px in ${box.clientWidth}) with no cue`);
    }
  }
  for (const text of document.querySelectorAll("svg.chart text")) {
    const height = text.getBoundingClientRect().height;
    if (height && height < 9) found.push(`chart text ${height.toFixed(1)} px high`);
  }
  return found;
}"""


def test_every_page_fits_a_desktop_and_a_phone(
    server: str,  # noqa: F811
    browser: Any,  # noqa: F811
    acme: OrgKey,
    database: Database,
    spec: SpecServer,  # noqa: F811
) -> None:
    with database.transaction() as session:
        _user, token = accounts.create_user(
            session, get_org(session, "acme"), "lead@example.com", "admin", actor="t", now=utcnow()
        )
        accounts.set_password(session, token, PASSWORD, utcnow())
    api = httpx.Client(base_url=server, headers=acme.headers, timeout=90)
    url = spec.set("/openapi.json", as_json(charges_spec()))
    watch = api.post(
        "/api/watches", json={"name": "payments", "url": url, "tags": ["vendor:stripe"]}
    ).json()
    assert api.post(f"/api/watches/{watch['id']}/check?wait=60").status_code == 200
    spec.set("/openapi.json", as_json(charges_spec(refunds=False)))
    api.post(f"/api/watches/{watch['id']}/check?wait=60")
    api.post(
        "/api/templates",
        json={
            "name": "orders",
            "watchType": "openapi",
            "urlPattern": "https://{host}/openapi.json",
        },
    )
    event = api.get(f"/api/drift?watchId={watch['id']}").json()["events"][0]["id"]
    # A diff run's page, and a trip for the agent's trips table.
    run = api.post(
        "/api/openapi/diffs",
        json={"before": charges_spec(), "after": charges_spec(refunds=False), "source": "cli"},
    ).json()
    trip = {"tripId": "run-7:step-3", "reason": "budget_exceeded", "agentId": "billing-bot"}
    assert api.post("/v1/fuse/trips", json={**trip, "tool": "refund"}).status_code == 201
    api.close()
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(20_000)
    page.goto(f"{server}/console/sign-in")
    page.get_by_label("E-mail").fill("lead@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server}/console/")
    page.goto(f"{server}/console/agents")
    page.get_by_label("Agent id").fill("billing-bot")
    page.get_by_label("Watch", exact=True).select_option(label="payments")
    page.get_by_role("button", name="Bind").click()
    page.wait_for_url(re.compile(r".*/console/agents/[^/]+$"))
    agent = page.url[len(server) :]
    # The drifted tile opens the list filtered to drifted watches.
    page.goto(f"{server}/console/")
    page.get_by_role("link", name=re.compile(r"^\d+ drifted$")).click()
    page.wait_for_url(re.compile(r".*/console/watches\?status=drifted$"))
    shown(page.get_by_role("link", name="payments"))
    pages = {
        "overview": "/console/",
        "watches": "/console/watches",
        "watch": f"/console/watches/{watch['id']}",
        "drift-event": f"/console/watches/{watch['id']}/events/{event}",
        "agents": "/console/agents",
        "agent": agent,
        "sources": "/console/sources",
        "source": "/console/sources/fleet",
        "templates": "/console/templates",
        "ask": "/console/ask",
        "ask-answer": "/console/ask?q=which+watches+drifted+this+week",
        "search": "/console/search?q=pay",
        "settings": "/console/settings",
        "api-keys": "/console/settings/keys",
        "plans": "/console/plans",
        "diff-run": f"/console/diffs/{run['id']}",
    }
    for size, (width, height) in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        for name, path in pages.items():
            page.goto(f"{server}{path}")
            if name == "overview":
                page.get_by_role("heading", name="Coverage by vendor").wait_for()
            assert page.evaluate(CLIPPED) == [], f"{name} at {width}x{height}"
            shot(page, f"{name}-{size}")


def test_the_console_tour(
    server: str,  # noqa: F811
    browser: Any,  # noqa: F811
    acme: OrgKey,
    database: Database,
    spec: SpecServer,  # noqa: F811
    request: pytest.FixtureRequest,
) -> None:
    with database.transaction() as session:
        _user, token = accounts.create_user(
            session, get_org(session, "acme"), "lead@example.com", "admin", actor="t", now=utcnow()
        )
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(20_000)

    # Set the password through the link, sign in.
    page.goto(accounts.setup_link(server, token))
    page.get_by_label("New password").fill(PASSWORD)
    page.get_by_label("The same again").fill(PASSWORD)
    page.get_by_role("button", name="Set password").click()
    page.wait_for_url(re.compile(r".*/console/sign-in.*"))
    shot(page, "sign-in")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server}/console/")
    shown(page.get_by_role("heading", name="Overview of acme"))

    # A key, created in the console, works against the API.
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key").inner_text()
    shot(page, "api-keys")
    api = httpx.Client(base_url=server, headers={"Authorization": f"Bearer {secret}"}, timeout=90)
    request.addfinalizer(api.close)
    url = spec.set("/openapi.json", as_json(charges_spec()))
    watch = api.post("/api/watches", json={"name": "payments", "url": url}).json()
    assert api.post(f"/api/watches/{watch['id']}/check?wait=60").status_code == 200
    spec.set("/openapi.json", as_json(charges_spec(refunds=False)))
    drifted = api.post(f"/api/watches/{watch['id']}/check?wait=60").json()
    assert drifted["watch"]["driftStatus"] == "drifted"

    # The incident, acknowledged from the watch's page.
    page.get_by_role("link", name="Watches").click()
    shot(page, "watches")
    page.get_by_role("link", name="payments").click()
    page.get_by_label("Note").fill("on it")
    page.get_by_role("button", name="Acknowledge incident").click()
    shown(page.get_by_text("acknowledged since", exact=False))
    shot(page, "watch")
    page.get_by_role("link", name=re.compile(r"\d{4}-\d\d-\d\d")).first.click()
    shown(page.get_by_text("/v1/refunds", exact=False).first)
    shot(page, "drift-event")
    assert api.get(f"/api/watches/{watch['id']}/status").json()["incident"]["status"] == (
        "acknowledged"
    )

    # An agent bound here, killed and unblocked.
    page.get_by_role("link", name="Agents").click()
    page.get_by_label("Agent id").fill("billing-bot")
    page.get_by_label("Watch").select_option(label="payments")
    page.get_by_label("Policy (for a new agent)").select_option("production-guard")
    page.get_by_role("button", name="Bind").click()
    page.get_by_role("button", name="Kill").click()
    shown(page.get_by_role("button", name="Unblock"))
    assert api.get("/api/agents/billing-bot/status").json()["runtime"]["state"] == "killed"
    shot(page, "agent")
    # The overview says who is blocked: the killed agent, linked, and why.
    page.get_by_role("link", name="Overview").click()
    blocked = page.get_by_role("region", name="Blocked now")
    killed = blocked.locator("li.blocked-agent", has_text="billing-bot")
    assert "killed by console:lead@example.com" in killed.inner_text()
    shot(page, "overview-blocked")
    killed.get_by_role("link", name="billing-bot").click()
    page.wait_for_url(re.compile(r".*/console/agents/billing-bot$"))
    page.get_by_role("button", name="Unblock").click()
    shown(page.get_by_role("button", name="Kill"))
    assert api.get("/api/agents/billing-bot/status").json()["runtime"]["state"] == "running"
    # Running again, and its incident acknowledged: off the list. The bad commit's source is
    # on it (once the controller has reconciled it), linked to its page.
    page.get_by_role("link", name="Overview").click()
    deadline = time.monotonic() + 30
    while not blocked.locator("li.blocked-source").count() and time.monotonic() < deadline:
        time.sleep(0.5)
        page.reload()
    assert "billing-bot" not in blocked.inner_text()
    stalled = blocked.locator("li.blocked-source")
    assert "fleet stalled" in stalled.inner_text() and "polcy" in stalled.inner_text()
    assert stalled.get_by_role("link", name="fleet").get_attribute("href") == (
        "/console/sources/fleet"
    )

    # A product switched on.
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("button", name="Turn on replay_cloud").click()
    shown(page.get_by_role("button", name="Turn off replay_cloud"))
    shot(page, "settings")

    # The bad commit: its problem leads to the line.
    page.get_by_role("link", name="Sources").click()
    page.get_by_role("link", name="fleet").click()
    deadline = time.monotonic() + PATIENCE
    while "agents.yaml:" not in page.content() and time.monotonic() < deadline:
        time.sleep(0.1)
        page.reload()
    shot(page, "source")
    page.get_by_role("link", name=re.compile(r"agents\.yaml:\d+")).first.click()
    marked = page.locator("li.marked")
    assert "polcy" in marked.inner_text()
    shot(page, "source-file")

    # Ask.
    page.get_by_role("link", name="Ask").click()
    page.get_by_label("Question").fill("is any MCP server unhealthy?")
    page.get_by_role("button", name="Ask").click()
    shown(page.get_by_role("heading", name=re.compile("Answer")))
    shot(page, "ask")

    # Keyboard only: the skip link is the first stop. A phone's width fits.
    page.goto(f"{server}/console/")
    # htmx fetched the coverage part into the page after it loaded.
    page.get_by_role("heading", name="Coverage by vendor").wait_for()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    shot(page, "overview")
    page.set_viewport_size({"width": 375, "height": 740})
    page.goto(f"{server}/console/watches")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    shot(page, "watches-phone")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r".*/console/sign-in.*"))
    page.goto(f"{server}/console/settings/keys")
    assert "/console/sign-in" in page.url
