"""Reconcile from real git repositories (made with pygit2 in tmp_path) into the real store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest
from pygit2.enums import FileMode
from sqlalchemy import select

from controller.crypto import load_secret_box
from controller.gitsources.reconcile import Reconciler, RunResult
from controller.store.db import Database
from controller.store.models import Agent, Source, Template, Watch, WatchSet
from tests.conftest import OrgKey
from tests.factories import AGENTS, ENV, FILES, TEMPLATES, WATCH_SETS, Make, run
from tests.gitrepos import RepoBuilder, git_daemon, isolated_git_config


def snapshot(database: Database) -> dict[str, Any]:
    """Everything reconcile may touch, as plain values (to compare before and after)."""
    with database.session() as session:
        return {
            "watches": sorted(
                (w.name, w.url, w.watch_type, w.managed_source, tuple(w.tags))
                for w in session.scalars(select(Watch))
            ),
            "agents": sorted(
                (a.key, a.policy, tuple((b.ref, b.watch_id) for b in a.bindings))
                for a in session.scalars(select(Agent))
            ),
            "templates": sorted(t.name for t in session.scalars(select(Template))),
            "sets": sorted(s.name for s in session.scalars(select(WatchSet))),
        }


def source_row(database: Database, name: str = "fleet") -> Source:
    with database.session() as session:
        row = session.get(Source, name)
        assert row is not None
        return row


def condition(row: Source, kind: str) -> dict[str, Any]:
    return next(c for c in row.conditions if c["type"] == kind)


def test_a_revision_is_applied_and_a_second_run_is_a_no_op(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    sha = repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert result.plan is not None and result.plan.counts() == {
        "created": 6,  # 1 template, 1 watch set, 2 watches, 2 agents
        "updated": 0,
        "pruned": 0,
    }
    state = snapshot(database)
    assert [w[0] for w in state["watches"]] == ["github-mcp", "stripe-api"]
    stripe = next(w for w in state["watches"] if w[0] == "stripe-api")
    assert stripe[1] == "http://127.0.0.1:9/specs/stripe.json"  # from the template
    assert stripe[4] == ("vendor:stripe", "env:prod")
    with database.session() as session:
        mcp = session.scalars(select(Watch).where(Watch.name == "github-mcp")).one()
        assert mcp.managed_source == "fleet" and mcp.managed_revision == sha
        assert mcp.managed_path == ".driftgate/watch-sets.yaml"
        assert mcp.header_names == ["Authorization"]
        assert "ghp_secret" not in (mcp.headers_ciphertext or "")
        billing = session.scalars(select(Agent).where(Agent.key == "billing-agent")).one()
        assert [b.watch_id is not None for b in billing.bindings] == [True, True]
        assert billing.vendored_paths == {"stripe-api": "contracts/stripe.json"}
        triage = session.scalars(select(Agent).where(Agent.key == "triage-bot")).one()
        assert triage.policy == "careful"
        assert triage.policy_rules is not None
    row = source_row(database)
    assert row.last_fetched_revision == row.last_applied_revision == sha
    assert condition(row, "Ready")["status"] == "True"
    assert condition(row, "Stalled")["status"] == "False"

    again = run(reconciler, settings)
    assert again.result == "unchanged"
    assert snapshot(database) == state


def test_a_change_updates_and_prunes_only_what_changed(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    run(reconciler, settings)
    with database.session() as session:
        stripe_id = session.scalars(select(Watch.id).where(Watch.name == "stripe-api")).one()
    repo.commit(
        {
            ".driftgate/agents.yaml": AGENTS.replace(
                "policy: production-guard", "policy: staging-strict"
            ).replace(
                "  - id: triage-bot\n    environment: staging\n    policy: careful\n"
                "    watches:\n      - github-mcp\n",
                "",
            ),
        }
    )
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert result.plan is not None
    assert result.plan.as_dict()["update"] == {"agents": ["billing-agent"]}
    assert result.plan.as_dict()["prune"] == {"agents": ["triage-bot"]}
    with database.session() as session:
        # The watch was not recreated: same id, its history stays.
        assert (
            session.scalars(select(Watch.id).where(Watch.name == "stripe-api")).one() == stripe_id
        )
        assert session.scalars(select(Agent.policy)).all() == ["staging-strict"]


@pytest.mark.parametrize(
    ("files", "where", "needle"),
    [
        (
            {".driftgate/agents.yaml": "version: 1\nagents:\n  - id: [unclosed\n"},
            "agents.yaml:4",
            "invalid YAML",
        ),
        (
            {".driftgate/agents.yaml": AGENTS.replace("policy: careful", "policy: reckless")},
            "agents.yaml:18",
            "reckless",
        ),
        (
            {".driftgate/agents.yaml": AGENTS.replace("id: triage-bot", "id: billing-agent")},
            "agents.yaml:16",
            "billing-agent",
        ),
        (
            {
                ".driftgate/watch-sets.yaml": WATCH_SETS.replace(
                    "${env:GITHUB_TOKEN}", "Bearer plain-secret"
                )
            },
            "watch-sets.yaml:13",
            "env:",
        ),
        (
            {
                ".driftgate/watch-sets.yaml": WATCH_SETS.replace(
                    "template: stripe", "template: nope"
                )
            },
            "watch-sets.yaml:7",
            "nope",
        ),
    ],
    ids=["invalid-yaml", "unknown-policy", "duplicate-id", "plain-secret", "unknown-template"],
)
def test_a_bad_commit_changes_nothing_and_stalls_with_file_and_line(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    files: dict[str, str],
    where: str,
    needle: str,
) -> None:
    good = repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    before = snapshot(database)
    bad = repo.commit(files, message="bad")
    result = run(reconciler, settings)
    assert result.result == "stalled"
    assert snapshot(database) == before
    row = source_row(database)
    assert row.last_applied_revision == good
    assert row.last_attempted_revision == row.last_fetched_revision == bad
    stalled = condition(row, "Stalled")
    assert stalled["status"] == "True"
    rendered = [f"{p['file']}:{p['line']}:{p['column']}: {p['message']}" for p in row.problems]
    assert any(where in line and needle in line for line in rendered), rendered
    assert condition(row, "Ready")["status"] == "False"
    # The same bad revision is not validated again, on every later poll, and its status
    # keeps the file:line problems it was recorded with; a fixed commit recovers.
    for _ in range(3):
        again = run(reconciler, settings)
        assert again.result == "stalled" and again.repeat
        later = source_row(database)
        assert later.problems == row.problems and later.runs == row.runs
        assert condition(later, "Stalled") == stalled
    fixed = repo.commit(FILES, message="fix")
    assert run(reconciler, settings).result == "applied"
    row = source_row(database)
    assert row.last_applied_revision == fixed and row.problems == []
    assert condition(row, "Stalled")["status"] == "False"


def test_a_missing_env_reference_stalls_without_echoing_values(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(FILES)
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, env={}
    )
    result = run(reconciler, settings)
    assert result.result == "stalled"
    assert "GITHUB_TOKEN" in str(result.problems[0]) and "watch-sets.yaml:13" in str(
        result.problems[0]
    )
    assert snapshot(database)["watches"] == []


@pytest.mark.parametrize(
    ("value", "needle"),
    [("Bearer tök-secret", "ASCII"), ("Bearer secret\r\nX-Injected: 1", "line breaks")],
)
def test_an_env_value_that_cannot_be_sent_stalls_without_echoing_it(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    value: str,
    needle: str,
) -> None:
    repo.commit(FILES)
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, env={"GITHUB_TOKEN": value}
    )
    result = run(reconciler, settings)
    assert result.result == "stalled"
    (problem,) = result.problems
    text = str(problem)
    assert "watch-sets.yaml:13" in text and "GITHUB_TOKEN" in text
    assert "cannot be sent" in text and needle in text and "secret" not in text
    assert snapshot(database)["watches"] == []


def test_pruning_everything_needs_allow_empty(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    run(reconciler, settings)
    before = snapshot(database)
    repo.commit({name: None for name in FILES}, message="remove everything")
    result = run(reconciler, settings)
    assert result.result == "stalled" and "allowEmpty" in str(result.problems[0])
    assert snapshot(database) == before
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url, "allowEmpty": True}
    )
    assert run(reconciler, settings).result == "applied"
    assert snapshot(database) == {"watches": [], "agents": [], "templates": [], "sets": []}


def test_an_unresolved_reference_is_a_condition_of_that_agent_only(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(
        {**FILES, ".driftgate/agents.yaml": AGENTS.replace("- stripe-api", "- not-a-watch")}
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    from controller.agents.service import agent_out, get_agent

    with database.session() as session:
        billing = agent_out(get_agent(session, acme.org_id, "billing-agent"))
        triage = agent_out(get_agent(session, acme.org_id, "triage-bot"))
    assert [w.resolved for w in billing.watches] == [False, True]
    assert billing.conditions[0].status == "False"
    assert "not-a-watch" in billing.conditions[0].message
    assert triage.conditions[0].status == "True"


def test_force_push_and_git_daemon(
    tmp_path: Path, repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(FILES)
    with git_daemon(tmp_path) as port:
        reconciler, settings = make_reconciler(
            {"name": "fleet", "org": "acme", "url": f"git://127.0.0.1:{port}/remote.git"}
        )
        assert run(reconciler, settings).result == "applied"
        # History rewritten: a new root commit without triage-bot replaces main.
        repo.delete_branch("main")
        rewritten = repo.commit(
            {
                **FILES,
                ".driftgate/agents.yaml": AGENTS.split("  - id: triage-bot")[0],
            },
            message="rewritten",
        )
        result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert source_row(database).last_applied_revision == rewritten
    assert [a[0] for a in snapshot(database)["agents"]] == ["billing-agent"]


def test_two_sources_own_different_objects_and_cannot_take_each_others(
    tmp_path: Path, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    with isolated_git_config(tmp_path / "gitconfig"):
        first = RepoBuilder(tmp_path / "first.git")
        second = RepoBuilder(tmp_path / "second.git")
        first.commit(FILES)
        second.commit(
            {
                ".driftgate/watch-sets.yaml": "version: 1\nwatchSets:\n  - name: other\n"
                "    watches:\n      - name: other-api\n        url: http://127.0.0.1:9/o.json\n"
                "        watchType: openapi\n"
            }
        )
        reconciler, settings = make_reconciler(
            {"name": "fleet", "org": "acme", "url": first.url},
            {"name": "other", "org": "acme", "url": second.url},
        )
        assert run(reconciler, settings, "fleet").result == "applied"
        assert run(reconciler, settings, "other").result == "applied"
        with database.session() as session:
            owners = dict(session.execute(select(Watch.name, Watch.managed_source)).all())
        assert owners == {"stripe-api": "fleet", "github-mcp": "fleet", "other-api": "other"}
        # The second source now declares a watch the first one owns: refused, nothing changes.
        before = snapshot(database)
        second.commit(
            {
                ".driftgate/watch-sets.yaml": "version: 1\nwatchSets:\n  - name: other\n"
                "    watches:\n      - name: stripe-api\n        url: http://127.0.0.1:9/o.json\n"
                "        watchType: openapi\n"
            }
        )
        result = run(reconciler, settings, "other")
    assert result.result == "stalled"
    assert "owned by source 'fleet'" in str(result.problems[0])
    assert snapshot(database) == before


def test_dry_run_prints_the_plan_and_changes_nothing(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings, dry_run=True)
    assert result.result == "dry_run" and result.plan is not None
    assert result.plan.as_dict()["create"]["agents"] == ["billing-agent", "triage-bot"]
    assert snapshot(database)["watches"] == []
    assert source_row(database).last_applied_revision is None


def test_managed_objects_are_read_only_through_the_api(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    client: Any,
) -> None:
    repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    run(reconciler, settings)
    with database.session() as session:
        watch_id = session.scalars(select(Watch.id).where(Watch.name == "stripe-api")).one()
    response = client.patch(
        f"/api/watches/{watch_id}", json={"intervalMinutes": 5}, headers=acme.headers
    )
    assert response.status_code == 409
    assert response.get_json()["error"] == "managed_by_source"
    listing = client.get("/api/agents", headers=acme.headers).get_json()
    assert [a["id"] for a in listing["agents"]] == ["billing-agent", "triage-bot"]
    one = client.get("/api/agents/billing-agent", headers=acme.headers).get_json()
    assert one["managedBy"]["source"] == "fleet"
    assert json.dumps(one).count("ghp_secret") == 0


def test_sources_api_push_webhook_and_the_controller_job(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, make_org: Any, database: Database
) -> None:
    import hashlib
    import hmac

    from controller.scheduler import Controller
    from web.app import create_app

    sha = repo.commit(FILES)
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url, "branch": "main"},
        github_webhook_secret="hook-secret",
    )
    client = create_app(settings, database=database).test_client()
    other = make_org("other-org")

    # Before any run: the source is listed, nothing applied yet; another org cannot see it.
    listed = client.get("/api/sources", headers=acme.headers).get_json()["sources"]
    assert [s["name"] for s in listed] == ["fleet"] and listed[0]["lastAppliedRevision"] is None
    assert client.get("/api/sources/fleet", headers=other.headers).status_code == 404
    assert client.get("/api/sources", headers=other.headers).get_json() == {"sources": []}

    # A signed push for the repository queues the source (202), once per delivery id.
    body = json.dumps({"ref": "refs/heads/main", "repository": {"clone_url": repo.url}}).encode()
    signature = "sha256=" + hmac.new(b"hook-secret", body, hashlib.sha256).hexdigest()
    headers = {
        "X-Hub-Signature-256": signature,
        "X-GitHub-Delivery": "delivery-1",
        "X-GitHub-Event": "push",
        "Content-Type": "application/json",
    }
    bad = client.post(
        "/hooks/github", data=body, headers={**headers, "X-Hub-Signature-256": "sha256=00"}
    )
    assert bad.status_code == 401
    first = client.post("/hooks/github", data=body, headers=headers)
    assert first.status_code == 202 and first.get_json() == {
        "queued": ["fleet"],
        "duplicate": False,
    }
    again = client.post("/hooks/github", data=body, headers=headers)
    assert again.status_code == 202 and again.get_json()["duplicate"] is True
    with database.session() as session:  # the webhook never touched git
        assert session.get(Source, "fleet") is None

    # The controller runs the queued reconcile job.
    box = load_secret_box(settings, create=True)
    controller = Controller(settings, database, box, env=ENV)
    try:
        controller.run_until_done(timeout=20)
    finally:
        controller.stop(grace=5)
    status = client.get("/api/sources/fleet", headers=acme.headers).get_json()
    assert status["lastAppliedRevision"] == sha
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    assert status["inventory"] == {"templates": 1, "watchSets": 1, "watches": 2, "agents": 2}
    assert [r["result"] for r in status["runs"]][-1] == "applied"
    queued = client.post("/api/sources/fleet/reconcile", headers=acme.headers)
    assert queued.status_code == 202 and queued.get_json()["source"] == "fleet"
    assert client.post("/api/sources/fleet/reconcile", headers=other.headers).status_code == 404


def test_an_apply_that_dies_halfway_leaves_the_previous_state(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import controller.gitsources.reconcile as module

    good = repo.commit(FILES)
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    run(reconciler, settings)
    before = snapshot(database)
    repo.commit(
        {
            ".driftgate/watch-sets.yaml": WATCH_SETS.replace("tags: [env:prod]", "tags: [env:p2]")
            + "      - name: third\n        url: http://127.0.0.1:9/t.json\n"
            "        watchType: openapi\n"
        }
    )
    calls: list[str] = []
    real = module.set_tags

    def dies_on_second_watch(watch: Any, tags: list[str]) -> None:
        calls.append(watch.name)
        if len(calls) == 2:
            raise RuntimeError("killed")
        real(watch, tags)

    monkeypatch.setattr(module, "set_tags", dies_on_second_watch)
    with pytest.raises(RuntimeError):
        run(reconciler, settings)
    assert len(calls) == 2  # it died with one watch already written in the transaction
    assert snapshot(database) == before
    assert source_row(database).last_applied_revision == good
    monkeypatch.setattr(module, "set_tags", real)
    assert run(reconciler, settings).result == "applied"
    assert "third" in [w[0] for w in snapshot(database)["watches"]]


# Files whose bytes did not change since the applied revision are not parsed again.


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


def test_a_reference_one_typo_from_an_org_watch_stalls_with_a_suggestion(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    """Reconcile knows the org's watches (created through the API too): a reference one typo
    away from one is a problem at its line; the exact name is a valid reference."""
    with database.transaction() as session:
        session.add(
            Watch(
                org_id=acme.org_id,
                name="payments-ledger",
                watch_type="openapi",
                url="http://127.0.0.1:9/ledger.json",
                interval_minutes=15,
                drift_status="never_run",
                open_breaking=0,
                open_warning=0,
                open_info=0,
                header_names=[],
            )
        )
    typo = AGENTS.replace("      - github-mcp\n", "      - github-mcp\n      - payments-ledgr\n", 1)
    repo.commit({**FILES, ".driftgate/agents.yaml": typo})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "stalled"
    (problem,) = result.problems
    assert problem.file == ".driftgate/agents.yaml" and problem.line == 13
    assert problem.message == (
        "unknown watch 'payments-ledgr': no watch of that name in these files or the org; "
        "did you mean 'payments-ledger'?"
    )
    exact = AGENTS.replace(
        "      - github-mcp\n", "      - github-mcp\n      - payments-ledger\n", 1
    )
    repo.commit({".driftgate/agents.yaml": exact})
    assert run(reconciler, settings).result == "applied"


# Consumer profiles from git: .driftgate/profiles/*.json|yaml

ORDER_PROFILE = """\
id: order
version: 1
schema:
  type: object
  properties:
    email: {type: string}
  required: [email]
