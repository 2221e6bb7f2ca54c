"""`driftgate preflight` in CI (issue 44, point 4) against a real server on 127.0.0.1: the
JUnit report (one test case per watch, valid against junit-10.xsd), `--wait-while-unknown`
answered by a real first check that lands during the wait, and `--dry-run` as an audited
break-glass that exits 0 on a decision that would block."""

from __future__ import annotations

import json
import logging
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from flask import Flask
from sqlalchemy import select

from controller.checks.engine import contract_fetcher, run_check
from controller.crypto import load_secret_box
from controller.settings import Settings
from controller.sources.http import make_client
from controller.store.db import Database
from controller.store.models import AuditEntry
from tests.cli.preflights import (
    Clock,
    add_agent,
    api_client,
    create_watch,
    drift,
    mark_checked,
    run,
)
from tests.conftest import OrgKey
from tests.formats import assert_valid_junit
from tests.servers import SpecServer, WsgiServer, serving
from tests.specs import as_json, charges_spec


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    from cli.commands import preflight

    moved = Clock()
    monkeypatch.setattr(preflight, "time", moved)
    return moved


@pytest.fixture
def gate(app: Flask, monkeypatch: pytest.MonkeyPatch) -> Iterator[WsgiServer]:
    """The app on a loopback port, its log kept out of the command's output (CliRunner swaps
    the process's stderr while a command runs, and the server thread logs there)."""
    monkeypatch.setattr(logging.getLogger("driftgate"), "handlers", [logging.NullHandler()])
    with serving(app) as running:
        yield running


@pytest.fixture
def api(gate: WsgiServer, acme: OrgKey) -> Iterator[httpx.Client]:
    with api_client(gate.url, acme) as client:
        yield client


def cases(report: str) -> dict[str, ET.Element]:
    assert_valid_junit(report)
    return {case.get("name", ""): case for case in ET.fromstring(report).iter("testcase")}


def audited(database: Database, action: str) -> list[AuditEntry]:
    with database.session() as session:
        return list(session.scalars(select(AuditEntry).where(AuditEntry.action == action)))


def test_junit_has_one_case_per_watch_and_fails_the_blocked_ones(
    gate: WsgiServer, acme: OrgKey, api: httpx.Client, database: Database
) -> None:
    healthy, fresh, paused = (create_watch(api, n) for n in ("healthy", "fresh", "paused"))
    mark_checked(database, healthy)
    assert api.post(f"/api/watches/{paused}/pause").status_code == 200
    result = run(
        gate.url, acme.key, "--watch", "healthy", "--watch", fresh, "--watch", paused,
        "--watch", "nope", "--format", "junit",
    )  # fmt: skip
    assert result.exit_code == 1 and result.stderr == ""
    found = cases(result.stdout)
    assert list(found) == [
        f"watch healthy ({healthy})",  # named on the command line, shown by name and id
        f"watch fresh ({fresh})",
        f"watch paused ({paused})",
        "watch nope",
    ]
    assert list(found[f"watch healthy ({healthy})"]) == []  # passed
    failure = found[f"watch fresh ({fresh})"].find("failure")
    assert failure is not None and failure.get("type") == "never_checked"
    assert failure.get("message") == "blocked: never_checked"
    assert "agentActions: wait_for_first_check" in (failure.text or "")
    paused_failure = found[f"watch paused ({paused})"].find("failure")
    assert paused_failure is not None and paused_failure.get("type") == "disabled"
    not_found = found["watch nope"].find("failure")
    assert not_found is not None and not_found.get("type") == "not_found"
    suite = ET.fromstring(result.stdout).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "3", "0")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["allowed"] == "false" and properties["dryRun"] == "false"
    assert suite.get("id") == properties["decisionId"] != ""
    # An ignored watch is a skipped case with its reason; all allowed: no failure, exit 0.
    ignored = run(
        gate.url, acme.key, "--watch", healthy, "--watch", paused,
        "--ignore", f"{paused}:maintenance", "--format", "junit",
    )  # fmt: skip
    assert ignored.exit_code == 0
    skipped = cases(ignored.stdout)[f"watch paused ({paused})"].find("skipped")
    assert skipped is not None and skipped.get("message") == "ignored: maintenance"


def test_junit_for_an_agent_lists_its_bound_watches_and_its_own_block(
    gate: WsgiServer, acme: OrgKey, api: httpx.Client, database: Database
) -> None:
    healthy, stripe = create_watch(api, "healthy"), create_watch(api, "stripe")
    mark_checked(database, healthy)
    drift(database, acme, stripe)
    add_agent(database, acme, "billing", [healthy, stripe])
    result = run(gate.url, acme.key, "--agent", "billing", "--format", "junit")
    assert result.exit_code == 1
    found = cases(result.stdout)
    assert list(found) == [f"watch {healthy}", f"watch stripe ({stripe})", "agent billing"]
    assert list(found[f"watch {healthy}"]) == []
    stripe_failure = found[f"watch stripe ({stripe})"].find("failure")
    assert stripe_failure is not None
    assert stripe_failure.get("message") == ("blocked: breaking_drift, policy_block:block_new_runs")
    agent_failure = found["agent billing"].find("failure")
    assert agent_failure is not None
    assert agent_failure.get("message") == "blocked: policy staging-strict blocks"


