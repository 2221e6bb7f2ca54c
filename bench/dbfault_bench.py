"""Benchmark of database faults (issue 33, point 7): what clients, `/health` and the controller
see while Postgres is stopped for 30 s and then frozen for 30 s.

The database is reached through a loopback TCP proxy in this process (`tests/dbproxy.py`), so
the shared Postgres server itself is never stopped: `down` cuts every connection and refuses
new ones (a stopped server), `freeze` stops forwarding and accepting while the kernel still
completes handshakes (a SIGSTOPped server, or a network path that died). A fresh database
holds `--watches` watches at a 1-minute interval on a loopback vendor; `driftgate serve` (the
default 2 workers x 8 threads) and one `driftgate controller` run against the proxy with the
default settings, while `--clients` threads call the API without pause (preflight by watch
ids, the watch list) and one more asks `/health` every 0.2 s.

Per fault it prints: the time from the fault to each client's first 503 (the slowest client),
the longest request, how many requests and which statuses, `/health`'s longest answer and any
non-200, the time from the database's return to the first 200, the slots of the watches around
the outage with more than one check (duplicates after recovery) and the most checks one watch
got in the 30 s after it, and the `store.*` lines and stack traces in the processes' logs.

Run: `python bench/dbfault_bench.py` (about 3 minutes; `--smoke`: 5 watches, 1 s faults, on
`--postgres` or the suite's `DRIFTGATE_TEST_DATABASE_URL`, skipped without either). Prints
figures; never fails on one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from bench.scale_bench import (  # noqa: E402
    INTERVAL,
    SECRET,
    drop_database,
    free_port,
    fresh_database,
    seed,
)
from bench.vendor_server import DistinctDocuments, serve, start  # noqa: E402
from controller.orgs import auth_service  # noqa: E402
from controller.scheduler import jitter_seconds  # noqa: E402
from controller.store.db import Database  # noqa: E402
from controller.store.models import Org  # noqa: E402
from tests.dbproxy import DatabaseProxy  # noqa: E402


class Calls:
    """Every request the clients made: (start, end, status, kind)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[tuple[float, float, int, str]] = []

    def add(self, started: float, ended: float, status: int, kind: str) -> None:
        with self.lock:
            self.rows.append((started, ended, status, kind))

    def between(self, since: float, until: float, kind: str | None = None) -> list[Any]:
        with self.lock:
            return [
                r for r in self.rows if since <= r[0] < until and (kind is None or r[3] == kind)
            ]


