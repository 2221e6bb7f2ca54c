"""Reconcile reads the tool locks of a real git repository into the managed MCP watches
(`watches.tool_lock`), and a check of a watch whose server (the official SDK on 127.0.0.1)
left its lock gives the breaking finding and blocks the gate until the server is locked again;
a watch that is out of its lock from the first check fails closed. A bad lock, or one naming
no watch, changes nothing."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from controller.checks.engine import contract_fetcher, run_check
from controller.crypto import load_secret_box
from controller.gate.service import PreflightRequest, preflight
from controller.model.principal import Principal
from controller.sources.http import make_client
from controller.sources.mcp import fetch_mcp_snapshot
from controller.store.db import Database
from controller.store.models import DriftEvent, Source, Watch
from controller.store.snapshots import decode_changes
from controller.toollock.lock import entry_of, render
from tests.conftest import OrgKey
from tests.factories import Make, run
from tests.gitrepos import RepoBuilder
from tests.mcp_servers import COUNT, DELETE, SEARCH, SdkServer, full_surface
from tests.toollock.conftest import hosted_lock, surface, tool

URL = "http://127.0.0.1:9/mcp"


def watch_sets(*watches: tuple[str, str]) -> str:
    rows = "".join(
        f"      - name: {name}\n        url: {url}\n        watchType: mcp\n"
        for name, url in watches
    )
    return f"version: 1\nwatchSets:\n  - name: tools\n    watches:\n{rows}"


def tool_locks(database: Database) -> dict[str, Any]:
    with database.session() as session:
        return {w.name: w.tool_lock for w in session.scalars(select(Watch))}


def problems(database: Database) -> list[str]:
    with database.session() as session:
        source = session.get(Source, "fleet")
        assert source is not None
        return [f"{p['file']}:{p['line']}: {p['message']}" for p in source.problems]


def test_reconcile_pins_the_watch_a_lock_names_and_a_bad_lock_changes_nothing(
    repo: RepoBuilder, make_reconciler: Make, database: Database, acme: OrgKey
) -> None:
    entry = entry_of(surface([tool("search")]))
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": watch_sets(("catalog", URL), ("other", URL + "2")),
            ".driftgate/mcp.lock": render({"catalog": entry}),
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    pinned = tool_locks(database)
    assert pinned["other"] is None
    assert pinned["catalog"] == {**entry, "server": "catalog", "file": ".driftgate/mcp.lock"}

    # A server that names no watch: the revision stalls at the server's line, nothing moves.
    text = render({"catalog": entry, "nope": entry})
    repo.commit({".driftgate/mcp.lock": text})
    assert run(reconciler, settings).result == "stalled"
    [problem] = problems(database)
    line = text[: text.index('"nope"')].count("\n") + 1
    assert problem.startswith(f".driftgate/mcp.lock:{line}: server 'nope' of the lock names no MCP")
    assert tool_locks(database) == pinned

    # A malformed lock: its line, and nothing moves either.
    repo.commit({".driftgate/mcp.lock": '{"version": 1,\n "servers": {"catalog": []}}\n'})
    assert run(reconciler, settings).result == "stalled"
    [problem] = problems(database)
    assert problem.startswith(".driftgate/mcp.lock:2: server 'catalog' must be an object")
    assert tool_locks(database) == pinned

    # The lock removed: the watch is pinned no more.
    repo.commit({".driftgate/mcp.lock": None})
    assert run(reconciler, settings).result == "applied"
    assert tool_locks(database) == {"catalog": None, "other": None}


def test_the_hosted_lock_pins_the_watch_of_its_server_by_url(
    repo: RepoBuilder, make_reconciler: Make, database: Database, acme: OrgKey
) -> None:
    tools = [tool("search"), tool("count")]
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": watch_sets(("Catalog Tools", URL)),
            ".driftguard/mcp/driftguard-lock.json": hosted_lock({"catalog": (URL, tools)}),
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied", problems(database)
    lock = tool_locks(database)["Catalog Tools"]
    assert lock == {
        "tools": entry_of(surface(tools))["tools"],
        "server": "catalog",
        "file": ".driftguard/mcp/driftguard-lock.json",
    }


def test_a_server_that_leaves_its_lock_blocks_the_gate(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    tmp_path: Path,
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    served = full_surface(tmp_path / "surface.json")
    http = make_client(allow_private=True, timeout=10.0)
    with SdkServer("streamable", served) as mcp:
        entry = entry_of(fetch_mcp_snapshot(mcp.url, client=http))
        # `stale` was locked before `count` existed: out of its lock from its first check.
        stale = {**entry, "tools": {k: v for k, v in entry["tools"].items() if k != "count"}}
        repo.commit(
            {
                ".driftgate/watch-sets.yaml": watch_sets(
                    ("catalog", mcp.url), ("stale", mcp.url + "/")
                ),
                ".driftgate/mcp.lock": render({"catalog": entry, "stale": stale}),
            }
        )
        reconciler, settings = make_reconciler(
            {"name": "fleet", "org": "acme", "url": repo.url}, allow_private_targets=True
        )
        assert run(reconciler, settings).result == "applied", problems(database)
        box = load_secret_box(settings)
        with database.session() as session:
            ids = {w.name: w.id for w in session.scalars(select(Watch))}
        fetcher = contract_fetcher(settings, http)
        principal = Principal(
            acme.org_id, acme.org_name, "pro", frozenset(), "api_key", acme.key_id
        )

        def check(name: str, at: datetime) -> Any:
            return run_check(database, ids[name], box=box, fetcher=fetcher, now=at)

        # Fail closed: no baseline out of a surface its lock refuses.
        first = check("stale", now)
        assert (first.status, first.failure_class) == ("error", "invalid_contract")
        assert "stale: tool count is not in the lock" in (first.error or "")

        assert check("catalog", now).status == "ok"  # the baseline, judged clean

        # A rug pull on a pinned tool.
        full_surface(served, tools=[{**SEARCH, "description": "Search everything"}, DELETE, COUNT])
        at = now + timedelta(minutes=15)
        assert check("catalog", at).status == "drifted"
        with database.session() as session:
            event = session.scalars(
                select(DriftEvent).where(DriftEvent.watch_id == ids["catalog"])
            ).one()
            changes = decode_changes(event.changes)
        [locked] = [c for c in changes if c["rule"].startswith("tool-lock")]
        assert locked["rule"] == "tool-lock-description-changed"
        assert locked["severity"] == "breaking" and locked["location"] == {"tool": "search"}
        assert locked["agentAction"] == "review_tool_lock"
        # The verdicts are no change of their own.
        assert not [c for c in changes if "verdicts" in c["path"]]

        outcome = preflight(
            database,
            principal,
            PreflightRequest(watch_ids=[ids["catalog"]]),
            at,
            time.perf_counter(),
        )
        assert not outcome.decision.allowed
        [row] = outcome.decision.blocked
        assert row.reasons == ["breaking_drift", "tool_lock_violated"]
        assert "review_tool_lock" in row.agent_actions

        # A person reviewed the new text, locked the server again and committed the lock: the
        # next check holds no lock violation any more.
        relocked = entry_of(fetch_mcp_snapshot(mcp.url, client=http))
        repo.commit({".driftgate/mcp.lock": render({"catalog": relocked, "stale": stale})})
        assert run(reconciler, settings).result == "applied"
        at += timedelta(minutes=15)
        again = check("catalog", at)
        with database.session() as session:
            latest = session.scalars(
                select(DriftEvent)
                .where(DriftEvent.watch_id == ids["catalog"])
                .order_by(DriftEvent.detected_at.desc())
            ).first()
            assert latest is not None
            rules = [c["rule"] for c in decode_changes(latest.changes)]
        assert again.status == "ok" and rules == ["tool-description-changed"]
        outcome = preflight(
            database,
            principal,
            PreflightRequest(watch_ids=[ids["catalog"]]),
            at,
            time.perf_counter(),
        )
        assert outcome.decision.allowed
    http.close()