def test_dry_run_is_an_audited_break_glass_that_exits_0(
    gate: WsgiServer, acme: OrgKey, api: httpx.Client, database: Database
) -> None:
    stripe = create_watch(api, "stripe")
    drift(database, acme, stripe)
    add_agent(database, acme, "billing", [stripe])
    enforced = run(gate.url, acme.key, "--agent", "billing")
    assert enforced.exit_code == 1
    assert audited(database, "preflight.dry_run") == []  # only the break-glass is audited

    result = run(gate.url, acme.key, "--agent", "billing", "--dry-run", "--format", "junit")
    assert result.exit_code == 0
    assert "the run would be blocked; exit 0" in result.stderr
    found = cases(result.stdout)
    # Nothing is enforced in a dry run: the would-be blocks are skipped, not failed.
    would = found[f"watch stripe ({stripe})"].find("skipped")
    assert would is not None
    assert (
        would.get("message") == "dry run, would block: breaking_drift, policy_block:block_new_runs"
    )
    assert ET.fromstring(result.stdout).find("testsuite").get("failures") == "0"  # type: ignore[union-attr]

    (entry,) = audited(database, "preflight.dry_run")
    properties = {
        p.get("name"): p.get("value") for p in ET.fromstring(result.stdout).iter("property")
    }
    assert entry.org_id == acme.org_id and entry.target_type == "preflight"
    assert entry.actor.endswith(acme.key_id)
    assert entry.target_id == properties["decisionId"]
    details: dict[str, Any] = entry.details
    assert details["agentId"] == "billing" and details["watchIds"] is None
    assert details["wouldAllow"] is False and details["wouldPolicyBlock"] is True
    assert details["wouldStatus"] == 409
    assert details["blocked"] == [
        {"watchId": stripe, "reasons": ["breaking_drift", "policy_block:block_new_runs"]}
    ]
    # A dry run that would allow is audited too: the break-glass was used.
    healthy = create_watch(api, "healthy")
    mark_checked(database, healthy)
    allowed = run(gate.url, acme.key, "--watch", healthy, "--dry-run", "--format", "json")
    assert allowed.exit_code == 0 and allowed.stderr == ""
    answer = json.loads(allowed.stdout)
    entries = audited(database, "preflight.dry_run")
    assert len(entries) == 2
    latest = next(e for e in entries if e.target_id == answer["decisionId"])
    assert latest.details["wouldAllow"] is True and latest.details["watchIds"] == [healthy]


def test_wait_while_unknown_is_answered_by_a_real_first_check(
    api_server: WsgiServer,
    server: SpecServer,
    acme: OrgKey,
    clock: Clock,
    live_settings: Settings,
    database: Database,
) -> None:
    """No scheduler runs here: the watch's first check is the check engine's own
    (`run_check`, as a controller runs it: a fetch from the loopback vendor, a baseline),
    made while the command waits; the next question is answered `allowed`."""
    spec = server.set("/charges.json", as_json(charges_spec()))
    headers = {**acme.headers, "User-Agent": "driftgate-tests"}
    with httpx.Client(base_url=api_server.url, headers=headers, timeout=30) as api:
        created = api.post("/api/watches", json={"name": "charges", "url": spec})
        assert created.status_code == 201, created.text
    watch_id = created.json()["id"]
    outcomes: list[str] = []

    def first_check() -> None:
        with make_client(allow_private=True, timeout=10.0) as client:
            result = run_check(
                database,
                watch_id,
                box=load_secret_box(live_settings),
                fetcher=contract_fetcher(live_settings, client),
                now=datetime.now(UTC),
            )
        outcomes.append(result.outcome)

    clock.at(1.5, first_check)
    result = run(
        api_server.url, acme.key, "--watch", "charges",
        "--wait-while-unknown", "30", "--interval", "0.5",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("allowed decision ")
    assert result.stderr == (
        "driftgate: 1 watch(es) not checked yet; asking again every 0.5s for up to 30s\n"
    )
    assert outcomes == ["baseline"] and clock.now == pytest.approx(1.5)
    assert ("GET", "/charges.json") in [(method, path) for method, path, _ in server.requests]
    assert len(api_server.preflights()) == 4  # at 0, 0.5, 1 and 1.5 s


def test_wait_while_unknown_ends_at_once_on_a_known_block(
    gate: WsgiServer, acme: OrgKey, api: httpx.Client, database: Database, clock: Clock
) -> None:
    fresh, stripe = create_watch(api, "fresh"), create_watch(api, "stripe")
    drift(database, acme, stripe)
    result = run(
        gate.url, acme.key, "--watch", fresh, "--watch", stripe,
        "--wait-while-unknown", "30", "--format", "junit",
    )  # fmt: skip
    assert result.exit_code == 1 and clock.now == 0
    assert len(gate.preflights()) == 1
    failed = [c for c in cases(result.stdout).values() if c.find("failure") is not None]
    assert len(failed) == 2