def client(
    base: str, key: str, ids: list[str], calls: Calls, stop: threading.Event, n: int
) -> None:
    headers = {"Authorization": f"Bearer {key}", "User-Agent": "dbfault-bench"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
        turn = 0
        while not stop.is_set():
            turn += 1
            started = time.time()
            try:
                if (turn + n) % 2:
                    watch_ids = [ids[(turn * 7 + n + k) % len(ids)] for k in range(5)]
                    answer = http.post("/api/preflight", json={"watchIds": watch_ids})
                    kind = "preflight"
                else:
                    answer = http.get("/api/watches", params={"limit": 20})
                    kind = "watches"
                status = answer.status_code
            except httpx.HTTPError:
                status, kind = 0, "error"
            calls.add(started, time.time(), status, kind)
            if status == 503:
                time.sleep(0.05)  # a client that retries at once, not a tight loop


def health(base: str, calls: Calls, stop: threading.Event) -> None:
    with httpx.Client(base_url=base, timeout=120) as http:
        while not stop.is_set():
            started = time.time()
            try:
                status = http.get("/health").status_code
            except httpx.HTTPError:
                status = 0
            calls.add(started, time.time(), status, "health")
            time.sleep(0.2)


def fault_figures(
    calls: Calls, fault: str, began: float, back: float, ended: float
) -> dict[str, Any]:
    api = [r for r in calls.between(began - 60, ended) if r[3] != "health" and r[1] >= began]
    during = [r for r in api if r[0] < back]
    statuses = Counter(r[2] for r in during)
    first_503 = min((r[1] for r in during if r[2] == 503), default=None)
    # The slowest client: requests in flight when the fault began are answered last.
    in_flight = [r for r in during if r[0] < began]
    health_rows = [r for r in calls.between(began, back, "health")]
    after = sorted(r for r in calls.between(back, ended) if r[3] != "health")
    first_ok = next((r[1] for r in after if r[2] == 200), None)
    return {
        "fault": fault,
        "requests": len(during),
        "statuses": dict(sorted(statuses.items())),
        "first_503_s": None if first_503 is None else first_503 - began,
        "in_flight_at_fault": len(in_flight),
        "in_flight_answered_by_s": max((r[1] - began for r in in_flight), default=None),
        "max_request_s": max((r[1] - r[0] for r in during), default=None),
        "p95_request_s": percentile([r[1] - r[0] for r in during], 0.95),
        "health_max_s": max((r[1] - r[0] for r in health_rows), default=None),
        "health_not_200": sum(1 for r in health_rows if r[2] != 200),
        "first_200_after_return_s": None if first_ok is None else first_ok - back,
    }


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def checks_after(
    log_file: str, offset: int, ids: dict[int, str], back: float, until: float
) -> dict[str, Any]:
    """Slots of the watches from the database's return to `until`: duplicates (checks beyond
    the first of a slot), and the most checks one watch got in one slot."""
    fetches: dict[int, list[float]] = defaultdict(list)
    with open(log_file) as handle:
        handle.seek(offset)
        for line in handle:
            stamp, number = line.split()
            fetches[int(number)].append(float(stamp))
    duplicates = 0
    most = 0
    checked = 0
    for n, watch_id in ids.items():
        jitter = jitter_seconds(watch_id, 1)
        times = [t for t in fetches.get(n, ()) if back <= t < until]
        checked += bool(times)
        slots = Counter(int((t - jitter) // INTERVAL) for t in times)
        most = max([most, *slots.values()])
        duplicates += sum(count - 1 for count in slots.values() if count > 1)
    return {"watches_checked": checked, "duplicate_checks": duplicates, "most_in_a_slot": most}


def log_lines(path: Path) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                event = json.loads(line).get("event", "")
            except ValueError:
                continue
            if event.startswith("store."):
                counts[event] += 1
            if '"exception"' in line:
                counts["traces"] += 1
        elif line.startswith("Traceback"):
            counts["traces"] += 1
    return dict(counts)


def make_key(database: Database) -> str:
    with database.transaction() as session:
        org = session.scalars(select(Org)).one()
        return auth_service.create_api_key(session, org, "bench", actor="bench").secret


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--watches", type=int, default=300)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2, help="driftgate serve's workers")
    parser.add_argument("--fault-seconds", type=float, default=30.0)
    parser.add_argument("--recovery-seconds", type=float, default=40.0)
    parser.add_argument(
        "--warm-seconds", type=float, default=15.0, help="load before the first fault"
    )
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = smoke.parse(
        parser,
        {
            "watches": 5,
            "clients": 2,
            "workers": 1,
            "fault_seconds": 1.0,
            "recovery_seconds": 1.5,
            "warm_seconds": 1.0,
            "postgres": smoke.SUITE_POSTGRES,
        },
    )
    if args.postgres is None:
        smoke.skip(smoke.NO_POSTGRES)

    work = Path(tempfile.mkdtemp(prefix="driftgate-dbfault-"))
    fetch_log = str(work / "fetches.log")
    Path(fetch_log).touch()
    vendor_process, vendor_port = start(serve, fetch_log, 0.0, DistinctDocuments())
    name, url = fresh_database(args.postgres)
    database = Database(url)
    processes: list[subprocess.Popen[bytes]] = []
    proxy: DatabaseProxy | None = None
    try:
        ids = seed(database, vendor_port, args.watches)
        key = make_key(database)
        target = (database.engine.url.host or "127.0.0.1", database.engine.url.port or 5432)
        proxy = DatabaseProxy(target)
        port = free_port()
        env = {
            **os.environ,
            "DRIFTGATE_DATABASE_URL": proxy.url(url),
            "DRIFTGATE_SECRET_KEY": SECRET,
            "DRIFTGATE_ALLOW_PRIVATE_TARGETS": "true",
            "DRIFTGATE_DATA_DIR": str(work / "data"),
        }
        logs = {"serve": work / "serve.log", "controller": work / "controller.log"}
        for role, command in (
            ("serve", ["serve", "--port", str(port), "--workers", str(args.workers)]),
            ("controller", ["controller"]),
        ):
            with logs[role].open("w") as log:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "cli", *command],
                        env=env,
                        cwd=ROOT,
                        stdout=log,
                        stderr=log,
                    )
                )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/health/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            exited = [p.args[3] for p in processes if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                raise SystemExit(f"not ready ({', '.join(exited) or 'timed out'}): see {work}")
            time.sleep(0.2)
        calls = Calls()
        stop = threading.Event()
        watch_ids = list(ids.values())
        threads = [
            threading.Thread(target=client, args=(base, key, watch_ids, calls, stop, n))
            for n in range(args.clients)
        ]
        threads.append(threading.Thread(target=health, args=(base, calls, stop)))
        for thread in threads:
            thread.start()
        time.sleep(args.warm_seconds)  # warm: keys cached, first checks done
        results = []
        for fault in ("down", "freeze"):
            offset = Path(fetch_log).stat().st_size
            began = time.time()
            getattr(proxy, fault)()
            time.sleep(args.fault_seconds)
            back = time.time()
            proxy.forward()
            time.sleep(args.recovery_seconds)
            ended = time.time()
            figures = fault_figures(calls, fault, began, back, ended)
            figures.update(checks_after(fetch_log, offset, ids, back, ended))
            results.append(figures)
        stop.set()
        for thread in threads:
            thread.join()
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
        vendor_process.terminate()
        if proxy is not None:
            proxy.close()
        database.dispose()
        drop_database(args.postgres, name)
    report(args, results, {role: log_lines(path) for role, path in logs.items()})


def report(args: argparse.Namespace, results: list[dict[str, Any]], lines: dict[str, Any]) -> None:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    print(
        f"{args.watches} watches every minute, {args.clients} API clients without pause, "
        f"{args.fault_seconds:g} s per fault, default settings ({args.workers} workers x 8 "
        "threads, statement timeout 4 s + 1 s, connect timeout 5 s)"
    )
    print(
        "fault | requests | statuses | first 503 (s) | in flight at fault: n, answered by (s) "
        "| longest request (s) | p95 (s) | /health longest (s), non-200 "
        "| first 200 after return (s) | watches checked after | duplicate checks "
        "| most checks of a watch in one slot"
    )
    for r in results:
        print(
            f"{r['fault']} | {r['requests']} | {r['statuses']} | {seconds(r['first_503_s'])} | "
            f"{r['in_flight_at_fault']}, {seconds(r['in_flight_answered_by_s'])} | "
            f"{seconds(r['max_request_s'])} | {seconds(r['p95_request_s'])} | "
            f"{seconds(r['health_max_s'])}, {r['health_not_200']} | "
            f"{seconds(r['first_200_after_return_s'])} | {r['watches_checked']} | "
            f"{r['duplicate_checks']} | {r['most_in_a_slot']}"
        )
    print(f"log lines over both faults: {lines}")


if __name__ == "__main__":
    main()
