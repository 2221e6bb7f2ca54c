"""Benchmark of the controller: checks per second on SQLite and Postgres, one and three replicas.

A loopback vendor (`bench/vendor_server.py`, its own process) serves 5,000 OpenAPI specs with
ETags. For each store, the
benchmark seeds 5,000 watches, then runs rounds in which every watch is due at once:

- `first`: the first check of every watch, queued by the ticker (fetch, parse, fingerprint,
  store the baseline);
- `unchanged`: every spec is the same again (conditional GET answered 304);
- `unchanged, no ETag`: the same bytes again, from a server that sends no ETag and no
  Last-Modified (a 200 every time, as most vendors answer): the controller recognises the
  bytes by their hash before parsing;
- `changed`: every spec has a breaking change (parse, diff, drift event, incident, outbox);
- `unchanged x3` (Postgres): the same as `unchanged` with three controller processes.

It counts fetches per spec per round from the server's own log, so duplicate and lost checks
are measured, not assumed. Controller CPU per check is printed twice: over the whole round
(from `wait4`, process start-up included) and steady (the controllers' CPU from the first
finished check to the last, from /proc/<pid>/stat, divided by the checks in between).
Run: `python bench/checks_bench.py [--watches N] [--postgres URL]` (`--smoke`: 5 watches on
SQLite). Figures go to docs/performance.md; nothing here fails on a time (a controller that
dies does fail it).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, func, insert, select, text, update  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench import smoke  # noqa: E402
from bench.vendor_server import SameDocument, serve, start  # noqa: E402
from controller.store import jobs, migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from controller.store.models import Job, Org, Watch  # noqa: E402

SECRET = "benchmark-secret-key-0123456789"


def seed(database: Database, port: int, count: int) -> None:
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
                "url": f"http://127.0.0.1:{port}/spec/{i}.json",
                "drift_status": "never_run",
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
        for start in range(0, count, 1000):
            session.execute(insert(Watch), rows[start : start + 1000])


def make_due(database: Database, label: str) -> datetime:
    """Make every watch due now. The first round goes through the ticker (each watch's first
    slot); later rounds are within the same slots, so they queue one check per watch the way
    `POST /api/watches/<id>/check` does."""
    now = datetime.now(UTC)
    with database.transaction() as session:
        if label == "first":
            session.execute(update(Watch).values(next_check_at=None))
        else:
            for watch_id in session.scalars(select(Watch.id)):
                jobs.enqueue(
                    session,
                    kind="check",
                    key=f"check:{watch_id}",
                    period=f"bench:{label}",
                    run_after=now,
                    payload={"watchId": watch_id},
                )
    return now


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat (Linux)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return (0.0, 0.0)
    ticks = [int(f) for f in fields]
    idle = ticks[3] + ticks[4]  # idle + iowait
    hz = os.sysconf("SC_CLK_TCK")
    return ((sum(ticks) - idle) / hz, sum(ticks) / hz)


def process_cpu(pids: list[int]) -> float:
    """User + system CPU seconds of the processes `pids` so far (every thread), from
    /proc/<pid>/stat (Linux); 0 for a process that is gone."""
    hz = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / hz


def checked_since(database: Database, since: datetime) -> int:
    with database.session() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(Watch).where(Watch.last_checked_at >= since)
            )
            or 0
        )


def run_round(
    label: str,
    database: Database,
    url: str,
    replicas: int,
    count: int,
    log_file: str,
    concurrency: int,
    settle: float,
) -> dict[str, Any]:
    offset = Path(log_file).stat().st_size
    env = {
        **os.environ,
        "DRIFTGATE_DATABASE_URL": url,
        "DRIFTGATE_SECRET_KEY": SECRET,
        "DRIFTGATE_ALLOW_PRIVATE_TARGETS": "true",
        "DRIFTGATE_LOG_LEVEL": "WARNING",
    }
    since = make_due(database, label)
    started = time.perf_counter()
    busy_before, total_before = machine_cpu()
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli",
                "controller",
                "--tick",
                "0.2",
                "--concurrency",
                str(concurrency),
            ],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(replicas)
    ]
    pids = [process.pid for process in processes]
    deadline = time.monotonic() + 600
    # The controllers' CPU from the first finished check seen to the last (start-up excluded).
    steady_from: tuple[int, float] | None = None
    checked_now = 0
    while checked_now < count and time.monotonic() < deadline:
        time.sleep(0.05)
        for process in processes:
            if process.poll() is not None:
                raise SystemExit(f"round {label}: a controller exited with {process.returncode}")
        checked_now = checked_since(database, since)
        if steady_from is None and checked_now > 0:
            steady_from = (checked_now, process_cpu(pids))
    steady_cpu = process_cpu(pids)
    elapsed = time.perf_counter() - started
    busy_after, total_after = machine_cpu()
    time.sleep(settle)  # anything fetched twice would show up now
    for process in processes:
        process.send_signal(signal.SIGTERM)
    cpu = 0.0
    for process in processes:
        _, _, usage = os.wait4(process.pid, 0)
        process.returncode = 0
        cpu += usage.ru_utime + usage.ru_stime
    with open(log_file) as handle:
        handle.seek(offset)
        fetches = Counter(line.split()[1] for line in handle if line.strip())  # per spec number
    checked = checked_since(database, since)
    # A watch whose slot started during the round is rightly checked twice (two periods, two
    # jobs); a duplicate is a fetch without a finished job of its own.
    with database.session() as session:
        done = Counter(
            session.scalars(
                select(Job.key).where(
                    Job.kind == jobs.CHECK, Job.status == "done", Job.finished_at >= since
                )
            )
        )
        names = {row[0]: row[1] for row in session.execute(select(Watch.id, Watch.name))}
        first, last = session.execute(
            select(func.min(Watch.last_checked_at), func.max(Watch.last_checked_at)).where(
                Watch.last_checked_at >= since
            )
        ).one()
    # Steady state: from the first finished check to the last (process start-up excluded).
    steady = (checked - 1) / max(0.001, (last - first).total_seconds()) if checked > 1 else 0.0
    jobs_per_spec = Counter(
        {names[key.split(":", 1)[1]].split("-")[1]: n for key, n in done.items()}
    )
    return {
        "round": label,
        "replicas": replicas,
        "checks": checked,
        "seconds": elapsed,
        "per_second": checked / elapsed,
        "steady_per_second": steady,
        "duplicates": sum(max(0, n - jobs_per_spec[spec]) for spec, n in fetches.items()),
        "lost": count - checked,
        "cpu_ms_per_check": 1000 * cpu / max(1, checked),
        "steady_cpu_ms_per_check": (
            1000 * (steady_cpu - steady_from[1]) / max(1, checked_now - steady_from[0])
            if steady_from is not None
            else 0.0
        ),
        "machine_busy": (busy_after - busy_before) / max(0.001, total_after - total_before),
    }


def bench_store(
    label: str,
    url: str,
    port: int,
    version_file: str,
    log_file: str,
    count: int,
    concurrency: int,
    settle: float,
    replicas_too: bool,
) -> list[dict[str, Any]]:
    database = Database(url)
    migrate.upgrade(database)
    seed(database, port, count)
    rounds = (
        ("first", "v1", 1),
        ("unchanged", "v1", 1),
        *((("unchanged x3", "v1", 3),) if replicas_too else ()),
        ("unchanged, no ETag", "v1 plain", 1),
        ("changed", "v2", 1),
    )
    results = []
    for name, version, replicas in rounds:
        Path(version_file).write_text(version)
        results.append(
            run_round(name, database, url, replicas, count, log_file, concurrency, settle)
        )
    database.dispose()
    for result in results:
        result["store"] = label
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--watches", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--stores", default="sqlite,postgres", help="comma list: sqlite,postgres")
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="the spec server answers after this delay, like a vendor across the internet",
    )
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=1.0,
        help="after a round's last check, how long duplicate fetches have to show up",
    )
    args = smoke.parse(
        parser, {"watches": 5, "concurrency": 4, "stores": "sqlite", "settle_seconds": 0.2}
    )
    stores = set(args.stores.split(","))
    work = Path(tempfile.mkdtemp(prefix="driftgate-bench-"))
    version_file, log_file = (str(work / n) for n in ("version", "fetches.log"))
    Path(version_file).write_text("v1")
    Path(log_file).touch()
    server, port = start(serve, log_file, args.latency_ms / 1000, SameDocument(version_file))
    results = []
    if "sqlite" in stores:
        results += bench_store(
            "sqlite",
            f"sqlite:///{work / 'bench.db'}",
            port,
            version_file,
            log_file,
            args.watches,
            args.concurrency,
            args.settle_seconds,
            replicas_too=False,
        )
    if "postgres" in stores:
        results += postgres_rounds(args, port, version_file, log_file)
    server.terminate()
    report(args, results)


def postgres_rounds(
    args: argparse.Namespace, port: int, version_file: str, log_file: str
) -> list[dict[str, Any]]:
    admin = create_engine(args.postgres, isolation_level="AUTOCOMMIT")
    name = f"driftgate_bench_{os.getpid()}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        pg_url = make_url(args.postgres).set(database=name).render_as_string(hide_password=False)
        return bench_store(
            "postgres",
            pg_url,
            port,
            version_file,
            log_file,
            args.watches,
            args.concurrency,
            args.settle_seconds,
            replicas_too=True,
        )
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def report(args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    print(
        f"{args.watches} watches, concurrency {args.concurrency} per controller, "
        f"server latency {args.latency_ms:.0f} ms"
    )
    print(
        "store | round | replicas | checks | seconds | checks/s (with start-up) "
        "| checks/s (steady) | controller CPU ms/check (round) | controller CPU ms/check (steady) "
        "| machine CPU busy | duplicates | lost"
    )
    for r in results:
        print(
            f"{r['store']} | {r['round']} | {r['replicas']} | {r['checks']} | {r['seconds']:.1f} | "
            f"{r['per_second']:.0f} | {r['steady_per_second']:.0f} | "
            f"{r['cpu_ms_per_check']:.2f} | {r['steady_cpu_ms_per_check']:.2f} | "
            f"{r['machine_busy']:.0%} | "
            f"{r['duplicates']} | {r['lost']}"
        )
    for r in results:
        if r["round"] in ("unchanged", "unchanged, no ETag"):
            print(
                f"{r['store']}: controller CPU per unchanged check, "
                f"{'ETag (304)' if r['round'] == 'unchanged' else 'no ETag (200, same bytes)'}: "
                f"{r['steady_cpu_ms_per_check']:.2f} ms steady, "
                f"{r['cpu_ms_per_check']:.2f} ms with start-up"
            )
    single = next(
        (r for r in results if r["round"] == "unchanged" and r["store"] == "postgres"), None
    )
    triple = next((r for r in results if r["round"] == "unchanged x3"), None)
    if single is None or triple is None:
        return
    ratio = triple["steady_per_second"] / single["steady_per_second"]
    print(f"scaling to 3 replicas on Postgres (steady): {ratio:.2f}x")


if __name__ == "__main__":
    main()
