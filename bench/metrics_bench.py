"""What Prometheus metrics cost (issue 43, point 1): recording one check's metrics, and one scrape
of `/metrics` with a few hundred watches.

- Recording: `controller.metrics.check_done` (a counter and a histogram, the labels looked
  up) `--records` times, in this process's memory, then in prometheus_client's multiprocess
  mode (each value written to the process's mmap'ed file, as under `driftgate up`), in a
  child process: microseconds per check.
- A scrape: a store of `--watches` watches (spread over the statuses, a tenth with an open
  incident) and a queue of jobs, read by the store's gauges (`StoreCollector`), then the
  whole exposition served by `metrics_app` (the WSGI app behind `GET /metrics`), in memory and
  with `--processes` processes' files in a run directory (each with every series a busy
  process writes): the median of `--scrapes`.

Run: `python bench/metrics_bench.py [--watches N] [--postgres URL]` (SQLite in a temporary
directory by default; on Postgres, a database made beside URL's and dropped after). Figures
in docs/metrics.md; nothing here fails on a number.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, insert, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench import smoke  # noqa: E402

STATUSES = ("ok", "ok", "ok", "ok", "drifted", "error", "never_run", "disabled")

RECORD = """
import os, sys, time
sys.path.insert(0, {root!r})
from controller import metrics
n = {n}
metrics.check_done("openapi", "unchanged", 0.01)  # the series exists, as in a running process
started = time.perf_counter()
for i in range(n):
    metrics.check_done("openapi", "unchanged", 0.01)
print((time.perf_counter() - started) / n * 1e6)
"""

BUSY = """
import sys
sys.path.insert(0, {root!r})
from controller import metrics
for kind in ("openapi", "mcp", "jsonschema", "a2a"):
    for result in ("unchanged", "baseline", "changed", "error", "skipped"):
        metrics.check_done(kind, result, 0.2)
for decision in ("allowed", "blocked", "policy_blocked"):
    metrics.preflight_done(decision, 0.003)
for channel in ("webhook", "slack", "email"):
    metrics.delivery_done(channel, True, 0.1)
    metrics.delivery_done(channel, False, 0.1)
metrics.reconcile_done("fleet", "applied", 1.0)
metrics.reconcile_done("fleet", "stalled", 1.0)
metrics.jobs_claimed(["check", "reconcile"])
metrics.jobs_reaped(["check"])
for reason in ("unreachable", "timeout", "busy", "refused"):
    metrics.database_error(reason)
metrics.database_outage()
"""


def recording_cost(records: int, directory: Path | None) -> float:
    """Microseconds per `check_done`, in a child process (in memory, or writing to
    `directory` in multiprocess mode)."""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    if directory is not None:
        env["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    done = subprocess.run(
        [sys.executable, "-c", RECORD.format(root=str(ROOT), n=records)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip())


def seed(database: Any, count: int) -> None:
    from controller.store.models import Incident, Job, Org, Watch

    now = datetime.now(UTC)
    with database.transaction() as session:
        org_id = str(uuid.uuid4())
        session.execute(
            insert(Org).values(
                id=org_id, name="bench", plan="pro", products=[], is_trial=False, created_at=now
            )
        )
        rows = [
            {
                "id": str(uuid.uuid4()),
                "org_id": org_id,
                "name": f"spec-{i}",
                "watch_type": "openapi",
                "url": f"https://vendor-{i}.example/openapi.json",
                "drift_status": STATUSES[i % len(STATUSES)],
                "interval_minutes": 15,
                "header_names": [],
                "open_breaking": 0,
                "open_warning": 0,
                "open_info": 0,
                "created_at": now,
                "updated_at": now,
            }
            for i in range(count)
        ]
        for first in range(0, len(rows), 1000):
            session.execute(insert(Watch), rows[first : first + 1000])
        session.execute(
            insert(Incident),
            [
                {"id": str(uuid.uuid4()), "org_id": org_id, "watch_id": row["id"], "status": "open"}
                for row in rows[::10]
            ],
        )
        session.execute(
            insert(Job),
            [
                {
                    "kind": "check",
                    "key": f"check:{row['id']}",
                    "period": "15m:1",
                    "status": "queued" if i % 2 else "done",
                    "run_after": now - timedelta(seconds=i % 7),
                    "attempts": 0,
                    "fence": 0,
                    "payload": {},
                    "priority": 2,
                    "created_at": now,
                }
                for i, row in enumerate(rows)
            ],
        )


def scrape_time(app: Any, scrapes: int) -> tuple[float, int]:
    """The median milliseconds of one `GET /metrics` through the WSGI app, and its size."""
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics", "QUERY_STRING": ""}
    times, size = [], 0
    for _ in range(scrapes):
        started = time.perf_counter()
        body = b"".join(app(dict(environ), lambda status, headers, *rest: None))
        times.append((time.perf_counter() - started) * 1000)
        size = len(body)
    return statistics.median(times), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watches", type=int, default=300)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=3, help="processes' files in the run")
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--postgres", help="a Postgres server (a database of its own is made)")
    args = smoke.parse(parser, {"watches": 20, "records": 2000, "scrapes": 3, "processes": 2})

    work = smoke.scratch("driftgate-metrics-bench-")
    (work / "record").mkdir()
    in_memory = recording_cost(args.records, None)
    in_files = recording_cost(args.records, work / "record")
    print(
        f"recording one check: {in_memory:.2f} us in memory, {in_files:.2f} us in multiprocess mode"
    )

    from controller.settings import load_settings
    from controller.store import migrate
    from controller.store.db import Database

    url = fresh_database(args.postgres) if args.postgres else f"sqlite:///{work / 'bench.db'}"
    database = Database(url)
    migrate.upgrade(database)
    seed(database, args.watches)
    settings = load_settings(
        env={"DRIFTGATE_DATA_DIR": str(work), "DRIFTGATE_DATABASE_URL": url},
    )

    from controller.monitoring.service import StoreCollector, metrics_app

    collector = StoreCollector(database)
    times = []
    for _ in range(args.scrapes):
        started = time.perf_counter()
        list(collector.collect())
        times.append((time.perf_counter() - started) * 1000)
    kind = "Postgres" if args.postgres else "SQLite"
    print(f"store gauges, {args.watches} watches on {kind}: {statistics.median(times):.2f} ms")
    median, size = scrape_time(metrics_app(settings, database), args.scrapes)
    print(f"GET /metrics, this process: {median:.2f} ms, {size} bytes")

    run = work / "run"
    run.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(run)}
    for _ in range(args.processes):
        subprocess.run([sys.executable, "-c", BUSY.format(root=str(ROOT))], env=env, check=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(run)  # as `driftgate up` sets it
    try:
        median, size = scrape_time(metrics_app(settings, database), args.scrapes)
    finally:
        del os.environ["PROMETHEUS_MULTIPROC_DIR"]
    print(f"GET /metrics, {args.processes} processes' files: {median:.2f} ms, {size} bytes")
    database.dispose()
    if args.postgres:
        drop_database(args.postgres, url)


def fresh_database(admin_url: str) -> str:
    """A new database beside `admin_url`'s, for this run (dropped at its end)."""
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"driftgate_metrics_bench_{os.getpid()}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, url: str) -> None:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    admin.dispose()


if __name__ == "__main__":
    main()
