"""GitOps end to end, with real processes.

1. `driftgate --config FILE up` reconciles the shipped examples from a git repository by
   itself, keeps serving the applied state while a bad commit stalls the source (with the
   file, line and column of the problem), and recovers on a fixed commit.
2. A `driftgate reconcile` killed with SIGKILL inside its apply transaction leaves the store
   exactly as it was; the next reconcile applies the revision cleanly.

Both run against the suite's database: a SQLite file by default, the Postgres test database
when `DRIFTGATE_TEST_DATABASE_URL` is set (the subprocesses get its URL in their config file).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
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
from tests.processes import DRIFTGATE, free_port

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE_FILES = ("agents.yaml", "templates.yaml", "watch-sets.yaml")


def child_env() -> dict[str, str]:
    """The environment of a driftgate subprocess: no DRIFTGATE_* of the machine running the
    tests (everything else comes from the config file), the suite's secret key, and outbound
    checks refused for private and loopback addresses (the default, made explicit)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTGATE_")}
    env["DRIFTGATE_SECRET_KEY"] = SECRET
    env["DRIFTGATE_ALLOW_PRIVATE_TARGETS"] = "false"
    return env


def driftgate(config: Path, *args: str) -> str:
    """Run a driftgate command like an operator; return its stdout."""
    done = subprocess.run(
        [*DRIFTGATE, "--config", str(config), *args],
        env=child_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
    return done.stdout.strip()


def stop(process: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """SIGTERM, then SIGKILL to the whole process group (`up` and its controller child)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@contextmanager
def started(command: list[str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A subprocess in its own session (so everything it starts can be ended with it)."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            env=child_env(),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            stop(process)


def wait_for(
    what: str,
    probe: Callable[[], Any],
    process: subprocess.Popen[bytes],
    log_path: Path,
    timeout: float = 20.0,
) -> Any:
    """Call `probe` until it returns something true; fail with the server log otherwise."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe()
        except httpx.TransportError as exc:
            last = exc
        if last and not isinstance(last, Exception):
            return last
        if process.poll() is not None or time.monotonic() > deadline:
            state = (
                f"exited with {process.returncode}" if process.poll() is not None else "timed out"
            )
            raise AssertionError(
                f"waiting for {what}: {state}; last seen: {last!r}\n"
                + log_path.read_text(errors="replace")[-6000:]
            )
        time.sleep(0.2)


# -- 1. `driftgate up` reconciles the examples by itself -------------------------------------


def example_urls(files: Mapping[str, str], base: str) -> list[str]:
    """The URL of every watch the examples declare (through a template or not)."""
    templates = {t["name"]: t for t in yaml.safe_load(files[f"{base}/templates.yaml"])["templates"]}
    urls = []
    for watch_set in yaml.safe_load(files[f"{base}/watch-sets.yaml"])["watchSets"]:
        for watch in watch_set["watches"]:
            urls.append(watch.get("url") or templates[watch["template"]]["urlPattern"])
    for agent in yaml.safe_load(files[f"{base}/agents.yaml"])["agents"]:
        urls += [ref["url"] for ref in agent["watches"] if isinstance(ref, dict)]
    return urls


def conditions(source: Mapping[str, Any] | list[dict[str, Any]]) -> dict[str, str]:
    """Condition type -> status, of an API source or of a stored `conditions` list."""
    listed = source if isinstance(source, list) else source["conditions"]
    return {c["type"]: c["status"] for c in listed}


def watch_config(watches: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """What a watch was applied with (not what its checks wrote since), by name."""
    return {
        w["name"]: (
            w["id"],
            w["url"],
            w["watchType"],
            w["intervalMinutes"],
            w["tags"],
            w["headers"],
            w["managedBy"],
        )
        for w in watches
    }


def test_up_reconciles_the_examples_stalls_on_a_bad_commit_and_recovers(
    tmp_path: Path, database: Database
) -> None:
    base = "examples"
    files = {f"{base}/{name}": (EXAMPLES / name).read_text() for name in EXAMPLE_FILES}
    # `up` checks every watch it applies. Loopback targets are refused before any connection
    # (private targets are off), but a public URL would really be fetched: keep them local.
    urls = example_urls(files, base)
    assert urls and all(urlsplit(u).hostname == "127.0.0.1" for u in urls), urls
    declared_agents = yaml.safe_load(files[f"{base}/agents.yaml"])["agents"]
    declared_sets = yaml.safe_load(files[f"{base}/watch-sets.yaml"])["watchSets"]
    declared_watches = {w["name"]: w for s in declared_sets for w in s["watches"]}
    agents_text = files[f"{base}/agents.yaml"]
    assert agents_text.count("policy: staging-strict") == 1  # triage-bot's

    with isolated_git_config(tmp_path / "gitconfig"):
        repo = RepoBuilder(tmp_path / "fleet.git")
        first = repo.commit(files, message="the examples")

        # The shipped example config, pointed at this repository, database and port.
        port = free_port()
        config = yaml.safe_load((EXAMPLES / "driftgate.yaml").read_text())
        config.update(
            data_dir=str(tmp_path / "data"),
            database_url=database.url,
            port=port,
            workers=1,
            threads=4,
        )
        (source_config,) = config["sources"]
        assert source_config["name"] == "demo" and source_config["org"] == "demo"
        # 10s is the shortest interval a source accepts (and the controller of `up` ticks every
        # 5s): the first revision is applied by the controller on its own when it starts; the
        # later commits are requested through the API so the test need not wait for a slot.
        source_config.update(url=str(repo.path), path=base, interval="10s")
        config_path = tmp_path / "driftgate.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))

        driftgate(config_path, "orgs", "create", "demo")
        key = driftgate(config_path, "keys", "create", "--org", "demo")
        log_path = tmp_path / "up.log"
        with (
            started([*DRIFTGATE, "--config", str(config_path), "up"], log_path) as up,
            httpx.Client(
                base_url=f"http://127.0.0.1:{port}",
                headers={"Authorization": f"Bearer {key}", "User-Agent": "driftgate-tests"},
                timeout=5,
            ) as http,
        ):

            def demo() -> dict[str, Any]:
                listed = http.get("/api/sources")
                assert listed.status_code == 200, listed.text
                (source,) = [s for s in listed.json()["sources"] if s["name"] == "demo"]
                return dict(source)

            def reached(check: Callable[[dict[str, Any]], bool]) -> Callable[[], Any]:
                def probe() -> dict[str, Any] | None:
                    source = demo()
                    return source if check(source) else None

                return probe

            wait_for("the server", lambda: http.get("/health").status_code == 200, up, log_path, 30)
            # Nothing requested: the controller of `up` reconciles the source when it starts.
            source = wait_for(
                f"revision {first} applied",
                reached(
                    lambda s: (
                        s["lastAppliedRevision"] == first
                        # the outcome commits just after the applied objects (docs/gitops.md)
                        and conditions(s).get("Ready") == "True"
                    )
                ),
                up,
                log_path,
            )
            assert source["lastFetchedRevision"] == source["lastAttemptedRevision"] == first
            assert conditions(source)["Stalled"] == "False" and source["problems"] == []
            assert source["runs"][0]["result"] == "applied"
            assert source["inventory"] == {
                "templates": len(yaml.safe_load(files[f"{base}/templates.yaml"])["templates"]),
                "watchSets": len(declared_sets),
                "watches": len(declared_watches),
                "agents": len(declared_agents),
            }

            agents = http.get("/api/agents").json()["agents"]
            assert [a["id"] for a in agents] == sorted(a["id"] for a in declared_agents)
            for agent in agents:
                assert agent["managedBy"] == {
                    "source": "demo",
                    "path": f"{base}/agents.yaml",
                    "revision": first,
                }
                assert agent["watches"] and all(w["resolved"] for w in agent["watches"]), agent
            policies = {a["id"]: a["policy"] for a in agents}
            assert policies["triage-bot"] == "staging-strict"
            watches = http.get("/api/watches").json()["watches"]
            assert sorted(w["name"] for w in watches) == sorted(declared_watches)
            for watch in watches:
                assert watch["managedBy"]["source"] == "demo"
                assert watch["managedBy"]["path"] == f"{base}/watch-sets.yaml"
            by_name = {w["name"]: w for w in watches}
            assert (
                by_name["stripe-api-staging"]["url"]
                == declared_watches["stripe-api-staging"]["url"]
            )
            applied_watches = watch_config(watches)

            # A bad commit: an unknown policy. The reconcile it gets stalls the source on it.
            bad_text = agents_text.replace("policy: staging-strict", "policy: reckless")
            bad = repo.commit({f"{base}/agents.yaml": bad_text}, message="unknown policy")
            (line,) = [
                number
                for number, text in enumerate(bad_text.splitlines(), 1)
                if text.strip() == "policy: reckless"
            ]
            column = bad_text.splitlines()[line - 1].index("reckless") + 1
            queued = http.post("/api/sources/demo/reconcile")
            assert queued.status_code == 202 and queued.json()["source"] == "demo"
            source = wait_for(
                f"revision {bad} stalled",
                reached(
                    lambda s: (
                        s["lastAttemptedRevision"] == bad and conditions(s).get("Stalled") == "True"
                    )
                ),
                up,
                log_path,
            )
            assert source["lastAppliedRevision"] == first
            assert source["lastFetchedRevision"] == bad
            assert conditions(source)["Ready"] == "False"
            ready = next(c for c in source["conditions"] if c["type"] == "Ready")
            assert ready["reason"] == "ValidationFailed" and bad in ready["message"]
            (problem,) = source["problems"]
            triage_index = [a["id"] for a in declared_agents].index("triage-bot")
            assert problem["file"] == f"{base}/agents.yaml"
            assert (problem["line"], problem["column"]) == (line, column)
            assert problem["path"] == f"agents[{triage_index}].policy"
            assert "reckless" in problem["message"]
            assert source["runs"][0]["result"] == "stalled"
            # The applied revision keeps serving, untouched.
            assert http.get("/api/agents").json()["agents"] == agents
            assert watch_config(http.get("/api/watches").json()["watches"]) == applied_watches

            # A fixed commit (with a real change) recovers.
            fixed_text = agents_text.replace("policy: staging-strict", "policy: review-first")
            fixed = repo.commit({f"{base}/agents.yaml": fixed_text}, message="fix")
            assert http.post("/api/sources/demo/reconcile").status_code == 202
            source = wait_for(
                f"revision {fixed} applied",
                reached(
                    lambda s: (
                        s["lastAppliedRevision"] == fixed and conditions(s).get("Ready") == "True"
                    )
                ),
                up,
                log_path,
            )
            assert conditions(source)["Stalled"] == "False" and source["problems"] == []
            assert source["lastAttemptedRevision"] == source["lastFetchedRevision"] == fixed
            # Newest first; polls in between may add `unchanged` and repeated `stalled` runs.
            results = [r["result"] for r in source["runs"] if r["result"] != "unchanged"]
            results = [r for i, r in enumerate(results) if i == 0 or results[i - 1] != r]
            assert results[:3] == ["applied", "stalled", "applied"], source["runs"]
            recovered = {a["id"]: a for a in http.get("/api/agents").json()["agents"]}
            assert recovered["triage-bot"]["policy"] == "review-first"
            assert recovered["triage-bot"]["policyRules"] is not None
            assert {k: a["policy"] for k, a in recovered.items() if k != "triage-bot"} == {
                k: p for k, p in policies.items() if k != "triage-bot"
            }
            assert all(a["managedBy"]["revision"] == fixed for a in recovered.values())
            final_watches = http.get("/api/watches").json()["watches"]
            # Whatever the controller checked so far was refused before connecting.
            assert all(
                w["lastCheckStatus"] is None or w["failureClass"] == "blocked_target"
                for w in final_watches
            ), final_watches
            after = watch_config(final_watches)
            # Same watches (same ids: history kept), now confirmed at the fixed revision.
            assert {n: w[:-1] for n, w in after.items()} == {
                n: w[:-1] for n, w in applied_watches.items()
            }
            assert all(w[-1]["revision"] == fixed for w in after.values())

            # SIGTERM stops `up`, which stops its controller: nothing of the group is left.
            http.close()  # an idle keep-alive connection would hold gunicorn's graceful stop
            up.send_signal(signal.SIGTERM)
            assert up.wait(timeout=30) == 0, log_path.read_text(errors="replace")[-4000:]
            deadline = time.monotonic() + 10
            while True:
                try:
                    os.killpg(up.pid, 0)
                except ProcessLookupError:
                    break
                assert time.monotonic() < deadline, "the controller outlived `driftgate up`"
                time.sleep(0.1)


# -- 2. a reconcile killed by SIGKILL inside its apply transaction ---------------------------

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
    sys.exit("Reconciler.apply is gone: update tests/system/test_gitops_e2e.py")
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
