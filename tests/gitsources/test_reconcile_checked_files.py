"""Reconcile takes the files whose bytes did not change since the applied revision as checked
and does not parse them again; what it applies and reports is the same as a full load's (real
git repositories, the real store)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from controller.crypto import load_secret_box
from controller.gitsources.reconcile import Reconciler, RunResult
from controller.store.db import Database
from controller.store.models import Agent, Source, Template, Watch, WatchSet
from tests.conftest import OrgKey
from tests.factories import AGENTS, ENV, FILES, TEMPLATES, WATCH_SETS, Make, run
from tests.gitrepos import RepoBuilder
from tests.gitsources.conftest import snapshot, source_row


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The base names of the files the loader parses (rather than takes as checked)."""
    from controller.gitsources import load as loader

    names: list[str] = []
    parse = loader._parse

    def spy(name: str, *args: Any) -> Any:
        names.append(name)
        return parse(name, *args)

    monkeypatch.setattr(loader, "_parse", spy)
    return names


def owned_state(database: Database, org_id: str) -> dict[str, Any]:
    """What reconcile wrote in one org, without ids and revisions."""
    with database.session() as session:
        sets = {s.id: s for s in session.scalars(select(WatchSet).where(WatchSet.org_id == org_id))}
        watches = {w.id: w for w in session.scalars(select(Watch).where(Watch.org_id == org_id))}
        agents = session.scalars(select(Agent).where(Agent.org_id == org_id)).all()
        templates = session.scalars(select(Template).where(Template.org_id == org_id)).all()
        return {
            "templates": sorted(
                (t.name, t.url_pattern, tuple(t.tags), t.managed_path, t.managed_digest)
                for t in templates
            ),
            "sets": sorted((s.name, s.managed_path, s.managed_digest) for s in sets.values()),
            "watches": sorted(
                (
                    w.name,
                    w.url,
                    w.watch_type,
                    w.interval_minutes,
                    tuple(w.tags),
                    tuple(w.header_names),
                    sets[w.watch_set_id].name if w.watch_set_id else None,
                    w.managed_path,
                    w.managed_digest,
                )
                for w in watches.values()
            ),
            "agents": sorted(
                (
                    a.key,
                    a.policy,
                    json.dumps(a.policy_rules, sort_keys=True),
                    a.environment,
                    a.managed_digest,
                    tuple(
                        (b.ref, watches[b.watch_id].name if b.watch_id else None)
                        for b in a.bindings
                    ),
                )
                for a in agents
            ),
        }


def outcome(result: RunResult) -> tuple[Any, ...]:
    return (
        result.result,
        result.plan.as_dict() if result.plan else None,
        [(p.file, p.line, p.column, p.path, p.message) for p in result.problems],
    )


def forget_checked_files(database: Database, name: str) -> None:
    with database.transaction() as session:
        row = session.get(Source, name)
        if row is not None:
            row.inventory = {k: v for k, v in (row.inventory or {}).items() if k != "files"}


INLINE = '      - {name: petstore, url: "http://127.0.0.1:9/p.json", type: openapi}\n'