"""


def profiles(database: Database) -> list[tuple[str, int, str | None, str | None]]:
    from controller.store.models import IngressProfile

    with database.session() as session:
        return [
            (p.profile_id, p.version, p.managed_source, p.managed_path)
            for p in session.scalars(select(IngressProfile).order_by(IngressProfile.profile_id))
        ]


def test_profiles_are_added_changed_and_removed_from_git(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(
        {
            **FILES,
            ".driftgate/profiles/order.yaml": ORDER_PROFILE,
            ".driftgate/profiles/ticket.json": json.dumps(
                {"id": "ticket", "version": 3, "schema": {"type": "object"}}
            ),
            ".driftgate/profiles/README.md": "not a profile",
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert profiles(database) == [
        ("order", 1, "fleet", ".driftgate/profiles/order.yaml"),
        ("ticket", 3, "fleet", ".driftgate/profiles/ticket.json"),
    ]
    repo.commit(
        {
            ".driftgate/profiles/order.yaml": ORDER_PROFILE.replace("version: 1", "version: 2"),
            ".driftgate/profiles/ticket.json": None,
        }
    )
    changed = run(reconciler, settings)
    assert changed.result == "applied", changed.as_dict()
    assert changed.plan is not None and changed.plan.as_dict()["update"] == {"profiles": ["order"]}
    assert changed.plan.as_dict()["prune"] == {"profiles": ["ticket"]}
    assert profiles(database) == [("order", 2, "fleet", ".driftgate/profiles/order.yaml")]


def test_a_git_profile_is_read_only_through_the_api(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database, client: Any
) -> None:
    repo.commit({**FILES, ".driftgate/profiles/order.yaml": ORDER_PROFILE})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    body = {"id": "order", "version": 5, "schema": {"type": "object"}}
    put = client.put("/api/ingress-profiles/order", json=body, headers=acme.headers)
    assert put.status_code == 409 and put.get_json()["error"] == "managed_by_source"
    assert client.delete("/api/ingress-profiles/order", headers=acme.headers).status_code == 409
    shown = client.get("/api/ingress-profiles/order", headers=acme.headers).get_json()
    assert shown["managedBy"] == "fleet" and shown["version"] == 1
    answer = client.post(
        "/api/validate", json={"payload": {}, "profileId": "order"}, headers=acme.headers
    )
    assert (
        answer.status_code == 422 and answer.get_json()["errors"][0]["code"] == "required_missing"
    )


@pytest.mark.parametrize(
    ("content", "where", "needle"),
    [
        (ORDER_PROFILE.replace("version: 1", "version: 0"), "order.yaml:2", "version"),
        (ORDER_PROFILE.replace("id: order", "id: ticket"), "order.yaml:1", "also used by"),
        ("id: order\nversion: [1\n", "order.yaml:3", "invalid YAML"),
    ],
    ids=["bad-version", "duplicate-id", "invalid-yaml"],
)
def test_a_bad_profile_stalls_the_revision_with_file_and_line(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    content: str,
    where: str,
    needle: str,
) -> None:
    ticket = ORDER_PROFILE.replace("id: order", "id: ticket")
    repo.commit(
        {
            **FILES,
            ".driftgate/profiles/a-ticket.yaml": ticket,
            ".driftgate/profiles/order.yaml": content,
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "stalled", result.as_dict()
    shown = [f"{p.file}:{p.line}: {p.message}" for p in result.problems]
    assert any(where in s and needle in s for s in shown), shown
    assert profiles(database) == []


DASHBOARDS = """\
version: 1
dashboards:
  - name: Billing vendors
    description: what billing depends on
    filters:
      tag: team:billing
      watchType: openapi
    panels: [health, mttr, hotspots]
  - name: MCP at a glance
    filters: {watchType: mcp}
    panels: [health, checks]
