"""The hosted product's TypeScript clients, unchanged, against a live driftgate behind TLS: the
`driftguard` CLI and the `driftguard-mcp` server (stdio), built from the snapshot beside the
repository (tests/compat/tsclients.py) and pointed at nginx in front of driftgate
(tests/compat/tlsfront.py) with environment variables only: every operation of theirs that
calls the server (docs/compat.md)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import Agent, AgentWatch, Watch
from tests.compat.conftest import AGENT, AGENT_WATCH, Live
from tests.compat.tsclients import build_ts_clients, require_ts_clients
from tests.mcp_servers import SdkServer, write_surface
from tests.processes import wait_until
from tests.specs import as_json, charges_spec

require_ts_clients()

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def behind_tls() -> bool:
    """The clients take only an https:// base URL: nginx in front, as operators run it."""
    return True


@pytest.fixture(scope="module")
def clients() -> Path:
    return build_ts_clients()


def client_env(live: Live, key: str | None = None, **extra: str) -> dict[str, str]:
    """Only what a team sets to point the clients at driftgate (docs/compat.md), and no more
    of this process's environment than PATH (no CI variables, no proxy)."""
    assert live.tls is not None
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(live.home),
        "DRIFTGUARD_API": live.tls.base,
        "DRIFTGUARD_ALLOW_CUSTOM_API": "1",
        "DRIFTGUARD_API_URL": live.tls.base,
        "NODE_EXTRA_CA_CERTS": str(live.tls.ca_file),
        **extra,
    }
    if key != "":
        env["DRIFTGUARD_API_KEY"] = key or live.key
    return env