def test_unchanged_files_are_taken_as_checked_and_change_nothing_in_the_result(
    repo: RepoBuilder,
    make_reconciler: Make,
    make_org: Callable[..., OrgKey],
    acme: OrgKey,
    database: Database,
    parsed: list[str],
) -> None:
    """Two sources follow the same commits: `fleet` keeps its checked files, `mirror` loads
    every file every time. Results (problems at their lines included) and objects agree."""
    other = make_org("other")
    sources = (
        {"name": "fleet", "org": "acme", "url": repo.url},
        {"name": "mirror", "org": "other", "url": repo.url},
    )
    agents_inline = AGENTS.replace("      - github-mcp\n", "      - github-mcp\n" + INLINE, 1)
    sets_renamed = WATCH_SETS.replace("name: github-mcp", "name: octo-tools")
    sets_petstore = WATCH_SETS + (
        "      - name: petstore\n        url: http://127.0.0.1:9/other.json\n"
        "        watchType: openapi\n"
    )
    everything = ["agents.yaml", "templates.yaml", "watch-sets.yaml"]
    steps: list[tuple[dict[str, str], dict[str, str], list[str], str]] = [
        ({**FILES}, ENV, everything, "applied"),
        # Only watch-sets.yaml: the agents (checked) now point at a watch that is gone...
        ({".driftgate/watch-sets.yaml": sets_renamed}, ENV, ["watch-sets.yaml"], "applied"),
        # ... and at it again.
        ({".driftgate/watch-sets.yaml": WATCH_SETS}, ENV, ["watch-sets.yaml"], "applied"),
        ({".driftgate/agents.yaml": agents_inline}, ENV, ["agents.yaml"], "applied"),
        # A conflict in agents.yaml (checked) caused by watch-sets.yaml: a full load places it.
        (
            {".driftgate/watch-sets.yaml": sets_petstore},
            ENV,
            ["watch-sets.yaml", *everything],
            "stalled",
        ),
        # Only templates.yaml (watch-sets.yaml is back to the applied bytes): the watch that
        # uses the template changes although its file did not.
        (
            {
                ".driftgate/watch-sets.yaml": WATCH_SETS,
                ".driftgate/templates.yaml": TEMPLATES.replace("stripe.json", "stripe-v2.json"),
            },
            ENV,
            ["templates.yaml"],
            "applied",
        ),
        # Another value of the environment variable: the watch (checked file) is updated.
        (
            {".driftgate/agents.yaml": agents_inline.replace("staging", "qa")},
            {"GITHUB_TOKEN": "Bearer ghp_rotated_value_456"},
            ["agents.yaml"],
            "applied",
        ),
        # The variable is gone: the problem is in watch-sets.yaml (checked), at its line.
        ({".driftgate/agents.yaml": agents_inline}, {}, ["agents.yaml", *everything], "stalled"),
    ]
    results: list[RunResult] = []
    states: list[dict[str, Any]] = []
    for index, (change, env, parsed_by_fleet, expected) in enumerate(steps):
        repo.commit(change, message=f"step {index}")
        reconciler, settings = make_reconciler(*sources, env=env)
        parsed.clear()
        fleet = run(reconciler, settings, "fleet")
        assert parsed == parsed_by_fleet, index
        forget_checked_files(database, "mirror")
        parsed.clear()
        mirror = run(reconciler, settings, "mirror")
        assert parsed == everything, index
        assert fleet.result == expected, (index, fleet.as_dict())
        assert outcome(fleet) == outcome(mirror), index
        assert owned_state(database, acme.org_id) == owned_state(database, other.org_id), index
        results.append(fleet)
        states.append(owned_state(database, acme.org_id))

    bindings = [{agent[0]: agent[5] for agent in state["agents"]} for state in states]
    assert bindings[1]["triage-bot"] == (("github-mcp", None),)
    assert bindings[2]["triage-bot"] == (("github-mcp", "github-mcp"),)
    assert [(p.file, p.line, p.column) for p in results[4].problems] == [
        (".driftgate/agents.yaml", 13, 16)
    ]
    watches = [{w[0]: w for w in state["watches"]} for state in states]
    assert watches[5]["stripe-api"][1] == "http://127.0.0.1:9/specs/stripe-v2.json"
    assert watches[5]["github-mcp"][8] != watches[6]["github-mcp"][8]  # the rotated value
    assert [(p.file, p.line) for p in results[7].problems] == [("watch-sets.yaml", 13)]


def test_checked_files_are_reused_only_with_the_same_secret_source_and_data(
    tmp_path: Path,
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    parsed: list[str],
) -> None:
    import base64
    import zlib

    from controller.settings import load_settings

    everything = ["agents.yaml", "templates.yaml", "watch-sets.yaml"]
    fleet = {"name": "fleet", "org": "acme", "url": repo.url}
    repo.commit(FILES)
    reconciler, settings = make_reconciler(fleet)
    assert run(reconciler, settings).result == "applied"
    assert set(source_row(database).inventory["files"]["entries"]) == set(everything)

    def change_agents(policy: str) -> None:
        repo.commit({".driftgate/agents.yaml": AGENTS.replace("production-guard", policy)})
        parsed.clear()

    change_agents("notify-only")
    assert run(reconciler, settings).result == "applied"
    assert parsed == ["agents.yaml"]

    # Checked data changed in the row (the MAC no longer matches): the file is parsed.
    with database.transaction() as session:
        row = session.get(Source, "fleet")
        assert row is not None
        inventory = json.loads(json.dumps(row.inventory))
        entry = inventory["files"]["entries"]["watch-sets.yaml"]
        data = json.loads(zlib.decompress(base64.b64decode(entry["data"])))
        data["watchSets"][0]["watches"][1]["url"] = "http://127.0.0.1:9/forged"
        entry["data"] = base64.b64encode(zlib.compress(json.dumps(data).encode())).decode()
        row.inventory = inventory
    change_agents("staging-strict")
    assert run(reconciler, settings).result == "applied"
    assert parsed == ["agents.yaml", "watch-sets.yaml"]
    urls = {w[0]: w[1] for w in snapshot(database)["watches"]}
    assert urls["github-mcp"] == "http://127.0.0.1:9/mcp"

    # Another source definition: nothing is taken as checked, once.
    reconciler, settings = make_reconciler({**fleet, "interval": 60})
    change_agents("notify-only")
    assert run(reconciler, settings).result == "applied"
    assert parsed == everything
    change_agents("production-guard")
    assert run(reconciler, settings).result == "applied"
    assert parsed == ["agents.yaml"]

    # Another secret key: nothing written with the first one is taken as checked.
    other_settings = load_settings(
        env={
            "DRIFTGATE_DATA_DIR": str(tmp_path / "other-data"),
            "DRIFTGATE_SECRET_KEY": "another-secret-key-for-this-test-0123",
        },
        database_url=database.url,
        sources=[{**fleet, "interval": 60}],
    )
    other = Reconciler(
        other_settings, database, load_secret_box(other_settings, create=True), env=ENV
    )
    change_agents("staging-strict")
    assert run(other, other_settings).result == "applied"
    assert parsed == everything
