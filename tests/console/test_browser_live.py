"""The console's history, live and contract parts in Chromium (tests/console/browser.py:
`driftgate up` on a loopback port, a spec server, a git source): a status change shows without
a reload, an acknowledgement shows in the timeline, the contract view marks what changed; at a
desktop's and a phone's width, with screenshots of each page in `test-artifacts/console/`."""

from __future__ import annotations

import re
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
    spec,
)
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def test_history_live_status_and_the_contract_in_a_browser(
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
        accounts.set_password(session, token, PASSWORD, utcnow())
    api = httpx.Client(base_url=server, headers=acme.headers, timeout=90)
    request.addfinalizer(api.close)
    url = spec.set("/openapi.json", as_json(charges_spec()))
    watch = api.post("/api/watches", json={"name": "payments", "url": url}).json()
    assert api.post(f"/api/watches/{watch['id']}/check?wait=60").status_code == 200

    page = browser.new_page(viewport=DESKTOP)
    page.set_default_timeout(20_000)
    page.goto(f"{server}/console/sign-in")
    page.get_by_label("E-mail").fill("lead@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server}/console/")

    # Live: the watch's page is open; the vendor drops an operation and a check runs
    # elsewhere (the API); the heading's status turns without a reload.
    page.goto(f"{server}/console/watches/{watch['id']}")
    heading_status = page.locator("h1 > .status")
    assert heading_status.inner_text() == "ok"
    page.locator(".live [data-live-status]").wait_for()
    page.evaluate("window.notReloaded = true")
    spec.set("/openapi.json", as_json(charges_spec(refunds=False)))
    assert api.post(f"/api/watches/{watch['id']}/check?wait=60").json()["watch"]["driftStatus"] == (
        "drifted"
    )
    page.locator("h1 > .status", has_text="drifted").wait_for(timeout=15_000)
    assert page.evaluate("window.notReloaded") is True
    assert "incident open" in page.locator(".live").inner_text()
    # The timeline followed: the drift and the incident are in it, still without a reload.
    page.locator(".activity .entry", has_text="Incident opened").wait_for()
    assert page.evaluate("window.notReloaded") is True

    # The actions were drawn for an "ok" watch: the strip offers the reload that brings them.
    page.get_by_role("link", name=re.compile("Changed since this page was drawn")).click()
    page.wait_for_load_state()

    # History: acknowledged here, the acknowledgement is the timeline's newest entry.
    page.get_by_label("Note").fill("on it")
    page.get_by_role("button", name="Acknowledge incident").click()
    page.wait_for_load_state()
    newest = page.locator(".activity .entry").first
    newest.filter(has_text="Incident acknowledged").wait_for()
    assert "on it" in newest.inner_text() and "lead@example.com" in newest.inner_text()
    assert newest.get_by_role("link").get_attribute("href") == f"/console/watches/{watch['id']}"
    shot(page, "watch-live")

    # The contract: the removed operation is marked on the baseline's side.
    page.get_by_role("link", name=re.compile("The contract")).click()
    page.get_by_role("heading", name="Contract of payments").wait_for()
    removed = page.locator(".side li.item.removed")
    assert removed.count() >= 1 and "/v1/refunds" in removed.first.inner_text()
    shot(page, "contract")

    # The org's timeline, filtered by kind.
    page.get_by_role("link", name="Activity", exact=True).click()
    page.get_by_label("incident").check()
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r".*kind=incident.*"))
    kinds = page.locator(".timeline .entry .kind").all_inner_texts()
    assert kinds and {k.lower() for k in kinds} == {"incident"}
    page.goto(f"{server}/console/activity")
    shot(page, "activity")
    page.goto(f"{server}/console/")
    page.locator(".activity .entry").first.wait_for()
    page.locator(".live [data-live-status]").wait_for()
    shot(page, "overview-activity")

    # A phone's width: the same pages fit the screen.
    page.set_viewport_size(PHONE)
    for path, name in (
        (f"/console/watches/{watch['id']}", "watch-live-phone"),
        (f"/console/watches/{watch['id']}/contract", "contract-phone"),
        ("/console/activity", "activity-phone"),
    ):
        page.goto(f"{server}{path}")
        page.locator(".live [data-live-status], .timeline, .surface").first.wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path
        shot(page, name)
