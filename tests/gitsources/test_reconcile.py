"""Reconcile from real git repositories (made with pygit2 in tmp_path) into the real store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from controller.crypto import load_secret_box
from controller.store.db import Database
from controller.store.models import Agent, Source, Watch
from tests.conftest import OrgKey
from tests.factories import AGENTS, ENV, FILES, WATCH_SETS, Make, run
from tests.gitrepos import RepoBuilder, git_daemon, isolated_git_config
from tests.gitsources.conftest import condition, snapshot, source_row


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
