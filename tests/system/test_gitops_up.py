"""GitOps end to end, with real processes: `driftgate --config FILE up` reconciles the shipped
examples from a git repository by itself, keeps serving the applied state while a bad commit
stalls the source (with the file, line and column of the problem), and recovers on a fixed
commit.

It runs against the suite's database: a SQLite file by default, the Postgres test database when
`DRIFTGATE_TEST_DATABASE_URL` is set (the subprocesses get its URL in their config file).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from controller.store.db import Database
from tests.gitrepos import RepoBuilder, isolated_git_config
from tests.processes import DRIFTGATE, PATIENCE, free_port
from tests.system.conftest import ROOT, child_env, conditions, driftgate

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

EXAMPLES = ROOT / "examples"
EXAMPLE_FILES = ("agents.yaml", "templates.yaml", "watch-sets.yaml")


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
    timeout: float = PATIENCE,
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
                timeout=30,
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

            wait_for("the server", lambda: http.get("/health").status_code == 200, up, log_path)
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
            assert up.wait(timeout=PATIENCE) == 0, log_path.read_text(errors="replace")[-4000:]
            deadline = time.monotonic() + PATIENCE
            while True:
                try:
                    os.killpg(up.pid, 0)
                except ProcessLookupError:
                    break
                assert time.monotonic() < deadline, "the controller outlived `driftgate up`"
                time.sleep(0.1)