"""


def test_dashboards_are_applied_from_git_and_read_only_through_the_api(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database, client: Any
) -> None:
    repo.commit({**FILES, ".driftgate/dashboards.yaml": DASHBOARDS})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    listed = client.get("/api/portfolio/dashboards", headers=acme.headers).get_json()["dashboards"]
    mine = {d["name"]: d for d in listed if not d["system"]}
    assert set(mine) == {"Billing vendors", "MCP at a glance"}
    billing = mine["Billing vendors"]
    assert billing["panels"] == ["health", "mttr", "hotspots"]
    assert (
        billing["filters"]["tag"] == "team:billing" and billing["filters"]["watchType"] == "openapi"
    )
    assert billing["managedBy"]["source"] == "fleet"
    assert billing["managedBy"]["path"] == ".driftgate/dashboards.yaml"
    path = f"/api/portfolio/dashboards/{billing['id']}"
    body = {"name": "Billing vendors", "panels": ["health"]}
    refused = client.put(path, json=body, headers=acme.headers)
    assert refused.status_code == 409 and refused.get_json()["error"] == "managed_by_source"
    assert client.delete(path, headers=acme.headers).status_code == 409

    repo.commit(
        {
            ".driftgate/dashboards.yaml": DASHBOARDS.replace("[health, checks]", "[gaps]").replace(
                "  - name: Billing vendors\n    description: what billing depends on\n"
                "    filters:\n      tag: team:billing\n      watchType: openapi\n"
                "    panels: [health, mttr, hotspots]\n",
                "",
            )
        }
    )
    changed = run(reconciler, settings)
    assert changed.result == "applied", changed.as_dict()
    plan = changed.plan
    assert plan is not None
    assert plan.as_dict()["update"] == {"dashboards": ["MCP at a glance"]}
    assert plan.as_dict()["prune"] == {"dashboards": ["Billing vendors"]}
    after = client.get("/api/portfolio/dashboards", headers=acme.headers).get_json()["dashboards"]
    assert [(d["name"], d["panels"]) for d in after if not d["system"]] == [
        ("MCP at a glance", ["gaps"])
    ]


@pytest.mark.parametrize(
    ("content", "where", "needle"),
    [
        (DASHBOARDS.replace("[health, checks]", "[health, nope]"), 11, "not 'nope'"),
        (DASHBOARDS.replace("MCP at a glance", "Billing vendors"), 9, "duplicate dashboard"),
    ],
    ids=["unknown-panel", "duplicate-name"],
)
def test_a_bad_dashboards_file_stalls_the_revision_with_file_and_line(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    content: str,
    where: int,
    needle: str,
) -> None:
    repo.commit({**FILES, ".driftgate/dashboards.yaml": content})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "stalled"
    problems = result.as_dict()["problems"]
    assert [(p["file"], p["line"]) for p in problems] == [(".driftgate/dashboards.yaml", where)]
    assert needle in problems[0]["message"]


# Files that cannot be read (issue 31, points 4 and 7): a problem at their path, nothing applied.

SUBMODULE = "0123456789abcdef0123456789abcdef01234567"
GOOD = {**FILES, ".driftgate/profiles/order.yaml": ORDER_PROFILE}


@pytest.mark.parametrize(
    ("files", "modes", "where", "needle"),
    [
        (
            {".driftgate/agents.yaml": "../shared/agents.yaml"},
            {".driftgate/agents.yaml": FileMode.LINK},
            ".driftgate/agents.yaml:1:1",
            "cannot read: it is a symbolic link",
        ),
        (
            {".driftgate/watch-sets.yaml": SUBMODULE},
            {".driftgate/watch-sets.yaml": FileMode.COMMIT},
            ".driftgate/watch-sets.yaml:1:1",
            "it is a submodule",
        ),
        (
            {".driftgate/templates.yaml": None, ".driftgate/templates.yaml/a.yaml": TEMPLATES},
            {},
            ".driftgate/templates.yaml:1:1",
            "it is a directory, not a file",
        ),
        (
            {".driftgate/profiles/order.yaml": None, ".driftgate/profiles": "../shared-profiles"},
            {".driftgate/profiles": FileMode.LINK},
            ".driftgate/profiles:1:1",
            "symbolic link",
        ),
        (
            {".driftgate/agents.yaml": AGENTS + "# padding\n" * 61},
            {},
            ".driftgate/agents.yaml:1:1",
            "the file has 1,033 bytes (1 KiB), more than the limit of 1 KiB per file",
        ),
        (
            {".driftgate/profiles/zz.json": json.dumps({"id": "zz", "x": "z" * 400})},
            {},
            ".driftgate/profiles/zz.json:1:1",
            "would take more than 1.2 KiB in all (git_max_revision_bytes)",
        ),
    ],
    ids=["symlink", "submodule", "directory", "linked-profiles", "too-large", "over-total"],
)
def test_a_file_that_cannot_be_read_stalls_and_keeps_what_was_applied(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    files: dict[str, str | None],
    modes: dict[str, FileMode],
    where: str,
    needle: str,
) -> None:
    good = repo.commit(GOOD)
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url},
        git_max_file_bytes=1024,
        git_max_revision_bytes=1250,
    )
    assert run(reconciler, settings).result == "applied"
    before = snapshot(database), profiles(database)
    assert [agent[0] for agent in before[0]["agents"]] == ["billing-agent", "triage-bot"]
    bad = repo.commit(files, message="cannot be read", modes=modes)
    result = run(reconciler, settings)
    assert result.result == "stalled", result.as_dict()
    # Nothing pruned: the agents (and every other object) the source owned are still there.
    assert (snapshot(database), profiles(database)) == before
    row = source_row(database)
    assert row.last_applied_revision == good and row.last_attempted_revision == bad
    rendered = [f"{p['file']}:{p['line']}:{p['column']}: {p['message']}" for p in row.problems]
    assert any(line.startswith(where) and needle in line for line in rendered), rendered
    ready = condition(row, "Ready")
    assert ready["status"] == "False" and ready["reason"] == "ValidationFailed"
    assert where in ready["message"]
    assert condition(row, "Stalled")["status"] == "True"
    again = run(reconciler, settings)
    assert again.result == "stalled" and again.repeat  # not read again until a new revision
    removed = {path: None for path in files if path not in GOOD}
    fixed = repo.commit({**removed, **GOOD}, message="fix")
    assert run(reconciler, settings).result == "applied"
    assert source_row(database).last_applied_revision == fixed


def test_a_large_file_the_loader_does_not_read_is_never_read(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from controller.sources import git as git_source

    repo.commit({**FILES, ".driftgate/backup.bin": b"\0" * 4096, ".driftgate/NOTES": "../x"})
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, git_max_file_bytes=1024
    )
    sizes: list[int] = []
    real_data = git_source._blob_data

    def recording_data(git: pygit2.Repository, item: pygit2.Object) -> bytes:
        data = real_data(git, item)
        sizes.append(len(data))
        return data

    monkeypatch.setattr(git_source, "_blob_data", recording_data)
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert sorted(sizes) == sorted(len(text.encode()) for text in FILES.values())


def test_a_revision_refused_as_too_large_is_validated_again_under_a_raised_limit(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(FILES)
    source = {"name": "fleet", "org": "acme", "url": repo.url}
    small, settings = make_reconciler(source, git_max_file_bytes=1024)
    assert run(small, settings).result == "applied"
    big = repo.commit({".driftgate/agents.yaml": AGENTS + "# padding\n" * 61})
    assert run(small, settings).result == "stalled"
    assert run(small, settings).repeat
    raised, settings = make_reconciler(source, git_max_file_bytes=2048)
    result = run(raised, settings)
    assert result.result == "applied", result.as_dict()
    assert source_row(database).last_applied_revision == big
