"""`driftgate mcp` as agents run it: a real `driftgate mcp` process (stdio, and Streamable
HTTP) called with the official MCP SDK client, against a real driftgate server (a Flask app
served on 127.0.0.1, a controller, a git source with an agent and its approval rule, a
loopback vendor whose contract drifts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

from cli.toolserver.tools import TOOLS
from tests.conftest import OrgKey
from tests.gate.conftest import BREAKING, CASES, GOOD, SLUG, WATCH, Gate
from tests.processes import DRIFTGATE, spawn, stop_process, wait_until
from tests.servers import WsgiServer, serving

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
READERS = {
    "compare_json",
    "suggest_watches",
    "assert_coverage",
    "explain_drift",
    "list_drift_events",
    "get_watch_status",
    "get_agent_status",
    "list_affected_agents",
    "preflight",
    "list_watches",
    "validate_payload",
}


def stdio(url: str | None, key: str | None) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTGATE_")}
    if url:
        env["DRIFTGATE_URL"] = url
    if key:
        env["DRIFTGATE_API_KEY"] = key
    return StdioServerParameters(
        command=DRIFTGATE[0],
        args=[*DRIFTGATE[1:], "mcp", "--poll-seconds", "0.3"],
        env=env,
        cwd=str(ROOT),
    )


def polls(server: WsgiServer) -> int:
    """How many looks the tool server's poller has begun at the org's watches (nothing else of
    it lists them)."""
    return sum(request["path"] == "/api/watches" for request in list(server.requests))


def structured(tool: str, result: Any) -> dict[str, Any]:
    """The structured content of a successful call, checked against the tool's outputSchema."""
    assert not result.is_error, (tool, result.content)
    content = result.structured_content
    jsonschema.validate(content, TOOLS[tool].output_schema())
    assert result.content[0].text  # and a short text rendering
    return dict(content)


def without_clock(value: Any) -> Any:
    """A status plane without the minute counters that move between two reads."""
    if isinstance(value, dict):
        return {k: without_clock(v) for k, v in value.items() if k != "minutesSinceLastCheck"}
    if isinstance(value, list):
        return [without_clock(v) for v in value]
    return value


def drifted(build: Callable[..., Gate]) -> Gate:
    gate = build(CASES["production-guard"])
    gate.check()  # the baseline
    gate.server.set("/openapi.json", BREAKING)
    assert gate.check()["driftStatus"] == "drifted"
    return gate


