"""Benchmark of a held SQLite write lock (issue 40, point 7): what each route's clients wait
while another process holds `BEGIN IMMEDIATE` on the store for `--hold` seconds.

It seeds a SQLite store (one org with an API key, `--watches` watches and `--agents` agents as
bench/preflight_bench.py does, and a console user with a signed-in session), starts
`driftgate serve` (2 workers x 8 threads by default) and sends `--rate` requests a second,
open loop (each at its time, whether or not the ones before have answered), in turn to:

- `GET /health/ready` (readiness),
- `GET /api/watches?limit=20` and `GET /console/` (reads),
- `PATCH /api/watches/<id>` (an ORM write) and `POST /api/preflight` by `agentId` (the run
  gate's write of its decision).

After `--warmup` seconds another process takes the write lock (`BEGIN IMMEDIATE` on its own
connection) and holds it `--hold` seconds; the load goes on `--after` seconds past its release.
For the requests sent while the lock was held it prints, per route: how many, their statuses,
the median, 95th percentile and longest wait of the client, and how many answered before the
lock was released; and the same medians for the requests sent before the lock (the baseline).
`--root DIR` serves from another checkout (the commit before the fix, in a `git worktree`) to
measure the defect itself. Run: `python bench/sqlite_lock_bench.py [--rate R] [--hold S]`
(about 40 s; `--smoke`: a 1 s hold between 1 s of load on each side, one worker). Figures go to
docs/performance.md; nothing here fails on a time.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from bench.preflight_bench import free_port, seed, start_server, stop_server  # noqa: E402
from controller.accounts import service as accounts  # noqa: E402
from controller.orgs.service import get_org  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from controller.store.types import utcnow  # noqa: E402

ROUTES = ("ready", "watches", "console", "patch", "preflight")
HOLDER = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
connection.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("ROLLBACK")
print("released", flush=True)
"""


def console_cookie(database: Database) -> str:
    """A signed-in console session of an admin of the benchmark's org (its cookie's token)."""
    with database.transaction() as session:
        org = get_org(session, "bench")
        _user, token = accounts.create_user(
            session, org, "bench@example.com", "admin", actor="bench", now=utcnow()
        )
        accounts.set_password(session, token, "a long bench password 1", utcnow())
        cookie, _signed = accounts.sign_in(
            session, "bench@example.com", "a long bench password 1", "127.0.0.1", utcnow()
        )
    return cookie


class Calls:
    """Every request sent: (route, sent, answered, status)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[tuple[str, float, float, int]] = []

    def add(self, route: str, sent: float, answered: float, status: int) -> None:
        with self.lock:
            self.rows.append((route, sent, answered, status))


def send(http: httpx.Client, route: str, n: int, ids: list[str], agents: list[str]) -> int:
    if route == "ready":
        return http.get("/health/ready").status_code
    if route == "watches":
        return http.get("/api/watches", params={"limit": 20}).status_code
    if route == "console":
        return http.get("/console/").status_code
    if route == "patch":
        body = {"intervalMinutes": 15 + n % 2 * 15}
        return http.patch(f"/api/watches/{ids[n % len(ids)]}", json=body).status_code
    body = {"agentId": agents[n % len(agents)]}
    return http.post("/api/preflight", json=body).status_code


def load(
    base: str, key: str, cookie: str, ids: list[str], agents: list[str], rate: float, stop: float
) -> Calls:
    """Send `rate` requests a second, open loop, until `stop` (monotonic); wait for answers."""
    calls = Calls()
    headers = {"Authorization": f"Bearer {key}", "User-Agent": "sqlite-lock-bench"}
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
    api = httpx.Client(base_url=base, headers=headers, timeout=120, limits=limits)
    console = httpx.Client(
        base_url=base,
        headers={"User-Agent": "sqlite-lock-bench"},
        cookies={"driftgate_session": cookie},
        timeout=120,
        limits=limits,
    )

    def one(route: str, n: int) -> None:
        sent = time.monotonic()
        try:
            status = send(console if route == "console" else api, route, n, ids, agents)
        except httpx.HTTPError:
            status = 0
        calls.add(route, sent, time.monotonic(), status)

    with ThreadPoolExecutor(max_workers=400) as pool:
        n = 0
        start = time.monotonic()
        while True:
            at = start + n / rate
            if at >= stop:
                break
            time.sleep(max(0.0, at - time.monotonic()))
            pool.submit(one, ROUTES[n % len(ROUTES)], n)
            n += 1
    api.close()
    console.close()
    return calls


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def report(args: argparse.Namespace, calls: Calls, held: float, released: float) -> None:
    during: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    before: dict[str, list[float]] = defaultdict(list)
    for route, sent, answered, status in calls.rows:
        if held <= sent < released:
            during[route].append((sent, answered, status))
        elif sent < held:
            before[route].append(answered - sent)
    print(
        f"{args.rate:g} requests/s in turn over {len(ROUTES)} routes; another process holds "
        f"BEGIN IMMEDIATE for {released - held:.1f} s; driftgate serve {args.workers} workers "
        f"x {args.threads} threads, SQLite"
    )
    print(
        f"{'route':<10} {'before p50':>10} | {'sent':>4} {'p50':>6} {'p95':>6} {'max':>6} "
        f"{'answered in lock':>16}  statuses"
    )
    for route in ROUTES:
        rows = during[route]
        waits = [answered - sent for sent, answered, _ in rows]
        inside = sum(1 for _sent, answered, _ in rows if answered < released)
        statuses = Counter(status for *_, status in rows)
        print(
            f"{route:<10} {percentile(before[route], 0.5):>10.3f} | {len(rows):>4} "
            f"{percentile(waits, 0.5):>6.2f} {percentile(waits, 0.95):>6.2f} "
            f"{max(waits, default=0):>6.2f} {inside:>9}/{len(rows):<6}  "
            + ", ".join(f"{s}: {c}" for s, c in sorted(statuses.items()))
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=12.0)
    parser.add_argument("--hold", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--after", type=float, default=12.0)
    parser.add_argument("--watches", type=int, default=200)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--root", type=Path, default=ROOT, help="serve from this checkout")
    sizes = {"hold": 1.0, "warmup": 1.0, "after": 1.0, "watches": 20, "agents": 3, "workers": 1}
    args = smoke.parse(parser, sizes)

    work = Path(tempfile.mkdtemp(prefix="driftgate-sqlitelock-"))
    path = work / "driftgate.db"
    url = f"sqlite:///{path}"
    database = Database(url)
    process = None
    try:
        migrate.upgrade(database)
        key, ids, agents = seed(database, args.watches, args.agents)
        cookie = console_cookie(database)
        database.dispose()
        port = free_port()
        process, _log = start_server(url, work, "serve", port, args, root=args.root.resolve())
        base = f"http://127.0.0.1:{port}"
        start = time.monotonic()
        stop = start + args.warmup + args.hold + args.after
        times: dict[str, float] = {}

        def hold() -> None:
            time.sleep(args.warmup)
            holder = subprocess.Popen(
                [sys.executable, "-c", HOLDER, str(path), str(args.hold)],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert holder.stdout is not None
            for line in holder.stdout:
                times[line.strip()] = time.monotonic()
            holder.wait()

        holder_thread = threading.Thread(target=hold)
        holder_thread.start()
        calls = load(base, key, cookie, ids, agents, args.rate, stop)
        holder_thread.join()
    finally:
        if process is not None:
            stop_server(process)
        database.dispose()
    report(args, calls, times["held"], times["released"])
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
