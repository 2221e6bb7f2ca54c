"""The console in a real browser, shared by its browser tests: Debian's Chromium driven by
Playwright (`browser`) against `driftgate up` (gunicorn and the controller) on a loopback port,
on the test's store (`server`), with a loopback spec server (`spec`) and a git source whose
first commit is bad (`repo`); screenshots go to `test-artifacts/console/` (`shot`).

Importing this module skips the importing test module when Chromium is not installed
(`apt-get install chromium`), unless DRIFTGATE_REQUIRE_BROWSER=1 (CI sets it): then the tests
fail instead.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.store.db import Database
from tests.conftest import SECRET, OrgKey
from tests.factories import AGENTS
from tests.gitrepos import RepoBuilder, isolated_git_config
from tests.processes import free_port, started, wait_until_healthy
from tests.servers import SpecServer, spec_server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
PASSWORD = "a long enough password 42"

if CHROMIUM is None and os.environ.get("DRIFTGATE_REQUIRE_BROWSER") != "1":
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api")


def shown(locator: Any) -> None:
    """Wait (the page's default timeout) until the locator is visible; fail if it never is.
    A click that loads a page returns before the page is there, so a plain `is_visible()`
    right after it races the load."""
    sync_api.expect(locator).to_be_visible()


@pytest.fixture
def spec() -> Iterator[SpecServer]:
    with spec_server() as running:
        yield running


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[RepoBuilder]:
    with isolated_git_config(tmp_path / "gitconfig"):
        builder = RepoBuilder(tmp_path / "fleet.git")
        # A bad commit from the start: `polcy` is not a key of an agent.
        builder.commit({".driftgate/agents.yaml": AGENTS.replace("policy:", "polcy:", 1)})
        yield builder


@pytest.fixture
def server(tmp_path: Path, database: Database, repo: RepoBuilder, acme: OrgKey) -> Iterator[str]:
    port = free_port()
    config = {
        "database_url": database.url,
        "data_dir": str(tmp_path / "data"),
        "port": port,
        "workers": 1,
        "threads": 4,
        "allow_private_targets": True,
        "sources": [{"name": "fleet", "org": "acme", "url": repo.url, "interval": "10s"}],
    }
    config_file = tmp_path / "driftgate.yaml"
    config_file.write_text(yaml.safe_dump(config))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DRIFTGATE_")},
        "DRIFTGATE_SECRET_KEY": SECRET,
        "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"),
    }
    log = tmp_path / "up.log"
    command = [sys.executable, "-m", "cli", "--config", str(config_file), "up"]
    with started(command, env=env, log=log) as process:
        wait_until_healthy(f"http://127.0.0.1:{port}", process, log)
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")  # one Chromium for a module's tests, a new page each
def browser() -> Iterator[Any]:
    assert CHROMIUM is not None, "DRIFTGATE_REQUIRE_BROWSER=1 but Chromium is not installed"
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