def test_the_tools_over_stdio_against_a_real_server(
    build: Callable[..., Gate], make_org: Callable[..., OrgKey]
) -> None:
    gate = drifted(build)
    other = make_org("other", "pro")
    theirs = gate.client.post(
        "/api/watches",
        json={"name": "theirs", "url": gate.server.url("/openapi.json")},
        headers=other.headers,
    ).get_json()["id"]
    spec_url = gate.server.url("/openapi.json")

    with serving(gate.client.application) as running:
        api = httpx.Client(base_url=running.url, headers=gate.acme.headers, timeout=30)

        async def session() -> None:
            async with Client(stdio(running.url, gate.acme.key)) as client:
                listed = {t.name: t for t in (await client.list_tools()).tools}
                assert set(listed) == set(TOOLS) and len(listed) == 14
                for name, declared in listed.items():
                    assert declared.input_schema == TOOLS[name].input_schema()
                    assert declared.output_schema == TOOLS[name].output_schema()
                    assert declared.description and declared.annotations is not None
                    assert declared.annotations.read_only_hint is (name in READERS), name
                ack = listed["acknowledge_drift"].annotations
                assert ack is not None and ack.idempotent_hint is True

                async def ok(tool: str, **arguments: Any) -> dict[str, Any]:
                    return structured(tool, await client.call_tool(tool, arguments))

                async def refused(tool: str, **arguments: Any) -> str:
                    result = await client.call_tool(tool, arguments)
                    assert result.is_error, (tool, result.structured_content)
                    return str(result.content[0].text)

                # The status plane, verbatim.
                status = await ok("get_watch_status", name=WATCH)
                plain = api.get(f"/api/watches/{gate.watch_id}/status").json()
                assert without_clock(status) == without_clock(plain)
                assert status["driftStatus"] == "drifted" and status["incident"]["status"] == "open"
                changes = status["lastDriftEvent"]["changes"]

                events = await ok("list_drift_events", watchId=WATCH, severity="breaking")
                assert [e["watchId"] for e in events["events"]] == [gate.watch_id]
                explained = await ok("explain_drift", changes=changes)
                assert all(c["hint"] for c in explained["changes"])
                affected = await ok("list_affected_agents", watchId=gate.watch_id)
                assert [a["slug"] for a in affected["agents"]] == [SLUG]
                agent = await ok("get_agent_status", agentId=SLUG)
                assert agent["preflight"]["allowed"] is False

                # The gate: the same decision as the HTTP API.
                gate_answer = await ok("preflight", agentId=SLUG)
                direct = api.post("/api/preflight", json={"agentId": SLUG})
                assert direct.status_code == 409 and gate_answer["allowed"] is False
                assert gate_answer["policyBlocked"] is direct.json()["policyBlocked"] is True
                assert [(b["watchId"], b["reasons"]) for b in gate_answer["blocked"]] == [
                    (b["watchId"], b["reasons"]) for b in direct.json()["blocked"]
                ]

                # Acknowledge: the agent's approval rule decides.
                wrong = await refused(
                    "acknowledge_drift",
                    agentId=SLUG,
                    note="fixing",
                    repository="acme/elsewhere",
                    branch="main",
                )
                assert "approval" in wrong and "HTTP 403" in wrong
                # The watch's incident: the same rules (issue 40, point 3).
                around = await refused("acknowledge_drift", watchId=WATCH, note="fixing")
                assert "pass repository acme/billing-agent branch main" in around
                assert api.post("/api/preflight", json={"agentId": SLUG}).status_code == 409
                acked = await ok(
                    "acknowledge_drift",
                    agentId=SLUG,
                    note="client regenerated",
                    repository="acme/billing-agent",
                    branch="main",
                )
                assert acked["target"] == "agent" and acked["agent"]["acknowledged"]
                again = await ok("acknowledge_drift", watchId=WATCH, note="still on it")
                assert again["incident"]["status"] == "acknowledged"

                # Discovery and the watches.
                suggested = await ok("suggest_watches", urls=[spec_url])
                assert suggested["candidates"][0]["existingWatchId"] == gate.watch_id
                coverage = await ok("assert_coverage", urls=[spec_url])
                assert coverage["covered"] is True and coverage["missingCount"] == 0
                # A 422 that is not missing watches says what the server could not read.
                unread = await refused("assert_coverage", config="{", fileName=".mcp.json")
                assert ".mcp.json" in unread and "config_invalid" in unread
                watches = await ok("list_watches")
                assert WATCH in {w["name"] for w in watches["watches"]}
                # The hosted `api` (any HTTP API) of a spec's URL is an OpenAPI watch.
                made = await ok("register_watch", name="mirror", url=spec_url, watchType="api")
                assert made["watchType"] == "openapi"
                checked = await ok("check_watch", name="mirror", waitSeconds=30)
                assert checked["status"] == "done"

                # Offline.
                compared = await ok("compare_json", before={"id": 1}, after={"id": "1"})
                assert compared["breaking"] is True and compared["changes"][0]["agentAction"]
                profile = {"id": "o", "version": 1, "schema": {"type": "object", "required": ["a"]}}
                checked_payload = await ok("validate_payload", payload={}, profile=profile)
                assert checked_payload["ok"] is False

                # Wrong inputs name the field; another org's ids are not found.
                assert "limit" in await refused("list_drift_events", limit=500)
                assert "watchId" in await refused("get_watch_status")
                assert "HTTP 404" in await refused("get_watch_status", watchId=theirs)
                assert "HTTP 404" in await refused("list_affected_agents", watchId=theirs)
                assert "unknown tool" in await refused("no_such_tool")

                # Resources and the prompt.
                uri = f"driftgate://watches/{gate.watch_id}"
                resources = await client.list_resources()
                assert uri in {str(r.uri) for r in resources.resources}
                read = await client.read_resource(uri)
                assert json.loads(read.contents[0].text)["watchId"] == gate.watch_id
                prompt = await client.get_prompt("triage_drift", {"watchId": WATCH})
                assert "get_watch_status" in prompt.messages[0].content.text

                # A subscriber hears of the change when the contract comes back.
                async with client.listen(resource_subscriptions=[uri]) as subscription:
                    gate.server.set("/openapi.json", GOOD)
                    await anyio.to_thread.run_sync(gate.check)
                    with anyio.fail_after(20):
                        event = await subscription.__anext__()
                assert str(getattr(event, "uri", "")) == uri

        anyio.run(session)


def test_without_a_key_the_tools_say_so_and_offline_ones_work() -> None:
    async def session() -> tuple[Any, Any]:
        async with Client(stdio("http://127.0.0.1:9", None)) as client:
            refused = await client.call_tool("list_watches", {})
            offline = await client.call_tool(
                "compare_json", {"before": {"a": 1}, "after": {"a": 1}}
            )
        return refused, offline

    refused, offline = anyio.run(session)
    assert refused.is_error and "no API key" in refused.content[0].text
    assert structured("compare_json", offline)["counts"] == {"breaking": 0, "warning": 0, "info": 0}


