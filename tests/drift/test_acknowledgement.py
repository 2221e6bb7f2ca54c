"""Issue 40, point 3: every path that acknowledges drift goes through one decision that applies
the approval rules of every agent the acknowledgement unblocks. One matrix of paths (the API's
agent and watch routes, the console's two forms, the CLI's two commands against a served app,
the MCP tool through a real `driftgate mcp` process), each refused without evidence and with
the wrong evidence (nothing stored, the gate stays shut) and accepted with the right one; a
test that every route that acknowledges is in the matrix; and one that nothing but the
decision writes an acknowledgement."""

from __future__ import annotations

import ast
import logging
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from mcp import Client, StdioServerParameters
from sqlalchemy import select

from cli.main import main
from controller.store.db import Database
from controller.store.models import Agent, AgentWatch, AuditEntry, Incident, OutboxMessage
from tests.conftest import OrgKey
from tests.factories import csrf_of, make_user, make_watch, set_state, sign_in
from tests.processes import DRIFTGATE
from tests.servers import serving

ROOT = Path(__file__).resolve().parents[2]
AGENT = "ruled-bot"
RULE = {"repository": "acme/ruled-bot", "branches": ["main", "release/*"]}
RIGHT = {"repository": "ACME/ruled-bot", "branch": "release/7"}
WRONG = {"repository": "acme/ruled-bot", "branch": "feature/x"}


@dataclass
class World:
    app: Flask
    client: FlaskClient
    acme: OrgKey
    database: Database
    watch_id: str
    incident_id: str
    monkeypatch: pytest.MonkeyPatch
    console: FlaskClient | None = None

    def preflight(self, agent: str = AGENT) -> int:
        answer = self.client.post(
            "/api/preflight", json={"agentId": agent}, headers=self.acme.headers
        )
        assert answer.status_code in (200, 409), answer.get_json()
        return answer.status_code

    def incident_status(self) -> str:
        with self.database.session() as session:
            return session.get_one(Incident, self.incident_id).status

    def stored_acks(self) -> tuple[list[str], list[str]]:
        """The audit entries that claim an acknowledgement, and `incident.acknowledged` events."""
        with self.database.session() as session:
            audited = session.scalars(
                select(AuditEntry.action).where(
                    AuditEntry.action.in_(("agent.ack", "incident.acknowledge"))
                )
            ).all()
            events = session.scalars(
                select(OutboxMessage.event_type).where(
                    OutboxMessage.event_type == "incident.acknowledged"
                )
            ).all()
        return list(audited), list(events)


def add_agent(
    database: Database,
    org_id: str,
    key: str,
    watch_id: str,
    rules: list[dict[str, Any]],
    policy: str = "staging-strict",
) -> None:
    """An agent as a git source declares it (approval rules are not settable by the API)."""
    with database.transaction() as session:
        agent = Agent(org_id=org_id, key=key, slug=key, policy=policy, approvals=rules)
        agent.bindings = [AgentWatch(position=0, ref=watch_id, watch_id=watch_id)]
        session.add(agent)


