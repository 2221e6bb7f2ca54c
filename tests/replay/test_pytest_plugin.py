"""The `driftgate_replay` pytest fixture, used as a team would: from the tests of another
project (pytester runs them in a temporary directory, in a pytest subprocess that finds the
plugin through its `pytest11` entry point)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.replay import catalog
from controller.replay.fixtures import build_fixture
from tests.replay.conftest import payments_spec, write

pytest_plugins = ["pytester"]

AGENT_TESTS = """
import anyio
import httpx
from mcp import Client


def test_the_agent_against_tomorrows_payments_api(driftgate_replay):
    url = driftgate_replay("fixtures/payments")
    assert url.startswith("http://127.0.0.1:")
    charge = httpx.get(f"{url}/v1/charges/ch_1").json()
    assert charge["currency"] == "usd"
    refused = httpx.post(f"{url}/v1/charges", json={"amount": "ten"})
    assert refused.status_code == 400


def test_the_agent_against_tomorrows_docs_server(driftgate_replay, tmp_path):
    url = driftgate_replay(FIXTURES / "context7")  # an absolute path works too
    assert url.endswith("/mcp")

    async def ask():
        async with Client(url) as client:
            tools = await client.list_tools()
            result = await client.call_tool("resolve-library-id", {"libraryName": "react"})
        return sorted(t.name for t in tools.tools), result.is_error

    assert anyio.run(ask) == (["get-library-docs", "resolve-library-id"], False)


def test_a_missing_directory_fails_the_test_clearly(driftgate_replay):
    driftgate_replay("fixtures/nope")
"""


def test_the_fixture_serves_replay_directories_in_another_projects_tests(
    pytester: pytest.Pytester,
) -> None:
    root = Path(pytester.path)
    payments = build_fixture(
        fixture_id="payments:evt",
        watch_type="openapi",
        before=payments_spec(),
        after=payments_spec(),
        changes=[],
        content_kind="hosted-curated",
        source="test",
        created_at="2026-11-25T00:00:00Z",
    )
    write(root / "fixtures" / "payments", payments.files)
    write(root / "fixtures" / "context7", catalog.shipped()["oss-context7-1.0.14-to-1.0.33"].files)
    pytester.makepyfile(
        test_agent=f"from pathlib import Path\nFIXTURES = Path({json.dumps(str(root))}) / "
        f"'fixtures'\n{AGENT_TESTS}"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=0, failed=1)
    result.stdout.fnmatch_lines(["*ConfigError*fixtures/nope: not a directory*"])
