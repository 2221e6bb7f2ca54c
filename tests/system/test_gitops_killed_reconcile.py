"""GitOps with real processes: a `driftgate reconcile` killed with SIGKILL inside its apply
transaction leaves the store exactly as it was; the next reconcile applies the revision cleanly.

It runs against the suite's database: a SQLite file by default, the Postgres test database when
`DRIFTGATE_TEST_DATABASE_URL` is set (the subprocesses get its URL in their config file).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select

from controller.crypto import load_secret_box
from controller.gitsources.reconcile import Reconciler
from controller.settings import load_settings
from controller.store.db import Database
from controller.store.models import Agent, Base, Source, Watch
from tests.conftest import SECRET, OrgKey
from tests.gitrepos import RepoBuilder, isolated_git_config
from tests.system.conftest import ROOT, child_env, conditions, driftgate

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow


# Runs `driftgate ARGS...` in this process with `Reconciler.apply` wrapped; at the kill point
# it writes what its own (uncommitted) transaction sees to MARKER, then SIGKILLs itself: a
# real kill at a deterministic point, without hooks in the product code.
#   agents-write: right after the first INSERT, UPDATE or DELETE of the `agents` table inside
#                 apply reached the database (templates, watch sets, watches are written; ORM
#                 flush or Core statement alike);
#   after-apply:  apply has returned and everything is flushed, just before the status update
#                 and the commit.
KILLER = r"""
import json, os, re, signal, sys
from sqlalchemy import Engine, event, func, select
from sqlalchemy.orm import Session

import controller.gitsources.reconcile as reconcile
from cli.main import main
from controller.store.models import Agent, Template, Watch, WatchSet

mode, marker, source, revision, *args = sys.argv[1:]
real_apply = getattr(reconcile.Reconciler, "apply", None)
if not callable(real_apply):
    sys.exit("Reconciler.apply is gone: update tests/system/test_gitops_killed_reconcile.py")
AGENTS_WRITE = re.compile(r'\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?agents\b', re.I)
state = {"inside": False, "dying": False}


def die(connection):
    state["dying"] = True
    seen = {}
    for kind, model in (
        ("templates", Template), ("watchSets", WatchSet), ("watches", Watch), ("agents", Agent)
    ):
        owned = model.managed_source == source
        count = select(func.count()).select_from(model).where(owned)
        seen[kind] = {
            "owned": connection.execute(count).scalar_one(),
            "atRevision": connection.execute(
                count.where(model.managed_revision == revision)
            ).scalar_one(),
        }
    with open(marker, "w") as out:
        json.dump({"mode": mode, "seen": seen}, out)
    os.kill(os.getpid(), signal.SIGKILL)


def apply(self, *a, **kw):
    state["inside"] = True
    real_apply(self, *a, **kw)
    if mode == "after-apply":
        session = next(x for x in (*a, *kw.values()) if isinstance(x, Session))
        session.flush()
        die(session.connection())


@event.listens_for(Engine, "after_cursor_execute")
def written(connection, _cursor, statement, *_rest):
    if state["inside"] and not state["dying"] and mode == "agents-write":
        if AGENTS_WRITE.match(statement):
            die(connection)


reconcile.Reconciler.apply = apply
main(args=args, prog_name="driftgate")
"""


def bulk_files(
    watches: range, agents: range, templates: range, mark: str, policy: str
) -> dict[str, str]:
    """A generated fleet: templates, watch sets of 30 watches (every tenth from a template),
    agents bound to three watches each. `mark` goes into every tag, so it changes them all."""
    template_lines = ["version: 1", "templates:"]
    for t in templates:
        template_lines += [
            f"  - name: tpl-{t}",
            "    watchType: openapi",
            f"    urlPattern: http://127.0.0.1:9/tpl-{t}.json",
            f"    tags: [tpl:{t}, {mark}]",
        ]
    sets: dict[int, list[str]] = {}
    for n in watches:
        if n % 10 == 0:
            entry = [
                f"      - name: w-{n}",
                f"        template: tpl-{templates[n % len(templates)]}",
                f"        tags: [n:{n}]",
            ]
        else:
            entry = [
                f"      - name: w-{n}",
                f"        url: http://127.0.0.1:9/{mark}/w-{n}.json",
                "        watchType: openapi",
                f"        tags: [set:{n // 30}, {mark}]",
            ]
        sets.setdefault(n // 30, []).extend(entry)
    set_lines = ["version: 1", "watchSets:"]
    for s, entries in sets.items():
        set_lines += [
            f"  - name: set-{s}",
            "    environment: production",
            f"    description: watch set {s}",
            "    watches:",
            *entries,
        ]
    agent_lines = ["version: 1", "agents:"]
    for a in agents:
        agent_lines += [
            f"  - id: agent-{a}",
            "    environment: production",
            f"    policy: {policy}",
            "    watches:",
            *(f"      - w-{watches[(a * 3 + k) % len(watches)]}" for k in range(3)),
        ]
    return {
        ".driftgate/templates.yaml": "\n".join(template_lines) + "\n",
        ".driftgate/watch-sets.yaml": "\n".join(set_lines) + "\n",
        ".driftgate/agents.yaml": "\n".join(agent_lines) + "\n",
    }


def dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, read through a new engine: nothing of this process's
    sessions or caches in between."""
    fresh = Database(url)
    try:
        with fresh.session() as session:
            return {
                table.name: sorted((tuple(row) for row in session.execute(select(table))), key=repr)
                for table in Base.metadata.sorted_tables
            }
    finally:
        fresh.dispose()


