"""The console in a real browser: Debian's Chromium driven by Playwright against `driftgate
serve` (gunicorn) on a loopback port, on the test's store. Screenshots of each page go to
`test-artifacts/console/` (kept by CI as artifacts).

Chromium comes from the system (`apt-get install chromium`; `.ci/run` installs it): without
it these tests skip, unless DRIFTGATE_REQUIRE_BROWSER=1 (CI sets it), where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from controller.accounts import service as accounts
from controller.services.orgs import get_org
from controller.store.db import Database
from controller.store.types import utcnow
from tests.conftest import OrgKey
from tests.processes import driftgate_env, free_port, stop_process, wait_until_healthy

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
PASSWORD = "a long enough password 42"

if CHROMIUM is None and os.environ.get("DRIFTGATE_REQUIRE_BROWSER") != "1":
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture
def server(tmp_path: Path, database: Database) -> Iterator[str]:
    port = free_port()
    log = tmp_path / "serve.log"
    env = driftgate_env(database.url, tmp_path, workers="1", threads="4")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=out,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, process, log)
        yield base
    finally:
        stop_process(process)


@pytest.fixture
def browser() -> Iterator[object]:
    assert CHROMIUM is not None, "DRIFTGATE_REQUIRE_BROWSER=1 but Chromium is not installed"
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def shot(page: object, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def test_sign_in_create_a_key_and_use_it(
    server: str, browser: object, acme: OrgKey, database: Database
) -> None:
    with database.transaction() as session:
        _user, token = accounts.create_user(
            session, get_org(session, "acme"), "lead@example.com", "admin", actor="t", now=utcnow()
        )
    link = accounts.setup_link(server, token)
    page = browser.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page.goto(link)
    page.get_by_label("New password").fill(PASSWORD)
    page.get_by_label("The same again").fill(PASSWORD)
    page.get_by_role("button", name="Set password").click()
    page.wait_for_url(re.compile(r".*/console/sign-in.*"))
    shot(page, "sign-in")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server}/console/")
    assert page.get_by_role("heading", name="Overview of acme").is_visible()
    shot(page, "overview")
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key").inner_text()
    assert secret.startswith("dg_")
    shot(page, "api-keys")
    # The key works against the API, from outside the browser.
    answer = httpx.get(f"{server}/api/watches", headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 200
    # Keyboard only: the skip link is the first stop and leads to the content.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    # A phone's width: nothing wider than the screen.
    page.set_viewport_size({"width": 375, "height": 740})
    page.goto(f"{server}/console/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    shot(page, "overview-phone")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r".*/console/sign-in.*"))
    page.goto(f"{server}/console/settings/keys")
    assert "/console/sign-in" in page.url