def cli(
    clients: Path, live: Live, cwd: Path, *args: str, key: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`driftguard <args>` (the CLI's bin) in `cwd`."""
    return subprocess.run(
        ["node", str(clients / "dist" / "cli" / "check.js"), *args],
        cwd=cwd,
        env=client_env(live, key, **env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def printed_json(stdout: str) -> Any:
    """The JSON document the CLI prints first (it may print more lines after it)."""
    decoded, _ = json.JSONDecoder().raw_decode(stdout[stdout.index("{") :])
    return decoded


def mcp_config(*urls: str) -> dict[str, Any]:
    return {"mcpServers": {f"server{i}": {"url": url} for i, url in enumerate(urls)}}


def files_json(config: dict[str, Any], path: str = ".cursor/mcp.json") -> str:
    """`DRIFTGUARD_FILES_JSON`: the files the CLI sends for the gate and the preview."""
    return json.dumps([{"path": path, "content": json.dumps(config)}])


def create_watch(live: Live, name: str, url: str, watch_type: str = "mcp") -> str:
    with live.http() as http:
        created = http.post(
            "/api/watches", json={"name": name, "url": url, "watchType": watch_type}
        )
    assert created.status_code == 201, created.text
    watch_id: str = created.json()["id"]
    return watch_id


# -- the CLI --------------------------------------------------------------------------------


def test_login_prints_the_keys_org_and_plan(clients: Path, live: Live, tmp_path: Path) -> None:
    with live.http() as http:
        me = http.get("/api/me").json()
    done = cli(clients, live, tmp_path, "login")
    assert done.returncode == 0, done.stderr
    assert f"Authenticated as {me['customerId']} (pro)" in done.stdout
    refused = cli(clients, live, tmp_path, "login", key="dg_not_a_key")
    assert refused.returncode == 1 and refused.stderr.strip()


def test_coverage_preview_fails_on_missing_candidates(
    clients: Path, live: Live, tmp_path: Path
) -> None:
    url = live.specs.url("/preview-mcp")
    found = files_json(mcp_config(url))
    done = cli(clients, live, tmp_path, "coverage-preview", key="", DRIFTGUARD_FILES_JSON=found)
    assert done.returncode == 0, done.stderr
    preview = printed_json(done.stdout)
    assert preview["missingCount"] == 1 and [m["url"] for m in preview["missing"]] == [url]
    assert [c["url"] for c in preview["discovered"]] == [url]
    failing = cli(
        clients,
        live,
        tmp_path,
        "coverage-preview",
        key="",
        DRIFTGUARD_FILES_JSON=found,
        DRIFTGUARD_FAIL_ON_MISSING="1",
    )
    assert failing.returncode == 1, failing.stdout
    # Nothing to watch: fail-on-missing lets it through.
    (tmp_path / "package.json").write_text("{}")
    empty = cli(clients, live, tmp_path, "coverage-preview", key="", DRIFTGUARD_FAIL_ON_MISSING="1")
    assert empty.returncode == 0, empty.stdout + empty.stderr
    assert printed_json(empty.stdout)["missingCount"] == 0


def test_coverage_preview_reads_a_root_mcp_json(clients: Path, live: Live, tmp_path: Path) -> None:
    url = live.specs.url("/root-mcp")
    (tmp_path / "mcp.json").write_text(json.dumps(mcp_config(url)))
    done = cli(clients, live, tmp_path, "coverage-preview", key="")  # scans ./mcp.json
    assert done.returncode == 0, done.stderr
    assert [m["url"] for m in printed_json(done.stdout)["missing"]] == [url]


def test_the_coverage_gate_passes_when_watched_and_fails_when_not(
    clients: Path, live: Live, tmp_path: Path
) -> None:
    watched, unwatched = live.specs.url("/gate-watched"), live.specs.url("/gate-unwatched")
    watch_id = create_watch(live, "gate-watched", watched)
    ok = cli(
        clients,
        live,
        tmp_path,
        "assert-coverage",
        DRIFTGUARD_FILES_JSON=files_json(mcp_config(watched)),
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    answer = printed_json(ok.stdout)
    assert answer["covered"] is True
    assert [c["existingWatchId"] for c in answer["watched"]] == [watch_id]
    both = files_json(mcp_config(watched, unwatched))
    failed = cli(clients, live, tmp_path, "assert-coverage", DRIFTGUARD_FILES_JSON=both)
    assert failed.returncode == 1, failed.stdout
    refusal = printed_json(failed.stdout)
    assert refusal["error"] == "missing_watches"
    assert [m["url"] for m in refusal["missing"]] == [unwatched]


def test_the_coverage_gate_refuses_a_trial_session_by_design(
    clients: Path, live: Live, tmp_path: Path
) -> None:
    with live.http() as http:
        token = http.post("/api/trial/session", headers={"Authorization": ""}).json()["token"]
    found = files_json(mcp_config(live.specs.url("/trial-mcp")))
    done = cli(
        clients,
        live,
        tmp_path,
        "assert-coverage",
        key="",
        DRIFTGUARD_FILES_JSON=found,
        DRIFTGUARD_TRIAL_SESSION=token,
    )
    # 401: the gate needs an API key on a Pro plan (SPEC.md; docs/compat.md).
    assert done.returncode == 1
    assert printed_json(done.stdout)["error"] == "missing_credentials"


def test_adopt_suggests_and_creates_the_watches_of_its_mcp_servers(
    clients: Path, live: Live, tmp_path: Path
) -> None:
    """`driftguard adopt --level 3` locks the MCP servers of mcp.json, then calls
    suggest-watches with the file as an object and `create: true`."""
    surface = write_surface(
        tmp_path / "surface.json",
        name="ledger",
        tools=[{"name": "charge", "inputSchema": {"type": "object"}}],
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    with SdkServer("streamable", surface) as mcp_server:
        (repo / "mcp.json").write_text(json.dumps(mcp_config(mcp_server.url)))
        done = cli(clients, live, repo, "adopt", "--level", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Hosted watches reconciled" in done.stdout, done.stdout + done.stderr
    with live.http() as http:
        watches = http.get("/api/watches", params={"limit": 200}).json()["watches"]
    assert [w["watchType"] for w in watches if w["url"] == mcp_server.url] == ["mcp"]


def test_openapi_diff_remote_saves_a_run(clients: Path, live: Live, tmp_path: Path) -> None:
    (tmp_path / "base.json").write_text(as_json(charges_spec()))
    (tmp_path / "target.json").write_text(as_json(charges_spec(refunds=False)))
    done = cli(clients, live, tmp_path, "openapi-diff", "base.json", "target.json", "--remote")
    assert done.returncode == 0, done.stdout + done.stderr
    saved, url = done.stdout.splitlines()[:2]
    assert saved.startswith("Saved compare run ") and saved.split()[-1] not in ("", "undefined")
    assert live.tls is not None and url.startswith(live.tls.base + "/")
    failing = cli(
        clients,
        live,
        tmp_path,
        "openapi-diff",
        "base.json",
        "target.json",
        "--remote",
        "--fail-on-breaking",
    )
    assert failing.returncode == 1 and "Saved compare run" in failing.stdout
    refused = cli(
        clients,
        live,
        tmp_path,
        "openapi-diff",
        "base.json",
        "target.json",
        "--remote",
        key="dg_not_a_key",
    )
    assert refused.returncode == 2 and "Saved compare run" not in refused.stdout


def agents_manifest(*urls: str) -> str:
    """A hosted `.driftguard/agents.yaml`: one agent watching `urls` as `api` watches."""
    return yaml.safe_dump(
        {
            "version": 1,
            "agents": [
                {
                    "id": "support-bot",
                    "environment": "production",
                    "policy": "staging-strict",
                    "watches": [{"type": "api", "url": url} for url in urls],
                }
            ],
        }
    )


def test_assert_a2a_coverage_passes_when_registered_and_fails_when_not(
    clients: Path, live: Live, tmp_path: Path
) -> None:
    registered, unregistered = live.specs.url("/a2a-registered"), live.specs.url("/a2a-missing")
    create_watch(live, "a2a-registered", registered, "openapi")
    folder = tmp_path / ".driftguard"
    folder.mkdir()
    (folder / "agents.yaml").write_text(agents_manifest(registered))
    ok = cli(clients, live, tmp_path, "assert-a2a-coverage")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert printed_json(ok.stdout)["ok"] is True
    (folder / "agents.yaml").write_text(agents_manifest(registered, unregistered))
    failed = cli(clients, live, tmp_path, "assert-a2a-coverage")
    assert failed.returncode == 1, failed.stdout
    answer = printed_json(failed.stdout)
    assert answer["ok"] is False and answer["missingWatchUrls"] == [unregistered]
    assert [a["missingWatches"] for a in answer["agents"]] == [
        [{"type": "rest", "url": unregistered}]  # the hosted `api` is driftgate's `rest`
    ]
    # The CLI's usage errors are 2: no manifest where it was asked to look.
    absent = cli(clients, live, tmp_path, "assert-a2a-coverage", "elsewhere/agents.yaml")
    assert absent.returncode == 2


# -- the MCP server -------------------------------------------------------------------------


class McpClient:
    """One `driftguard-mcp` process over stdio for the module, driven by the Python `mcp`
    SDK on an event loop of its own thread: the session is opened and closed by one task,
    as anyio requires, and the tests call its tools synchronously."""

    def __init__(self, params: StdioServerParameters, errlog: Path) -> None:
        self.params, self.errlog = params, errlog
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.session: ClientSession | None = None
        self.tools: list[str] = []

    def __enter__(self) -> McpClient:
        self.thread.start()
        self.stopping = asyncio.Event()
        self.opened: Future[None] = Future()
        self.serving = asyncio.run_coroutine_threadsafe(self._serve(), self.loop)
        self.opened.result(timeout=60)
        return self

    async def _serve(self) -> None:
        try:
            with self.errlog.open("w") as errlog:
                async with (
                    stdio_client(self.params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    self.tools = [tool.name for tool in (await session.list_tools()).tools]
                    self.session = session
                    self.opened.set_result(None)
                    await self.stopping.wait()
        except BaseException as error:
            if not self.opened.done():
                self.opened.set_exception(error)
            raise

    def call(self, tool: str, **arguments: Any) -> CallToolResult:
        assert self.session is not None
        future = asyncio.run_coroutine_threadsafe(
            self.session.call_tool(tool, arguments), self.loop
        )
        return future.result(timeout=60)

    def answer(self, tool: str, **arguments: Any) -> Any:
        """The JSON the tool answered with (driftgate's answer, as the tool passes it on)."""
        result = self.call(tool, **arguments)
        assert not result.is_error, text_of(result)
        return json.loads(text_of(result))

    def __exit__(self, *exc_info: object) -> None:
        self.loop.call_soon_threadsafe(self.stopping.set)
        try:
            self.serving.result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)
            self.loop.close()


def text_of(result: CallToolResult) -> str:
    return "".join(part.text for part in result.content if isinstance(part, TextContent))


@pytest.fixture(scope="module")
def mcp(clients: Path, live: Live, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpClient]:
    server = clients / "dist" / "mcp" / "server.js"
    params = StdioServerParameters(command="node", args=[str(server)], env=client_env(live))
    errlog = tmp_path_factory.mktemp("mcp") / "server.stderr"
    with McpClient(params, errlog) as client:
        yield client


@pytest.fixture(scope="module")
def drifted(live: Live) -> str:
    return live.drifted_watch("ts-payments")


def test_the_mcp_server_offers_the_server_backed_tools(mcp: McpClient) -> None:
    backed = {
        "register_watch", "check_watch", "list_watches", "get_watch_status",
        "get_agent_status", "list_affected_agents", "acknowledge_drift", "list_drift_events",
        "explain_drift", "suggest_watches", "assert_coverage", "trigger_remediation",
        "assert_a2a_coverage",
    }  # fmt: skip
    assert backed <= set(mcp.tools)


def test_register_check_and_list_a_watch(mcp: McpClient, live: Live) -> None:
    url = live.specs.set("/ts-registered.json", as_json(charges_spec()))
    registered = mcp.answer("register_watch", name="ts-registered", url=url, watchType="api")
    assert registered["name"] == "ts-registered" and registered["url"] == url
    # Queued (the tool does not wait): the controller checks it, a baseline.
    queued = mcp.answer("check_watch", watchId=registered["id"])
    assert queued["status"] == "queued" and isinstance(queued["jobId"], int)
    wait_until(
        lambda: mcp.answer("get_watch_status", watchId=registered["id"])["lastCheckStatus"] == "ok"
    )
    assert mcp.answer("get_watch_status", watchId=registered["id"])["driftStatus"] == "ok"
    listed = mcp.answer("list_watches")
    assert registered["id"] in [w["id"] for w in listed["watches"]]


def test_a_drifted_watchs_status_events_and_ack(mcp: McpClient, drifted: str) -> None:
    status = mcp.answer("get_watch_status", watchId=drifted)
    assert status["driftStatus"] == "drifted"
    events = mcp.answer("list_drift_events", watchId=drifted, limit=5)
    assert [e["watchId"] for e in events["events"]] == [drifted]
    assert status["incident"]["status"] == "open"
    acknowledged = mcp.answer("acknowledge_drift", watchId=drifted)
    assert acknowledged["watchId"] == drifted and acknowledged["status"] == "acknowledged"
    assert acknowledged["id"] == events["events"][0]["incidentId"]
    assert acknowledged["acknowledgedBy"].startswith("api_key:")
    assert mcp.answer("get_watch_status", watchId=drifted)["incident"]["status"] == "acknowledged"


def test_acknowledge_drift_is_refused_by_the_approval_rules_of_an_agent_it_unblocks(
    mcp: McpClient, live: Live
) -> None:
    # The tool sends no repository or branch: an agent with rules keeps the gate shut
    # (issue 40, point 3), and says so.
    watch_id = live.drifted_watch("ts-ruled")
    rule = {"repository": "acme/ruled-bot", "branches": ["main"]}
    database = Database(live.database_url)
    try:
        with database.transaction() as session:
            org_id = session.scalars(select(Watch.org_id).where(Watch.id == watch_id)).one()
            agent = Agent(org_id=org_id, key="ts-ruled-bot", slug="ts-ruled-bot", approvals=[rule])
            agent.policy = "staging-strict"
            agent.bindings = [AgentWatch(position=0, ref=watch_id, watch_id=watch_id)]
            session.add(agent)
    finally:
        database.dispose()
    refused = mcp.call("acknowledge_drift", watchId=watch_id)
    # The hosted server shows the error code of a refusal, not driftgate's message.
    assert refused.is_error and "approval_refused" in text_of(refused), text_of(refused)
    assert mcp.answer("get_watch_status", watchId=watch_id)["incident"]["status"] == "open"
    with live.http() as http:
        gate = http.post("/api/preflight", json={"agentId": "ts-ruled-bot"})
        assert gate.status_code == 409, gate.text
        # With the evidence (which only driftgate's own tool and API carry), it is accepted.
        accepted = http.post(
            f"/api/watches/{watch_id}/incident/ack",
            json={"repository": "acme/ruled-bot", "branch": "main"},
        )
        assert accepted.status_code == 200, accepted.text
        assert http.post("/api/preflight", json={"agentId": "ts-ruled-bot"}).status_code == 200


def test_an_agents_status_and_the_agents_a_watch_affects(mcp: McpClient, live: Live) -> None:
    agent = mcp.answer("get_agent_status", agentId=AGENT)["agent"]
    assert agent["id"] == AGENT and agent["policy"] == "staging-strict"
    assert [w["ref"] for w in agent["watches"]] == [AGENT_WATCH]
    affected = mcp.answer("list_affected_agents", watchId=live.watch_id(AGENT_WATCH))
    assert affected["watchId"] == live.watch_id(AGENT_WATCH)
    assert [(a["id"], a["policy"]) for a in affected["agents"]] == [(AGENT, "staging-strict")]


def test_explain_drift_explains_the_changes(mcp: McpClient) -> None:
    """The changes of the server's own offline `compare_json`, explained by driftgate."""
    before, after = {"id": "ch_1", "refunds": [{"id": "re_1"}]}, {"id": "ch_1"}
    compared = mcp.answer("compare_json", before=json.dumps(before), after=json.dumps(after))
    explained = mcp.answer("explain_drift", changesJson=json.dumps(compared["changes"]))
    [change] = explained["changes"]
    assert change["path"] == "$.refunds" and change["severity"] == "breaking"
    assert change["summary"] == "Field 'refunds' was removed" and change["agentAction"]
    assert explained["counts"] == {"breaking": 1, "warning": 0, "info": 0}


def test_suggest_watches_creates_from_the_mcp_json_object(mcp: McpClient, live: Live) -> None:
    url = live.specs.url("/ts-suggested")
    suggested = mcp.answer("suggest_watches", mcpJson=json.dumps(mcp_config(url)), create=True)
    assert [c["url"] for c in suggested["candidates"]] == [url]
    assert len(suggested["created"]) == 1
    with live.http() as http:
        watch = http.get(f"/api/watches/{suggested['created'][0]}").json()
    assert watch["url"] == url


def test_assert_coverage_passes_when_watched_and_fails_when_not(mcp: McpClient, live: Live) -> None:
    watched = live.specs.url("/ts-covered")
    create_watch(live, "ts-covered", watched)
    ok = mcp.answer("assert_coverage", mcpJson=json.dumps(mcp_config(watched)))
    assert ok["covered"] is True
    unwatched = live.specs.url("/ts-uncovered")
    refused = mcp.call("assert_coverage", mcpJson=json.dumps(mcp_config(watched, unwatched)))
    assert refused.is_error
    answer = json.loads(text_of(refused))
    assert answer["error"] == "missing_watches"
    assert [m["url"] for m in answer["missing"]] == [unwatched]


def test_trigger_remediation_reaches_the_draft_pr_flow(
    mcp: McpClient, live: Live, drifted: str
) -> None:
    """Mapped onto `POST /v1/draftpr/remediate`: without the product it is refused as such;
    with it, a watch no `draft_pr` policy binds has no repository to open a pull request in
    (422 `no_remediation_target`, passed on by the tool as its error)."""
    refused = mcp.call("trigger_remediation", watchId=drifted)
    assert refused.is_error and text_of(refused).startswith("PRODUCT_REQUIRED: draftpr_repo")
    with live.http() as http:
        enabled = http.put("/api/org/products/draftpr_repo", json={"enabled": True})
    assert enabled.status_code == 200, enabled.text
    try:
        answer = mcp.call("trigger_remediation", watchId=drifted)
        assert answer.is_error and text_of(answer).startswith("no_remediation_target"), answer
        unknown = mcp.call("trigger_remediation", watchId="00000000-0000-4000-8000-000000000000")
        assert unknown.is_error and text_of(unknown).startswith("not_found"), unknown
    finally:
        with live.http() as http:
            http.put("/api/org/products/draftpr_repo", json={"enabled": False})


def test_assert_a2a_coverage_tool(mcp: McpClient, live: Live) -> None:
    registered, unregistered = live.specs.url("/ts-a2a-ok"), live.specs.url("/ts-a2a-missing")
    create_watch(live, "ts-a2a-ok", registered, "openapi")
    ok = mcp.answer("assert_a2a_coverage", manifestYaml=agents_manifest(registered))
    assert ok["ok"] is True
    refused = mcp.call(
        "assert_a2a_coverage", manifestYaml=agents_manifest(registered, unregistered)
    )
    assert refused.is_error
    answer = json.loads(text_of(refused))
    assert answer["ok"] is False and answer["missingWatchUrls"] == [unregistered]
    assert [a["missingWatches"] for a in answer["agents"]] == [
        [{"type": "rest", "url": unregistered}]  # the hosted `api` is driftgate's `rest`
    ]