def source_row(url: str, name: str) -> Source:
    fresh = Database(url)
    try:
        with fresh.session() as session:
            row = session.get(Source, name)
            assert row is not None
            return row
    finally:
        fresh.dispose()


@pytest.mark.parametrize("kill_at", ["agents-write", "after-apply"])
def test_a_reconcile_killed_inside_its_apply_leaves_the_previous_state(
    tmp_path: Path, database: Database, make_org: Callable[..., OrgKey], kill_at: str
) -> None:
    make_org("bulk", "pro")
    with isolated_git_config(tmp_path / "gitconfig"):
        repo = RepoBuilder(tmp_path / "bulk.git")
        applied = repo.commit(
            bulk_files(range(0, 300), range(0, 200), range(0, 5), "rev:a", "staging-strict"),
            message="A",
        )
        config_path = tmp_path / "driftgate.yaml"
        config_path.write_text(
            yaml.safe_dump(
                {
                    "data_dir": str(tmp_path / "data"),
                    "database_url": database.url,
                    "sources": [{"name": "bulk", "org": "bulk", "url": str(repo.path)}],
                }
            )
        )
        settings = load_settings(env={"DRIFTGATE_SECRET_KEY": SECRET}, config_file=config_path)
        spec = settings.source("bulk")
        assert spec is not None
        reconciler = Reconciler(
            settings, database, load_secret_box(settings, create=True), env=child_env()
        )
        assert reconciler.reconcile(spec).result == "applied"

        # B moves the fleet by a third: a hundred watches and fifty agents pruned and created,
        # every other one updated, templates and watch sets too.
        target = repo.commit(
            bulk_files(range(100, 400), range(50, 250), range(1, 6), "rev:b", "production-guard"),
            message="B",
        )
        planned = reconciler.reconcile(spec, dry_run=True)
        assert planned.result == "dry_run" and planned.plan is not None
        counts = planned.plan.counts()
        assert counts["created"] >= 150 and counts["updated"] >= 350 and counts["pruned"] >= 150
        before = dump(database.url)
        assert before["sources"] and before["watches"] and before["agents"]

        marker = tmp_path / "killed.json"
        killed = subprocess.run(
            [
                sys.executable,
                "-c",
                KILLER,
                kill_at,
                str(marker),
                "bulk",
                target,
                "--config",
                str(config_path),
                "reconcile",
                "--source",
                "bulk",
            ],
            env=child_env(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
        seen = json.loads(marker.read_text())["seen"]
        # The dead transaction had really written: at least one object at the new revision
        # (halfway), or all of B (after apply).
        if kill_at == "agents-write":
            # Written so far, uncommitted: at least the agents statement itself.
            assert seen != {
                "templates": {"owned": 5, "atRevision": 0},
                "watchSets": {"owned": 10, "atRevision": 0},
                "watches": {"owned": 300, "atRevision": 0},
                "agents": {"owned": 200, "atRevision": 0},
            }, seen
        else:
            assert seen == {
                "templates": {"owned": 5, "atRevision": 5},
                "watchSets": {"owned": 11, "atRevision": 11},
                "watches": {"owned": 300, "atRevision": 300},
                "agents": {"owned": 200, "atRevision": 200},
            }

        # Read afresh: every table, the source row included, is exactly as before.
        after = dump(database.url)
        assert after.keys() == before.keys()
        changed = [name for name in before if after[name] != before[name]]
        assert changed == [], changed
        source = source_row(database.url, "bulk")
        assert source.last_applied_revision == source.last_attempted_revision == applied

        # A normal reconcile now applies B cleanly, with the plan the dry run showed.
        out = driftgate(config_path, "reconcile", "--source", "bulk")
        assert out.splitlines()[0].startswith(f"bulk: applied at {target[:12]} "), out
        assert re.search(
            rf"^  {counts['created']} created, {counts['updated']} updated, "
            rf"{counts['pruned']} pruned$",
            out,
            re.MULTILINE,
        ), out
    source = source_row(database.url, "bulk")
    assert source.last_applied_revision == source.last_attempted_revision == target
    assert conditions(source.conditions) == {
        "Ready": "True",
        "Reconciling": "False",
        "Stalled": "False",
    }
    assert [r["result"] for r in source.runs[:2]] == ["applied", "applied"]
    with database.session() as session:
        names = session.scalars(select(Watch.name).where(Watch.managed_source == "bulk")).all()
        policies = set(session.scalars(select(Agent.policy)).all())
    assert sorted(names) == sorted(f"w-{n}" for n in range(100, 400))
    assert policies == {"production-guard"}
