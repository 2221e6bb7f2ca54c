"""Benchmark of scheduling at scale: many watches on a short interval, several controllers,
and faults that must not stop the loop (issue 33).

A loopback vendor (`bench/vendor_server.py`, its own process) serves one distinct OpenAPI
document per watch, with ETags and an added latency (a vendor across the internet); it logs
every fetch with its time. The benchmark seeds a fresh Postgres database with `--watches`
watches at a 1-minute interval and runs `driftgate controller` processes against it, then
judges every slot of every healthy watch from the vendor's log: a slot with no fetch is
**missed**, one with two is a **duplicate**, and **lateness** is the first fetch's time after
the slot's start (each watch's slots are offset by its jitter, as the controller computes
them).

Scenarios (`--scenario`, several may be given):
- `steady`: 1 controller, then 3 (`--controllers`); checks/s and the ratio between the two.
- `faults`: 3 controllers; a share of the watches drift every minute and notify a webhook
  receiver that answers after 40 s, and 10 more watches point at vendors that trickle one
  byte every 2 s or never answer. Reports the missed-slot share of the healthy watches
  beside `steady`'s.
- `kill`: 3 controllers; one is killed with SIGKILL mid-run; reports how long the watches
  whose checks it held waited for their next check.

Run: `python bench/scale_bench.py --watches 10000 --minutes 4`. Prints figures and ratios
(docs/performance.md has them); nothing here fails on a number. `--smoke`: every scenario with
5 watches and one controller, each run half a second past the first check (no whole slot to
judge), a 1 s fetch deadline, on `--postgres` or the suite's `DRIFTGATE_TEST_DATABASE_URL`,
skipped without either.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, func, insert, select, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench import smoke  # noqa: E402
from bench.vendor_server import DistinctDocuments, serve, start  # noqa: E402
from controller.scheduler import jitter_seconds  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from controller.store.models import Job, Org, Watch  # noqa: E402

SECRET = "benchmark-secret-key-0123456789"
INTERVAL = 60  # seconds: every watch at 1 minute


def receiver(port_file: str, count_file: str, delay: float) -> None:
    """A webhook receiver that answers every POST after `delay` seconds."""
    received = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            time.sleep(delay)
            received[0] += 1
            Path(count_file).write_text(str(received[0]))
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


def seed(
    database: Database, port: int, count: int, *, flapping: int = 0, hook: str | None = None
) -> dict[int, str]:
    """`count` healthy watches (the first `flapping` of them drift every minute and notify
    `hook`), plus, with a hook, 5 trickling and 5 hanging ones; their ids by number."""
    now = datetime.now(UTC)
    ids: dict[int, str] = {}
    with database.transaction() as session:
        org_id = str(uuid.uuid4())
        session.execute(
            insert(Org).values(
                id=org_id, name="bench", plan="pro", products=[], is_trial=False, created_at=now
            )
        )
        rows = []
        for i in range(count):
            ids[i] = str(uuid.uuid4())
            flaps = i < flapping
            rows.append(
                _watch(
                    ids[i],
                    org_id,
                    f"spec-{i}",
                    f"http://127.0.0.1:{port}/spec/{i}.json" + ("?flap" if flaps else ""),
                    now,
                    hook if flaps else None,
                )
            )
        if hook is not None:
            for i in range(10):
                kind = "trickle" if i < 5 else "hang"
                rows.append(
                    _watch(
                        str(uuid.uuid4()),
                        org_id,
                        f"{kind}-{i}",
                        f"http://127.0.0.1:{port}/{kind}/{i}",
                        now,
                        None,
                    )
                )
        for first in range(0, len(rows), 1000):
            session.execute(insert(Watch), rows[first : first + 1000])
    return ids


def _watch(
    watch_id: str, org_id: str, name: str, url: str, now: datetime, hook: str | None
) -> dict[str, Any]:
    return {
        "id": watch_id,
        "org_id": org_id,
        "name": name,
        "watch_type": "openapi",
        "url": url,
        "drift_status": "never_run",
        "interval_minutes": 1,
        "header_names": [],
        "open_breaking": 0,
        "open_warning": 0,
        "open_info": 0,
        "webhook_url": hook,
        "created_at": now,
        "updated_at": now,
    }


def machine_cpu() -> tuple[float, float]:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(f) for f in fields]
    idle = ticks[3] + ticks[4]
    hz = os.sysconf("SC_CLK_TCK")
    return ((sum(ticks) - idle) / hz, sum(ticks) / hz)


def controllers(
    url: str, count: int, concurrency: int, fetch_deadline: float | None = None
) -> list[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "DRIFTGATE_DATABASE_URL": url,
        "DRIFTGATE_SECRET_KEY": SECRET,
        "DRIFTGATE_ALLOW_PRIVATE_TARGETS": "true",
        "DRIFTGATE_LOG_LEVEL": "WARNING",
        # `faults` loads the delivery lane with the flapping watches' webhooks (one per flip
        # to a 40 s receiver); delivery grouping would hold nearly all of them back.
        "DRIFTGATE_DELIVERY_GROUP_SECONDS": "0",
    }
    if fetch_deadline is not None:  # a stopping controller waits as long for its checks
        env["DRIFTGATE_FETCH_DEADLINE_SECONDS"] = str(fetch_deadline)
    return [
        subprocess.Popen(
            [sys.executable, "-m", "cli", "controller", "--concurrency", str(concurrency)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]


def stop(processes: list[subprocess.Popen[bytes]]) -> float:
    """SIGTERM each (skipping the dead); their CPU seconds in all."""
    cpu = 0.0
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            _, _, usage = os.wait4(process.pid, 0)
            cpu += usage.ru_utime + usage.ru_stime
        except ChildProcessError:
            pass
        process.returncode = process.returncode or 0
    return cpu


def judge(
    log_file: str, offset: int, ids: dict[int, str], since: float, until: float, skip: set[int]
) -> dict[str, Any]:
    """Every whole slot of every judged watch between `since` and `until`, from the log."""
    fetches: dict[int, list[float]] = defaultdict(list)
    with open(log_file) as handle:
        handle.seek(offset)
        for line in handle:
            stamp, number = line.split()
            fetches[int(number)].append(float(stamp))
    slots = missed = duplicates = 0
    lateness: list[float] = []
    for n, watch_id in ids.items():
        if n in skip:
            continue
        jitter = jitter_seconds(watch_id, 1)
        times = sorted(fetches.get(n, ()))
        first = int((since - jitter) // INTERVAL) + 1
        last = int((until - jitter) // INTERVAL) - 1
        for index in range(first, last + 1):
            begin = jitter + index * INTERVAL
            inside = [t for t in times if begin <= t < begin + INTERVAL]
            slots += 1
            if not inside:
                missed += 1
                continue
            duplicates += len(inside) - 1
            lateness.append(inside[0] - begin)
    lateness.sort()
    return {
        "slots": slots,
        "missed": missed,
        "missed_share": missed / max(1, slots),
        "duplicates": duplicates,
        "lateness_p50": lateness[len(lateness) // 2] if lateness else None,
        "lateness_p95": lateness[int(len(lateness) * 0.95)] if lateness else None,
        "lateness_max": lateness[-1] if lateness else None,
        "fetches": sum(len(v) for v in fetches.values()),
    }


def fresh_database(admin_url: str) -> tuple[str, str]:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"driftgate_scale_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    migrate.upgrade(Database(url))
    return name, url


def drop_database(admin_url: str, name: str) -> None:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def run(
    args: argparse.Namespace,
    scenario: str,
    replicas: int,
    port: int,
    log_file: str,
    hook: str | None = None,
    kill_after: float | None = None,
) -> dict[str, Any]:
    name, url = fresh_database(args.postgres)
    database = Database(url)
    try:
        flapping = args.watches // 50 if hook else 0
        ids = seed(database, port, args.watches, flapping=flapping, hook=hook)
        offset = Path(log_file).stat().st_size
        busy0, total0 = machine_cpu()
        started = time.time()
        processes = controllers(url, replicas, args.concurrency, args.fetch_deadline)
        if args.smoke:  # a run of seconds: start-up is most of it, so wait for the first check
            first_fetch(log_file, offset, processes, timeout=60)
        result: dict[str, Any] = {"scenario": scenario, "controllers": replicas}
        if kill_after is not None:
            time.sleep(kill_after)
            victim = processes[0]
            held = victims_checks(database, victim.pid)
            waited = time.time()
            while not held and time.time() - waited < args.kill_wait:  # while it holds checks
                time.sleep(0.02)
                held = victims_checks(database, victim.pid)
            killed_at = time.time()
            victim.send_signal(signal.SIGKILL)
            result["held_by_killed"] = len(held)
            time.sleep(max(0.0, args.minutes * INTERVAL - kill_after))
            result["recovery"] = recovery(database, held, killed_at)
        else:
            time.sleep(args.minutes * INTERVAL)
        ended = time.time()
        busy1, total1 = machine_cpu()
        cpu = stop(processes)
        warmup = started + INTERVAL  # the first minute holds every first check (a 200 to parse)
        judged = judge(log_file, offset, ids, warmup, ended, set(range(flapping)))
        result.update(judged)
        result["checks_per_second"] = judged["fetches"] / (ended - started)
        result["controller_cpu_ms_per_check"] = 1000 * cpu / max(1, judged["fetches"])
        result["machine_busy"] = (busy1 - busy0) / max(0.001, total1 - total0)
        with database.session() as session:
            result["jobs"] = session.scalar(select(text("count(*)")).select_from(Job))
        return result
    finally:
        database.dispose()
        drop_database(args.postgres, name)


def first_fetch(
    log_file: str, offset: int, processes: list[subprocess.Popen[bytes]], timeout: float
) -> None:
    """Return once the vendor has logged a fetch past `offset`; fail if a controller exits or
    `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while Path(log_file).stat().st_size <= offset:
        if any(p.poll() is not None for p in processes) or time.monotonic() > deadline:
            stop(processes)
            raise SystemExit("no check reached the vendor (a controller exited, or timed out)")
        time.sleep(0.05)


def victims_checks(database: Database, pid: int) -> set[str]:
    """The watches whose checks the controller with this pid holds now (its worker id is
    `host:pid:object`)."""
    with database.session() as session:
        return {
            str(job.payload.get("watchId"))
            for job in session.scalars(
                select(Job).where(Job.status == "running", Job.lease_owner.like(f"%:{pid}:%"))
            )
        }


def recovery(database: Database, held: set[str], killed_at: float) -> dict[str, Any]:
    """For each watch whose check the killed controller held: seconds from the kill to its
    next finished check."""
    # The first check of each that finished after the kill (the watch's last check, read at
    # the end of the run, would be its next slot's).
    after = datetime.fromtimestamp(killed_at, UTC)
    waits = []
    with database.session() as session:
        for watch_id in held:
            first = session.scalar(
                select(func.min(Job.finished_at)).where(
                    Job.key == f"check:{watch_id}", Job.status == "done", Job.finished_at > after
                )
            )
            if first is not None:
                waits.append(first.timestamp() - killed_at)
    return {
        "watches": len(held),
        "checked_again": sum(1 for w in waits if w > 0),
        "max_wait_seconds": max(waits) if waits else None,
        "median_wait_seconds": statistics.median(waits) if waits else None,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--watches", type=int, default=10000)
    parser.add_argument("--minutes", type=float, default=4.0, help="per run, 1 of them warm-up")
    parser.add_argument("--concurrency", type=int, default=32, help="checks at once per controller")
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--scenario", action="append", choices=("steady", "faults", "kill"))
    parser.add_argument(
        "--controllers", type=int, default=3, help="of faults, kill and steady's second run"
    )
    parser.add_argument("--receiver-delay", type=float, default=40.0, help="webhook answer (s)")
    parser.add_argument("--kill-after", type=float, default=INTERVAL * 1.5, help="seconds (kill)")
    parser.add_argument(
        "--kill-wait", type=float, default=20.0, help="at most, for the victim to hold checks"
    )
    parser.add_argument("--fetch-deadline", type=float, help="the controllers' (default theirs)")
    args = smoke.parse(
        parser,
        {
            "watches": 5,
            "minutes": 0.5 / INTERVAL,
            "concurrency": 4,
            "controllers": 1,
            "receiver_delay": 1.0,
            "kill_after": 0.2,
            "kill_wait": 1.0,
            "fetch_deadline": 1.0,
            "postgres": smoke.SUITE_POSTGRES,
        },
    )
    if args.postgres is None:
        smoke.skip(smoke.NO_POSTGRES)
    scenarios = args.scenario or ["steady", "faults", "kill"]
    work = Path(tempfile.mkdtemp(prefix="driftgate-scale-"))
    log_file = str(work / "fetches.log")
    Path(log_file).touch()
    vendor_process, port = start(serve, log_file, args.latency_ms / 1000, DistinctDocuments())
    results = []
    try:
        if "steady" in scenarios:
            for replicas in sorted({1, args.controllers}):
                results.append(run(args, "steady", replicas, port, log_file))
        if "faults" in scenarios:
            count_file = str(work / "received")
            receiver_process, receiver_port = start(receiver, count_file, args.receiver_delay)
            try:
                results.append(
                    run(
                        args,
                        "faults",
                        args.controllers,
                        port,
                        log_file,
                        hook=f"http://127.0.0.1:{receiver_port}/hook",
                    )
                )
            finally:
                receiver_process.terminate()
        if "kill" in scenarios:
            results.append(
                run(args, "kill", args.controllers, port, log_file, kill_after=args.kill_after)
            )
    finally:
        vendor_process.terminate()
    report(args, results)


def report(args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    print(
        f"{args.watches} watches every minute, {args.minutes:g} min per run (1 warm-up), "
        f"vendor latency {args.latency_ms:.0f} ms, concurrency {args.concurrency} per controller"
    )
    print(
        "scenario | controllers | checks/s | slots judged | missed | missed share | duplicates "
        "| lateness p50 / p95 / max (s) | controller CPU ms/check | machine busy"
    )
    for r in results:
        late = "/".join(
            "-" if r[k] is None else f"{r[k]:.1f}"
            for k in ("lateness_p50", "lateness_p95", "lateness_max")
        )
        print(
            f"{r['scenario']} | {r['controllers']} | {r['checks_per_second']:.0f} | "
            f"{r['slots']} | {r['missed']} | {r['missed_share']:.2%} | {r['duplicates']} | "
            f"{late} | {r['controller_cpu_ms_per_check']:.1f} | {r['machine_busy']:.0%}"
        )
        if "recovery" in r:
            print(f"  killed controller held {r['held_by_killed']} checks: {r['recovery']}")
    steady = {r["controllers"]: r for r in results if r["scenario"] == "steady"}
    many = args.controllers
    if 1 in steady and many in steady and many != 1:
        ratio = steady[many]["checks_per_second"] / max(0.001, steady[1]["checks_per_second"])
        print(f"throughput 1 -> {many} controllers: {ratio:.2f}x")
    faults = next((r for r in results if r["scenario"] == "faults"), None)
    if faults is not None and many in steady:
        points = 100 * (faults["missed_share"] - steady[many]["missed_share"])
        print(f"faults moved the healthy watches' missed-slot share by {points:+.2f} points")


if __name__ == "__main__":
    main()
