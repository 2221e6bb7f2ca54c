"""Benchmark of the reconcile loop: a generated repository with 1,000 agents and 5,000 watches.

For SQLite and then Postgres: a cold reconcile (everything created), a no-op reconcile of the
unchanged revision, a commit that changes one agent and one that changes one watch. Each
figure is the wall time of `Reconciler.reconcile` (fetch from a local repository, read,
validate, plan, apply, status).

The watch sets go to one `watch-sets.yaml`, or with `--split N` to N files
`watch-sets/part-<i>.yaml` (issue 33: one file stops near 8,000 watches at the 1 MiB per-file
limit; `--max-file-bytes` raises that limit to time one large file).

Run: `python bench/reconcile_bench.py [--agents N] [--watches N] [--split N]
[--max-file-bytes N] [--postgres URL] [--stores sqlite,postgres]` (`--smoke`: 5 agents, 50
watches, SQLite). Figures go to docs/performance.md; nothing here fails on a time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench import smoke  # noqa: E402
from controller.crypto import load_secret_box  # noqa: E402
from controller.gitsources.reconcile import Reconciler  # noqa: E402
from controller.orgs import service as org_service  # noqa: E402
from controller.settings import load_settings  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from tests.gitrepos import RepoBuilder, isolated_git_config  # noqa: E402

SECRET = "benchmark-secret-key-0123456789"
SETS = 50


def files(
    agents: int,
    watches: int,
    policy_of_first: str = "production-guard",
    *,
    split: int = 0,
    first_url: str = "https://api0.example.com/openapi.json",
) -> dict[str, str]:
    """The `.driftgate/` files: SETS watch sets of `watches // SETS` watches (in one file, or
    in `split` files), and `agents` agents that depend on 5 watches each."""
    per_set = max(1, watches // SETS)
    parts = max(1, split)
    sets: list[list[str]] = [["version: 1", "watchSets:"] for _ in range(parts)]
    for s in range(SETS):
        lines = sets[s * parts // SETS]
        lines += [f"  - name: set-{s}", "    environment: production", "    watches:"]
        for w in range(per_set):
            n = s * per_set + w
            url = first_url if n == 0 else f"https://api{n}.example.com/openapi.json"
            lines += [
                f"      - name: api-{n}",
                f"        url: {url}",
                "        watchType: openapi",
                f"        tags: [team:{s}]",
            ]
    lines = ["version: 1", "agents:"]
    total = per_set * SETS
    for a in range(agents):
        policy = policy_of_first if a == 0 else "staging-strict"
        refs = "".join(f"\n      - api-{(a * 5 + k) % total}" for k in range(5))
        lines += [
            f"  - id: agent-{a}",
            "    environment: production",
            f"    policy: {policy}",
            f"    watches:{refs}",
        ]
    written = {".driftgate/agents.yaml": "\n".join(lines) + "\n"}
    if split:
        for i, part in enumerate(sets):
            written[f".driftgate/watch-sets/part-{i:03d}.yaml"] = "\n".join(part) + "\n"
    else:
        written[".driftgate/watch-sets.yaml"] = "\n".join(sets[0]) + "\n"
    return written


Row = tuple[str, float, str]


def bench(label: str, url: str, work: Path, args: argparse.Namespace) -> list[Row]:
    agents, watches, split = args.agents, args.watches, args.split
    database = Database(url)
    migrate.upgrade(database)
    with database.transaction() as session:
        org_service.create_org(session, "bench", "pro", actor="bench")
    repo_path = work / f"{label}.git"
    repo = RepoBuilder(repo_path)
    repo.commit(files(agents, watches, split=split))
    env = {"DRIFTGATE_DATA_DIR": str(work / label), "DRIFTGATE_SECRET_KEY": SECRET}
    if args.max_file_bytes:
        env["DRIFTGATE_GIT_MAX_FILE_BYTES"] = str(args.max_file_bytes)
    settings = load_settings(
        env=env,
        database_url=url,
        sources=[{"name": "bench", "org": "bench", "url": str(repo_path)}],
    )
    reconciler = Reconciler(settings, database, load_secret_box(settings, create=True), env={})
    spec = settings.sources[0]
    rows: list[Row] = []
    sizes = sorted(len(text.encode()) for text in files(agents, watches, split=split).values())
    print(f"  {label}: {len(sizes)} files, largest {sizes[-1]:,} bytes", flush=True)
    for name, change in (
        ("cold", None),
        ("no-op", None),
        ("one agent changed", {"policy_of_first": "notify-only"}),
        (
            "one watch changed",
            {"policy_of_first": "notify-only", "first_url": "https://api0.example.com/v2.json"},
        ),
    ):
        if change is not None:
            repo.commit(files(agents, watches, split=split, **change))
        started, cpu = time.perf_counter(), time.process_time()
        result = reconciler.reconcile(spec)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        counts = result.plan.counts() if result.plan else {}
        # This process's CPU time: on a shared machine it moves less than the wall time (on
        # Postgres the server's own work is not in it).
        outcome = f"{result.result} {counts} (CPU {cpu:.1f} s)"
        if result.problems:
            outcome += f" {result.problems[0]}"
        rows.append((name, elapsed, outcome))
        print(f"  {label} | {name} | {elapsed * 1000:.0f} ms | {outcome}", flush=True)
        if result.result not in ("applied", "unchanged"):
            # The generated repository no longer reconciles: the figures would time a failure.
            raise SystemExit(f"{label} {name}: the reconcile {outcome}")
    database.dispose()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--watches", type=int, default=5000)
    parser.add_argument("--split", type=int, default=0, help="watch-sets/ files (0: one file)")
    parser.add_argument("--max-file-bytes", type=int, default=0, help="git_max_file_bytes")
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--stores", default="sqlite,postgres")
    args = smoke.parse(parser, {"agents": 5, "watches": 50, "stores": "sqlite"})
    work = Path(tempfile.mkdtemp(prefix="driftgate-reconcile-bench-"))
    results: list[tuple[str, str, float, str]] = []
    with isolated_git_config(work / "gitconfig"):
        if "sqlite" in args.stores:
            for row in bench("sqlite", f"sqlite:///{work / 'bench.db'}", work, args):
                results.append(("sqlite", *row))
        if "postgres" in args.stores:
            admin = create_engine(args.postgres, isolation_level="AUTOCOMMIT")
            name = f"driftgate_rbench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
            try:
                url = (
                    make_url(args.postgres).set(database=name).render_as_string(hide_password=False)
                )
                for row in bench("postgres", url, work, args):
                    results.append(("postgres", *row))
            finally:
                with admin.connect() as conn:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    where = f"{args.split} files" if args.split else "one file"
    print(f"{args.agents} agents, {args.watches} watches in {SETS} watch sets ({where})")
    print("store | run | wall time | result (this process's CPU time)")
    for store, run, seconds, outcome in results:
        print(f"{store} | {run} | {seconds * 1000:.0f} ms | {outcome}")


if __name__ == "__main__":
    main()
