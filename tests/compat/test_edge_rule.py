"""The optional edge rule that refuses default HTTP-library User-Agents (`1010`) against the
hosted clients' requests: `mockdrift catalog` sends Python's own one (urllib's, no header of
its own), so the rule refuses it (docs/compat.md says so); the other clients name themselves."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from controller.store.db import Database
from tests.conftest import make_settings


def test_the_1010_rule_refuses_mockdrift_catalogs_default_user_agent(
    tmp_path: Path, database: Database
) -> None:
    from web.app import create_app

    # What urllib sends when a request sets no User-Agent, as `mockdrift catalog` does.
    python = dict(urllib.request.build_opener().addheaders)["User-agent"]
    assert python.startswith("Python-urllib/")
    strict = make_settings(tmp_path, database_url=database.url, refuse_default_user_agents=True)
    client = create_app(strict, database=database).test_client()
    refused = client.get("/v1/mockdrift/fixtures/catalog", headers={"User-Agent": python})
    assert (refused.status_code, refused.get_json()["error"]) == (403, "1010")
    # mockdrift's other commands and fuseguard send their own names: not refused.
    for agent in ("MockDrift/0.1.0 (+https://driftguard.org)", "FuseGuard/0.2"):
        named = client.get("/v1/mockdrift/fixtures/catalog", headers={"User-Agent": agent})
        assert named.status_code == 200, (agent, named.get_json())