@pytest.fixture
def world(
    app: Flask,
    client: FlaskClient,
    acme: OrgKey,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> World:
    watch_id = make_watch(client, acme, "ledger")
    incident_id = set_state(database, watch_id, "drifted", incident="open")
    assert incident_id is not None
    add_agent(database, acme.org_id, AGENT, watch_id, [RULE])
    return World(app, client, acme, database, watch_id, incident_id, monkeypatch)


# The paths. Each acknowledges with `evidence` (repository and branch, or none) and answers
# (accepted, what the person or the agent was told).

Path_ = Callable[[World, dict[str, str]], tuple[bool, str]]


def api_watch(world: World, evidence: dict[str, str]) -> tuple[bool, str]:
    answer = world.client.post(
        f"/api/watches/{world.watch_id}/incident/ack",
        json={"note": "fixing", **evidence},
        headers=world.acme.headers,
    )
    return _api_answer(answer.status_code, answer.get_json())


def api_agent(world: World, evidence: dict[str, str]) -> tuple[bool, str]:
    answer = world.client.post(
        f"/api/agents/{AGENT}/ack", json={"note": "fixing", **evidence}, headers=world.acme.headers
    )
    return _api_answer(answer.status_code, answer.get_json())


def _api_answer(status: int, body: Any) -> tuple[bool, str]:
    if status == 200:
        return True, ""
    assert status == 403 and body["error"] == "approval_refused", (status, body)
    assert {d["agentId"] for d in body["details"]} == {AGENT}
    assert [d["rule"] for d in body["details"]] == [RULE]
    return False, str(body["message"])


def _console(world: World, path: str, page: str, evidence: dict[str, str]) -> tuple[bool, str]:
    if world.console is None:
        make_user(world.database, "acme", "admin@example.com")
        world.console = sign_in(world.app.test_client(), "admin@example.com")
    console = world.console
    shown = console.get(page).get_data(as_text=True)
    answer = console.post(path, data={"csrf_token": csrf_of(shown), "note": "fixing", **evidence})
    if answer.status_code == 302:
        return True, ""
    text = answer.get_data(as_text=True)
    assert answer.status_code == 403, text  # the refusal, shown: not a 500, not a redirect
    assert "That did not work" in text and "acme/ruled-bot on main, release/*" in text
    return False, text


def console_watch(world: World, evidence: dict[str, str]) -> tuple[bool, str]:
    page = f"/console/watches/{world.watch_id}"
    return _console(world, f"{page}/incident/ack", page, evidence)


def console_agent(world: World, evidence: dict[str, str]) -> tuple[bool, str]:
    page = f"/console/agents/{AGENT}"
    return _console(world, f"{page}/ack", page, evidence)


def _cli(world: World, args: list[str], evidence: dict[str, str]) -> tuple[bool, str]:
    # The server thread logs to the stream CliRunner swaps in: keep it out of the output.
    world.monkeypatch.setattr(logging.getLogger("driftgate"), "handlers", [logging.NullHandler()])
    flags = [x for k, v in evidence.items() for x in (f"--{k}", v)]
    with serving(world.app) as running:
        env = {"DRIFTGATE_URL": running.url, "DRIFTGATE_API_KEY": world.acme.key}
        env["DRIFTGATE_CONFIG"] = None  # type: ignore[assignment]
        result = CliRunner().invoke(
            main, [*args, "--note", "fixing", *flags], env=env, catch_exceptions=False
        )
    if result.exit_code == 0:
        return True, ""
    assert result.exit_code == 2, (result.output, result.stderr)
    assert "(HTTP 403, approval_refused)" in result.stderr
    assert "rule acme/ruled-bot on main, release/*: the " in result.stderr
    assert "--repository acme/ruled-bot --branch main" in result.stderr
    return False, result.stderr


def cli_watch(world: World, evidence: dict[str, str]) -> tuple[bool, str]:
    return _cli(world, ["incidents", "acknowledge", "ledger"], evidence)


def cli_agent(world: World, evidence: dict[str, str]) -> tuple[bool, str]:
    return _cli(world, ["agents", "ack", AGENT], evidence)


def _mcp(world: World, arguments: dict[str, str]) -> tuple[bool, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTGATE_")}
    with serving(world.app) as running:
        env |= {"DRIFTGATE_URL": running.url, "DRIFTGATE_API_KEY": world.acme.key}
        params = StdioServerParameters(
            command=DRIFTGATE[0], args=[*DRIFTGATE[1:], "mcp"], env=env, cwd=str(ROOT)
        )

        async def call() -> Any:
            async with Client(params) as client:
                return await client.call_tool("acknowledge_drift", arguments)

        result = anyio.run(call)
    text = str(result.content[0].text)
    if not result.is_error:
        return True, text
    assert "(HTTP 403, approval_refused)" in text, text
    assert "pass repository acme/ruled-bot branch main" in text, text
    return False, text


def mcp_watch(world: World, evidence: dict[str, str]) -> tuple[bool, str]:
    return _mcp(world, {"watchId": world.watch_id, "note": "fixing", **evidence})


def mcp_agent(world: World, evidence: dict[str, str]) -> tuple[bool, str]:
    return _mcp(world, {"agentId": AGENT, "note": "fixing", **evidence})


PATHS: dict[str, Path_] = {
    "api-watch": api_watch,
    "api-agent": api_agent,
    "console-watch": console_watch,
    "console-agent": console_agent,
    "cli-watch": cli_watch,
    "cli-agent": cli_agent,
    "mcp-watch": mcp_watch,
    "mcp-agent": mcp_agent,
}
# Real processes: left out of `make check`, run by `make test`.
SLOW = {"mcp-watch", "mcp-agent"}

# The routes of the app that acknowledge, and the path of the matrix that calls each.
ACK_ROUTES = {
    "/api/watches/<watch_id>/incident/ack": "api-watch",
    "/api/agents/<agent_id>/ack": "api-agent",
    "/console/watches/<watch_id>/incident/<step>": "console-watch",
    "/console/agents/<agent_id>/ack": "console-agent",
}


@pytest.mark.parametrize(
    "path",
    [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in PATHS],
)
def test_every_path_applies_the_agents_approval_rules(world: World, path: str) -> None:
    acknowledge = PATHS[path]
    assert world.preflight() == 409  # staging-strict: breaking drift blocks the agent
    for evidence in ({}, WRONG):
        accepted, told = acknowledge(world, evidence)
        assert not accepted, (path, evidence)
        assert "ruled-bot" in told
        assert world.incident_status() == "open"  # nothing stored
        assert world.stored_acks() == ([], [])
        assert world.preflight() == 409
    accepted, _ = acknowledge(world, RIGHT)
    assert accepted, path
    assert world.incident_status() == "acknowledged"
    audited, _ = world.stored_acks()
    assert len(audited) == 1
    assert world.preflight() == 200


def test_every_route_that_acknowledges_is_in_the_matrix(app: Flask) -> None:
    acknowledging = {
        re.sub(r"<(?:[^:>]*:)?(\w+)>", r"<\1>", rule.rule)  # without converters
        for rule in app.url_map.iter_rules()
        if "POST" in (rule.methods or ())
        and (re.search(r"(^|/)(ack|acknowledge)(/|$)", rule.rule) or "<step>" in rule.rule)
    }
    assert acknowledging == set(ACK_ROUTES)
    assert set(ACK_ROUTES.values()) <= set(PATHS)


def test_the_rules_of_every_agent_the_acknowledgement_unblocks_decide(
    world: World, make_org: Callable[..., OrgKey]
) -> None:
    # A second agent on the same watch accepts only release branches.
    other = {"repository": "acme/ruled-bot", "branches": ["release/*"]}
    add_agent(world.database, world.acme.org_id, "careful-bot", world.watch_id, [other])
    main = {"note": "fixing", "repository": "acme/ruled-bot", "branch": "main"}
    for route in (f"/api/watches/{world.watch_id}/incident/ack", f"/api/agents/{AGENT}/ack"):
        refused = world.client.post(route, json=main, headers=world.acme.headers)
        assert refused.status_code == 403, refused.get_json()
        body = refused.get_json()
        assert body["message"] == (
            "no remediation approval rule of agent 'careful-bot' accepts acme/ruled-bot@main"
        )
        assert body["details"] == [{"agentId": "careful-bot", "rule": other, "failed": "branch"}]
    assert world.incident_status() == "open" and world.stored_acks() == ([], [])
    # As the hosted product's MCP server sends it: no body at all.
    both = world.client.post(
        f"/api/watches/{world.watch_id}/incident/ack",
        data=b"",
        headers={**world.acme.headers, "Content-Type": "application/json"},
    )
    assert both.status_code == 403
    assert both.get_json()["message"] == (
        "no remediation approval rule of agents 'careful-bot' and 'ruled-bot' accepts "
        "(no repository)@(no branch)"
    )
    assert [d["agentId"] for d in both.get_json()["details"]] == ["careful-bot", "ruled-bot"]
    assert world.preflight() == 409 and world.preflight("careful-bot") == 409
    accepted = world.client.post(
        f"/api/watches/{world.watch_id}/incident/ack", json=RIGHT, headers=world.acme.headers
    )
    assert accepted.status_code == 200 and accepted.get_json()["status"] == "acknowledged"
    assert world.preflight() == 200 and world.preflight("careful-bot") == 200
    with world.database.session() as session:
        (entry,) = session.scalars(
            select(AuditEntry).where(AuditEntry.action == "incident.acknowledge")
        )
    assert entry.details["approvals"] == {"careful-bot": other, AGENT: RULE}
    # Once acknowledged there is nothing left to unblock: acknowledging again changes nothing.
    again = world.client.post(
        f"/api/watches/{world.watch_id}/incident/ack", json={}, headers=world.acme.headers
    )
    assert again.status_code == 200 and again.get_json()["status"] == "acknowledged"
    # Another org cannot reach the watch at all.
    other_org = make_org("globex")
    theirs = world.client.post(
        f"/api/watches/{world.watch_id}/incident/ack", json=RIGHT, headers=other_org.headers
    )
    assert theirs.status_code == 404


def test_a_drift_kill_ends_with_an_accepted_acknowledgement_of_the_watch(
    world: World,
) -> None:
    add_agent(
        world.database, world.acme.org_id, "guard-bot", world.watch_id, [RULE], "production-guard"
    )
    with world.database.transaction() as session:
        guard = session.scalars(select(Agent).where(Agent.key == "guard-bot")).one()
        guard.runtime_state, guard.runtime_reason = "killed", "breaking_drift"
    assert world.preflight("guard-bot") == 409
    refused = world.client.post(
        f"/api/watches/{world.watch_id}/incident/ack", json=WRONG, headers=world.acme.headers
    )
    assert refused.status_code == 403
    unblock = world.client.post(
        "/api/agents/guard-bot/unblock", json={}, headers=world.acme.headers
    )
    assert unblock.status_code == 409 and unblock.get_json()["error"] == "ack_required"
    accepted = world.client.post(
        f"/api/watches/{world.watch_id}/incident/ack", json=RIGHT, headers=world.acme.headers
    )
    assert accepted.status_code == 200
    status = world.client.get("/api/agents/guard-bot/status", headers=world.acme.headers)
    assert status.get_json()["runtime"]["state"] == "running"
    assert world.preflight("guard-bot") == 200


def test_the_console_names_the_rules_before_the_acknowledgement_is_sent(world: World) -> None:
    make_user(world.database, "acme", "admin@example.com")
    console = sign_in(world.app.test_client(), "admin@example.com")
    page = console.get(f"/console/watches/{world.watch_id}").get_data(as_text=True)
    assert 'name="repository"' in page and 'name="branch"' in page
    assert "<code>acme/ruled-bot</code> on a branch matching <code>main</code>" in page
    assert "(agent <code>ruled-bot</code>)" in page


# By construction: the decision is the only writer of an acknowledgement.

WRITER = "controller/drift/acknowledgement_service.py"
STORE = "controller/drift/incidents.py"
ACK_COLUMNS = {"acknowledged_at", "acknowledged_by", "ack_note"}


def _sources() -> Iterator[tuple[str, ast.AST]]:
    for package in ("controller", "web", "cli", "demo"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            relative = str(path.relative_to(ROOT))
            yield relative, ast.parse(path.read_text(encoding="utf-8"), filename=relative)


def acknowledgement_writes(tree: ast.AST) -> tuple[bool, bool]:
    """(the code names `acknowledge_incident`, the code writes an acknowledgement column)."""
    calls = writes = False
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(node, ast.alias):
            name = node.name
        calls = calls or name == "acknowledge_incident"
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        writes = writes or any(
            isinstance(t, ast.Attribute) and t.attr in ACK_COLUMNS for t in targets
        )
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            writes = writes or (
                node.value.value == "acknowledged"
                and any(isinstance(t, ast.Attribute) and t.attr == "status" for t in targets)
            )
        if isinstance(node, ast.Call) and _writes_rows(node.func):
            writes = writes or any(k.arg in ACK_COLUMNS for k in node.keywords)
    return calls, writes


def _writes_rows(func: ast.expr) -> bool:
    """`update(...).values(...)`, `session.execute(...)`'s values, or a new `Incident(...)`."""
    if isinstance(func, ast.Attribute):
        return func.attr in ("values", "update")
    return isinstance(func, ast.Name) and func.id == "Incident"


def test_only_the_decision_writes_an_acknowledgement() -> None:
    callers, writers = set(), set()
    for relative, tree in _sources():
        calls, writes = acknowledgement_writes(tree)
        if calls:
            callers.add(relative)
        if writes:
            writers.add(relative)
    assert callers == {WRITER}  # the store defines it; only the decision calls it
    assert writers == {STORE}


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("from controller.drift.incidents import acknowledge_incident", (True, False)),
        ("incidents.acknowledge_incident(s, b, w, i, now, by='x', note=None)", (True, False)),
        ("incident.acknowledged_at = now", (False, True)),
        ("update(Incident).values(acknowledged_by='x')", (False, True)),
        ("Incident(org_id=o, acknowledged_at=now)", (False, True)),
        ("IncidentOut(acknowledged_at=incident.acknowledged_at)", (False, False)),
        ("incident.status = 'open'", (False, False)),
        ("incident.status = 'acknowledged'", (False, True)),
    ],
)
def test_the_walker_sees_a_call_and_a_write(sample: str, expected: tuple[bool, bool]) -> None:
    assert acknowledgement_writes(ast.parse(sample)) == expected