def test_streamable_http_and_a_refused_key(live_app: Any, acme: OrgKey, tmp_path: Path) -> None:
    with serving(live_app) as running:
        env = {**os.environ, "DRIFTGATE_URL": running.url, "DRIFTGATE_API_KEY": "dg_wrong"}
        with spawn(
            [*DRIFTGATE, "mcp", "--http", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        ) as process:
            assert process.stdout is not None
            try:
                url = process.stdout.readline().strip()
                assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

                async def session() -> Any:
                    async with Client(url) as client:
                        tools = await client.list_tools()
                        assert len(tools.tools) == 14
                        return await client.call_tool("list_watches", {})

                refused = anyio.run(session)
            finally:
                assert stop_process(process) == 0
    assert refused.is_error and "HTTP 401" in refused.content[0].text


@pytest.mark.parametrize(
    "client", sorted(__import__("cli.toolserver.configs").toolserver.configs.CLIENTS)
)
def test_print_config_is_a_paste_that_discovery_reads(client: str) -> None:
    from controller.discovery.extract import from_mcp_config

    # PATH finds the driftgate beside this interpreter: the entry names it `driftgate`.
    bin_dir = os.path.dirname(sys.executable)
    installed = os.path.isfile(os.path.join(bin_dir, "driftgate"))
    run = subprocess.run(
        [*DRIFTGATE, "mcp", "--print-config", client, "--url", "https://dg.example.com"],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "DRIFTGATE_API_KEY": "dg_marker_never_printed",
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        },
    )
    assert run.returncode == 0, run.stderr
    where = run.stderr.split("add to ", 1)[1].splitlines()[0].strip()
    found = from_mcp_config(run.stdout, where.rsplit("/", 1)[-1] if client == "windsurf" else where)
    command = "driftgate mcp" if installed else f"{sys.executable} -m cli mcp"
    assert [(c.name, c.command) for c in found] == [("driftgate", command)], found
    assert "dg_marker_never_printed" not in run.stdout + run.stderr


def test_driftgate_watches_its_own_tool_server(
    live_app: Any, controller: Any, acme: OrgKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dogfood: an `mcp` watch on the tool server's Streamable HTTP endpoint; when a tool's
    input schema changes (a new required argument), the watch drifts with a breaking change."""
    from dataclasses import replace

    from pydantic import Field

    from cli.toolserver.server import http_app
    from cli.toolserver.tools import Connection, ListEventsIn
    from controller.loopback import ThreadedServer

    tools = ThreadedServer(http_app(Connection(None, None), 60), name="tool server")
    tools.start()
    try:
        client = live_app.test_client()
        url = f"http://127.0.0.1:{tools.port}/mcp"
        created = client.post(
            "/api/watches",
            json={"name": "driftgate-tools", "url": url, "watchType": "mcp"},
            headers=acme.headers,
        )
        assert created.status_code == 201, created.get_json()
        watch_id = created.get_json()["id"]

        def check() -> dict[str, Any]:
            answer = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=acme.headers)
            assert answer.status_code == 200, answer.get_json()
            return dict(answer.get_json())

        assert check()["watch"]["driftStatus"] == "ok"

        class Stricter(ListEventsIn):
            since: str = Field(description="a new required argument")

        monkeypatch.setitem(
            TOOLS, "list_drift_events", replace(TOOLS["list_drift_events"], input=Stricter)
        )
        after = check()
        assert after["watch"]["driftStatus"] == "drifted"
        status = client.get(f"/api/watches/{watch_id}/status", headers=acme.headers).get_json()
        breaking = [c for c in status["lastDriftEvent"]["changes"] if c["severity"] == "breaking"]
        assert breaking and all("list_drift_events" in c["path"] for c in breaking)
    finally:
        tools.stop()


def test_a_legacy_session_subscribed_to_a_watch_hears_of_its_drift(
    live_app: Any, controller: Any, acme: OrgKey, server: Any
) -> None:
    """Clients of the handshake-era protocol subscribe with `resources/subscribe` and get
    `notifications/resources/updated` on the stdio session."""
    client = live_app.test_client()
    url = server.set("/openapi.json", GOOD)
    watch_id = client.post(
        "/api/watches", json={"name": "pay", "url": url}, headers=acme.headers
    ).get_json()["id"]

    def check() -> None:
        answer = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=acme.headers)
        assert answer.status_code == 200, answer.get_json()

    check()
    uri = f"driftgate://watches/{watch_id}"
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        params = getattr(getattr(message, "root", message), "params", None)
        if getattr(message, "method", getattr(getattr(message, "root", None), "method", "")) == (
            "notifications/resources/updated"
        ):
            heard.append(str(params.uri))

    with serving(live_app) as running:

        async def session() -> None:
            async with Client(
                stdio(running.url, acme.key), mode="legacy", message_handler=on_message
            ) as mcp_client:
                # The SDK marks its own subscribe deprecated; handshake-era clients still send it.
                with pytest.warns(MCPDeprecationWarning):
                    await mcp_client.subscribe_resource(uri)
                # The poller has looked (its look ended before the next one began).
                await anyio.to_thread.run_sync(lambda: wait_until(lambda: polls(running) >= 2))
                server.set("/openapi.json", BREAKING)
                await anyio.to_thread.run_sync(check)
                with anyio.fail_after(20):
                    while not heard:
                        await anyio.sleep(0.1)

        anyio.run(session)
    assert heard == [uri] or set(heard) == {uri}
