"""What a job costs on driftgate's job table and on procrastinate, the Postgres job queue
issue 33 proposed: the CPU a worker process spends per job, the same work on both.

Each side runs `--jobs` jobs (default 3,000) through `--threads` concurrent workers in one
process; a job's own work is one INSERT (a stand-in for recording a check). The job table
claims in batches (`jobs.claim`) and ends each job in the transaction of its work
(`jobs.finish_in`); procrastinate 3 runs a sync task through its worker (`run_worker`, the
loop's thread pool for the sync task) with its Postgres functions and event triggers. The
process's CPU time per job is the figure (load on the machine changes the wall time, much
less the CPU a job takes). procrastinate is not a dependency of driftgate: install it into the
venv to run its side (`pip install procrastinate`); without it, only the job table runs.

Run: `python bench/queue_bench.py [--jobs N] [--postgres URL]` (`--smoke`: 20 jobs, on
`--postgres` or the suite's `DRIFTGATE_TEST_DATABASE_URL`, skipped without either). Figures in
docs/performance.md and the decision in docs/decisions.md; nothing here fails on a number.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import importlib.util
import os
import resource
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench import smoke  # noqa: E402
from controller.store import jobs, migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def job_table(url: str, count: int, threads: int) -> tuple[float, float]:
    database = Database(url, pool_size=threads + 2)
    migrate.upgrade(database)
    now = datetime.now(UTC)
    with database.transaction() as session:
        session.execute(text("CREATE TABLE bench_runs (n integer, at double precision)"))
        session.execute(
            jobs.insert_ignoring_duplicates(database),
            [
                {
                    "kind": "bench",
                    "key": f"bench:{i}",
                    "period": "p",
                    "status": "queued",
                    "run_after": now,
                    "attempts": 0,
                    "fence": 0,
                    "payload": {"n": i},
                    "created_at": now,
                }
                for i in range(count)
            ],
        )

    def work(job: jobs.Claimed) -> None:
        with database.transaction() as session:
            session.execute(
                text("INSERT INTO bench_runs VALUES (:n, :at)"),
                {"n": job.payload["n"], "at": time.time()},
            )
            jobs.finish_in(session, job, datetime.now(UTC), result={"ok": True})

    cpu, started = cpu_seconds(), time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        while claimed := jobs.claim(
            database, worker="bench", kinds=("bench",), now=datetime.now(UTC), limit=threads
        ):
            list(pool.map(work, claimed))
    result = (cpu_seconds() - cpu, time.perf_counter() - started)
    database.dispose()
    return result


def procrastinate_side(url: str, count: int, threads: int) -> tuple[float, float]:
    import procrastinate
    import psycopg

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))
    local = threading.local()

    @app.task(name="bench", queue="bench")
    def bench(n: int) -> None:
        if not hasattr(local, "connection"):
            local.connection = psycopg.connect(dsn, autocommit=True)
        local.connection.execute("INSERT INTO bench_runs VALUES (%s, %s)", (n, time.time()))

    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("CREATE TABLE bench_runs (n integer, at double precision)")
    with app.open():
        app.schema_manager.apply_schema()
        for first in range(0, count, 1000):
            bench.batch_defer(*({"n": i} for i in range(first, min(count, first + 1000))))

    async def work() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(threads))
        async with app.open_async():
            await app.run_worker_async(
                queues=["bench"], concurrency=threads, wait=False, install_signal_handlers=False
            )

    cpu, started = cpu_seconds(), time.perf_counter()
    asyncio.run(work())
    return cpu_seconds() - cpu, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=10)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = smoke.parse(parser, {"jobs": 20, "threads": 2, "postgres": smoke.SUITE_POSTGRES})
    if args.postgres is None:
        smoke.skip(smoke.NO_POSTGRES)
    admin = create_engine(args.postgres, isolation_level="AUTOCOMMIT")
    sides = [("job table", job_table)]
    if importlib.util.find_spec("procrastinate") is not None:
        sides.append(("procrastinate", procrastinate_side))
    else:
        print("procrastinate is not installed: only the job table runs")
    print(f"{args.jobs} jobs, {args.threads} at once, one INSERT each")
    print("queue | CPU ms per job | jobs/s (wall)")
    for label, side in sides:
        name = f"driftgate_queue_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(args.postgres).set(database=name).render_as_string(hide_password=False)
        try:
            cpu, wall = side(url, args.jobs, args.threads)
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        print(f"{label} | {1000 * cpu / args.jobs:.2f} | {args.jobs / wall:.0f}")


if __name__ == "__main__":
    main()
