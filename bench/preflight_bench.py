"""Benchmark of the run gate: `POST /api/preflight` beside `GET /health` under real gunicorn.

For each store (SQLite always, Postgres with `--postgres URL`), the benchmark migrates a fresh
database and seeds one org with an API key, 10,000 watches of mixed statuses (70% ok, 10%
drifted with an open or acknowledged incident and a drift event carrying `agent_actions`, 8%
error with a failure class, 7% never run, 5% disabled) and 500 agents (the three policy
presets in turn) bound to 5-20 watches each. It then starts `driftgate serve` (gunicorn,
gthread workers) on a free 127.0.0.1 port and runs three scenarios one after another against
the same server:

- `health`: `GET /health` (no database, no credentials);
- `preflight watchIds`: `POST /api/preflight` with 100 random watch ids;
- `preflight agentId`: `POST /api/preflight` with `{"agentId": ...}` of a random agent.

The load generator is Python only (wrk is not used, even when installed: its support would be
untested here). `--clients` processes each run an asyncio loop with their share of
`--concurrency` keep-alive connections; each connection sends a pre-built request, reads the
answer (status line, headers, Content-Length body) and sends the next one (closed loop). A
connection is reopened after `--reconnect-every` answers (200 by default): gunicorn's workers
take connections as they arrive, and 16 opened at once often all land on one worker, leaving a
core idle for the whole scenario; reopening lets them spread as real clients' do (the connect
time is not in the latencies; it costs both sides under 1% of the requests). A
scenario warms up for `--warmup` seconds, then measures for `--duration` seconds: throughput
is answers completed in that window per second; p50 and p99 are of their latencies. 200 and
409 are successes (409 is an enforcing policy's block); any other status or a connection error
is an error. The same 2-core machine runs the server, the generator and PostgreSQL, so the
table also gives the server's and the generator's CPU time per request (from /proc and
getrusage), Postgres' CPU per request, and how busy the whole machine was (/proc/stat),
with the share of it the hypervisor gave to other guests ("stolen"): a ratio measured on a
saturated machine says how the CPU splits, not only how fast the route is, and a round with
much stolen time is slower for reasons outside the run.

Beside the throughput ratios it prints the same ratio by CPU per request (server, generator
and Postgres): what the throughput ratio would be were the machine as busy in every scenario.
It moves much less with the VM's noise than throughput does (another guest's load, stolen
time), and where the two differ, the preflight scenario left part of the machine idle.

`--rounds N` runs the three scenarios N times in turn on the same server and reports each
figure's median (the throughputs of every round are listed too): on a shared 2-core machine a
single 10-second window varies by 10-15% from run to run.

Goals (from the issue): preflight throughput at least 50% of `/health`'s, and its p99 at most
2x `/health`'s p99. Every preflight records a `PreflightDecision` row; the benchmark compares
their number with the preflight answers it received, as a sanity check.

`--log-level` is the server's (default WARNING, so the per-request `http.request` log line is
not written; INFO is the product's default and measures it too). Run:
`python bench/preflight_bench.py [--watches N] [--agents N] [--duration S] [--warmup S]
[--rounds N] [--concurrency C] [--clients N] [--workers W] [--threads T] [--log-level L]
[--postgres URL [--skip-sqlite]] [--smoke]`. With Postgres on the same machine, the table also
gives the CPU its processes used per request. `--smoke` (`SMOKE`): 50 watches, 5 agents, one
gunicorn worker, half a second per scenario.
Figures go to docs/performance.md; nothing here fails on a time.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import math
import multiprocessing
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, func, insert, select, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench import smoke  # noqa: E402
from controller.agents.policy import PRESETS  # noqa: E402
from controller.orgs.auth_service import create_api_key  # noqa: E402
from controller.settings import Settings  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from controller.store.models import (  # noqa: E402
    Agent,
    AgentWatch,
    DriftEvent,
    Incident,
    Org,
    PreflightDecision,
    Watch,
)

SECRET = "benchmark-secret-key-0123456789"
HOST = "127.0.0.1"
USER_AGENT = "driftgate-preflight-bench"
# Share of each drift status among the watches, in percent.
STATUS_MIX = (("ok", 70), ("drifted", 10), ("error", 8), ("never_run", 7), ("disabled", 5))
FAILURE_CLASSES = ("http_error", "timeout", "connect_error", "tls_error", "invalid_contract")
CHANGE_ACTIONS = (
    ["update_client_schema"],
    ["update_tool_schema"],
    ["review_tool_description", "update_tool_schema"],
    ["remove_tool_usage"],
)
WATCH_IDS_PER_REQUEST = 100
BODIES = 512  # distinct pre-built watchIds requests (agents: one per agent)
SUCCESS = (200, 409)
# The load's smoke size, also slow_clients_bench's and validate_bench's: one worker, two
# connections from one client process, half a second of each scenario.
SMOKE_LOAD = {
    "duration": 0.5,
    "warmup": 0.2,
    "concurrency": 2,
    "clients": 1,
    "workers": 1,
    "threads": 2,
    "rounds": 1,
}


# Seeding ------------------------------------------------------------------------------------


def statuses(count: int, rng: random.Random) -> list[str]:
    out: list[str] = []
    for status, percent in STATUS_MIX:
        out += [status] * (count * percent // 100)
    out += ["ok"] * (count - len(out))
    rng.shuffle(out)
    return out


def seed(database: Database, watches: int, agents: int) -> tuple[str, list[str], list[str]]:
    """Seed one org; return the API key's secret, the watch ids and the agent keys."""
    rng = random.Random(1)
    now = datetime.now(UTC)
    checked = now - timedelta(minutes=5)
    org_id = str(uuid.uuid4())
    watch_rows: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    incidents: list[dict[str, Any]] = []
    for i, status in enumerate(statuses(watches, rng)):
        row: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "org_id": org_id,
            "name": f"api-{i}",
            "watch_type": "openapi",
            "url": f"https://api{i}.example.com/openapi.json",
            "drift_status": status,
            "interval_minutes": 15,
            "header_names": [],
            "open_breaking": 0,
            "open_warning": 0,
            "open_info": 0,
            "last_checked_at": None if status == "never_run" else checked,
            "last_check_status": {"never_run": None, "error": "error"}.get(status, "ok"),
            "failure_class": rng.choice(FAILURE_CLASSES) if status == "error" else None,
            "last_error": "benchmark failure" if status == "error" else None,
            "incident_id": None,
            "created_at": now,
            "updated_at": now,
        }
        if status == "drifted":
            incident_id, event_id = str(uuid.uuid4()), str(uuid.uuid4())
            breaking = rng.randint(1, 5)
            row["incident_id"] = incident_id
            row["open_breaking"] = breaking
            events.append(
                {
                    "id": event_id,
                    "org_id": org_id,
                    "watch_id": row["id"],
                    "detected_at": checked,
                    "kind": "drift",
                    "breaking_count": breaking,
                    "warning_count": 0,
                    "info_count": 0,
                    "changes": zlib.compress(b"[]"),
                    "incident_id": incident_id,
                    "agent_actions": rng.choice(CHANGE_ACTIONS),
                }
            )
            acknowledged = rng.random() < 0.4
            incidents.append(
                {
                    "id": incident_id,
                    "org_id": org_id,
                    "watch_id": row["id"],
                    "status": "acknowledged" if acknowledged else "open",
                    "opened_at": checked,
                    "breaking_count": breaking,
                    "drift_event_id": event_id,
                    "acknowledged_at": now if acknowledged else None,
                    "acknowledged_by": "bench" if acknowledged else None,
                }
            )
        watch_rows.append(row)
    presets = sorted(PRESETS)
    agent_rows: list[dict[str, Any]] = []
    bindings: list[dict[str, Any]] = []
    for a in range(agents):
        agent_id = str(uuid.uuid4())
        agent_rows.append(
            {
                "id": agent_id,
                "org_id": org_id,
                "key": f"agent-{a}",
                "slug": f"bench-agent-{a}",
                "environment": "production",
                "policy": presets[a % len(presets)],
                "conditions": [],
                "approvals": [],
                "runtime_state": "running",
                "created_at": now,
                "updated_at": now,
            }
        )
        bound = rng.sample(range(watches), min(watches, rng.randint(5, 20)))
        bindings += [
            {
                "agent_id": agent_id,
                "position": position,
                "ref": watch_rows[w]["name"],
                "watch_id": watch_rows[w]["id"],
            }
            for position, w in enumerate(bound)
        ]
    with database.transaction() as session:
        session.execute(
            insert(Org).values(
                id=org_id, name="bench", plan="pro", products=[], is_trial=False, created_at=now
            )
        )
        org = session.get(Org, org_id)
        assert org is not None
        secret = create_api_key(session, org, "bench", actor="bench").secret
        for table, rows in (
            (Watch, watch_rows),
            (DriftEvent, events),
            (Incident, incidents),
            (Agent, agent_rows),
            (AgentWatch, bindings),
        ):
            for start in range(0, len(rows), 1000):
                session.execute(insert(table), rows[start : start + 1000])
    return secret, [r["id"] for r in watch_rows], [r["key"] for r in agent_rows]


# The server ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def start_server(
    url: str,
    work: Path,
    label: str,
    port: int,
    args: argparse.Namespace,
    root: Path = ROOT,
    settings: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], Path]:
    """`driftgate serve` from the checkout at `root` (this one by default) on `port`, with
    `settings` as extra `DRIFTGATE_*` variables."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("DRIFTGATE_")  # nothing of the caller's setup leaks in
    }
    env.update(
        {
            "DRIFTGATE_DATABASE_URL": url,
            "DRIFTGATE_SECRET_KEY": SECRET,
            "DRIFTGATE_DATA_DIR": str(work / f"data-{label}"),
            "DRIFTGATE_LOG_LEVEL": args.log_level,
            **(settings or {}),
        }
    )
    log_path = work / f"server-{label}.log"
    command = [sys.executable, "-m", "cli", "serve", "--host", HOST, "--port", str(port)]
    command += ["--workers", str(args.workers), "--threads", str(args.threads)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, cwd=root, stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while True:
        try:
            status, _ = request_once(port, "GET", "/health")
            if status == 200:
                break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(process)
            tail = log_path.read_text(errors="replace")[-3000:]
            raise SystemExit(f"driftgate serve did not answer /health:\n{tail}")
        time.sleep(0.1)
    # /health answered from one worker; give the others time to build the app as well.
    while len(server_pids(process.pid)) < args.workers + 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    return process, log_path


def stop_server(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def request_once(
    port: int, method: str, path: str, body: Any = None, key: str | None = None
) -> tuple[int, Any]:
    """One request outside the load (readiness, probes): status and parsed JSON body."""
    headers = {"User-Agent": USER_AGENT}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, data.decode(errors="replace")


def server_pids(master: int) -> list[int]:
    """The gunicorn master and its workers (children in /proc)."""
    pids = [master]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == master:
            pids.append(int(entry.name))
    return pids


def process_cpu(pids: list[int]) -> dict[int, float]:
    """CPU seconds (user + system, all threads) of each process so far."""
    hz = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / hz
    return out


def store_pids() -> list[int]:
    """The PostgreSQL server's processes (every process named `postgres`): on this machine
    they share the cores with the server under test, so their CPU per request is reported."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() == "postgres":
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def machine_cpu() -> tuple[float, float, float]:
    """(busy, total, stolen) CPU seconds of the whole machine so far, from /proc/stat (Linux).
    Stolen time (a virtual machine's CPU given to other guests by the host) counts as busy: it
    says how much of the machine this run did not get."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return (0.0, 0.0, 0.0)
    ticks = [int(f) for f in fields]
    idle = ticks[3] + ticks[4]  # idle + iowait
    stolen = ticks[7] if len(ticks) > 7 else 0
    hz = os.sysconf("SC_CLK_TCK")
    return ((sum(ticks) - idle) / hz, sum(ticks) / hz, stolen / hz)


# The load generator -------------------------------------------------------------------------


def build_request(port: int, method: str, path: str, body: Any = None, key: str = "") -> bytes:
    head = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}", f"User-Agent: {USER_AGENT}"]
    payload = b""
    if key:
        head.append(f"Authorization: Bearer {key}")
    if body is not None:
        payload = json.dumps(body, separators=(",", ":")).encode()
        head += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + payload


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one answer; return its status and whether the server closes the connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length: int | None = None
    close = chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection":
            close = value.strip().lower() == b"close"
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length is not None:
        await reader.readexactly(length)
    else:
        raise ValueError("an answer without Content-Length")
    return status, close


class Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []  # answers completed inside the window
        self.statuses: Counter[str] = Counter()  # inside the window; errors as "error: ..."
        self.successes_total = 0  # 200/409 answers at any time (warm-up and tail included)
        self.sent_total = 0


async def connection_loop(
    port: int,
    requests: list[bytes],
    first: int,
    stride: int,
    window: tuple[float, float],
    tally: Tally,
    reconnect_every: int,
) -> None:
    start, end = window
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    index = first
    served = 0  # answers on the current connection
    while time.monotonic() < end:
        request = requests[index % len(requests)]
        index += stride
        began = time.monotonic()
        try:
            if writer is None or reader is None:
                reader, writer = await asyncio.open_connection(HOST, port)
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                served = 0
                began = time.monotonic()
            tally.sent_total += 1
            writer.write(request)
            status, close = await read_response(reader)
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
            if writer is not None:
                writer.close()
            reader = writer = None
            if start <= time.monotonic() < end:
                tally.statuses[f"error: {type(exc).__name__}"] += 1
            await asyncio.sleep(0.01)
            continue
        done = time.monotonic()
        if status in SUCCESS:
            tally.successes_total += 1
        if start <= done < end:
            tally.latencies.append(done - began)
            tally.statuses[str(status)] += 1
        served += 1
        if close or (reconnect_every and served >= reconnect_every):
            writer.close()
            reader = writer = None
    if writer is not None:
        writer.close()


async def run_connections(
    port: int,
    requests: list[bytes],
    connections: int,
    offset: int,
    stride: int,
    times: tuple[float, float, float],
    reconnect_every: int,
) -> tuple[Tally, float]:
    begin, start, end = times
    await asyncio.sleep(max(0.0, begin - time.monotonic()))
    tally = Tally()
    cpu: list[float] = []

    async def sample(at: float) -> None:
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu.append(usage.ru_utime + usage.ru_stime)

    await asyncio.gather(
        sample(start),
        sample(end),
        *(
            connection_loop(
                port, requests, offset + c, stride, (start, end), tally, reconnect_every
            )
            for c in range(connections)
        ),
    )
    return tally, cpu[1] - cpu[0] if len(cpu) == 2 else 0.0


def client_process(
    port: int,
    requests: list[bytes],
    connections: int,
    offset: int,
    stride: int,
    times: tuple[float, float, float],
    reconnect_every: int,
) -> dict[str, Any]:
    """One load-generator process: `connections` keep-alive connections in one event loop."""
    tally, cpu = asyncio.run(
        run_connections(port, requests, connections, offset, stride, times, reconnect_every)
    )
    return {
        "latencies": tally.latencies,
        "statuses": dict(tally.statuses),
        "successes_total": tally.successes_total,
        "sent_total": tally.sent_total,
        "cpu": cpu,
    }


def percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def run_scenario(
    name: str, port: int, master: int, requests: list[bytes], args: argparse.Namespace
) -> dict[str, Any]:
    clients = max(1, min(args.clients, args.concurrency))
    shares = [
        args.concurrency // clients + (i < args.concurrency % clients) for i in range(clients)
    ]
    begin = time.monotonic() + 0.5
    start = begin + args.warmup
    end = start + args.duration
    jobs = []
    offset = 0
    for share in shares:
        jobs.append(
            (
                port,
                requests,
                share,
                offset,
                args.concurrency,
                (begin, start, end),
                args.reconnect_every,
            )
        )
        offset += share
    with multiprocessing.get_context("fork").Pool(clients) as pool:
        pending = pool.starmap_async(client_process, jobs)
        time.sleep(max(0.0, start - time.monotonic()))
        pids, stores = server_pids(master), store_pids()
        server_before, machine_before = process_cpu(pids), machine_cpu()
        store_before = process_cpu(stores)
        time.sleep(max(0.0, end - time.monotonic()))
        server_after, machine_after = process_cpu(pids), machine_cpu()
        store_after = process_cpu(stores)
        results = pending.get(timeout=args.warmup + args.duration + 120)
    latencies = sorted(x for r in results for x in r["latencies"])
    statuses: Counter[str] = Counter()
    for r in results:
        statuses.update(r["statuses"])
    answered = len(latencies)
    errors = sum(n for status, n in statuses.items() if int_or_0(status) not in SUCCESS)
    per_process = {
        pid: server_after[pid] - server_before[pid]
        for pid in server_after
        if pid in server_before and pid != master
    }
    server_cpu = sum(server_after.get(p, 0.0) - server_before.get(p, 0.0) for p in server_before)
    generator_cpu = sum(r["cpu"] for r in results)
    store_cpu = sum(store_after[p] - store_before[p] for p in store_after if p in store_before)
    elapsed = max(0.001, machine_after[1] - machine_before[1])
    busy = (machine_after[0] - machine_before[0]) / elapsed
    stolen = (machine_after[2] - machine_before[2]) / elapsed
    worker_total = sum(per_process.values()) or 1.0
    return {
        "scenario": name,
        "per_second": answered / args.duration,
        "p50": percentile(latencies, 0.50) * 1000,
        "p99": percentile(latencies, 0.99) * 1000,
        "max": (latencies[-1] * 1000) if latencies else float("nan"),
        "statuses": statuses,
        "errors": errors,
        "server_ms": 1000 * server_cpu / max(1, answered),
        "generator_ms": 1000 * generator_cpu / max(1, answered),
        "store_ms": 1000 * store_cpu / max(1, answered),
        "busy": busy,
        "stolen": stolen,
        "worker_split": [per_process[p] / worker_total for p in sorted(per_process)],
        "successes_total": sum(r["successes_total"] for r in results),
        "sent_total": sum(r["sent_total"] for r in results),
    }


def combine(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One scenario's rounds as one row: the median of each figure (the maximum latency's
    maximum), statuses summed. With one round, that round."""
    if len(rounds) == 1:
        return rounds[0]
    row = dict(rounds[0])
    for key in (
        "per_second",
        "p50",
        "p99",
        "server_ms",
        "generator_ms",
        "store_ms",
        "busy",
        "stolen",
    ):
        row[key] = median([r[key] for r in rounds])
    row["max"] = max(r["max"] for r in rounds)
    row["errors"] = sum(r["errors"] for r in rounds)
    row["statuses"] = sum((r["statuses"] for r in rounds), Counter())
    row["per_round"] = [r["per_second"] for r in rounds]
    return row


def int_or_0(status: str) -> int:
    return int(status) if status.isdigit() else 0


# A store ------------------------------------------------------------------------------------


def bench_store(label: str, url: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    database = Database(url)
    migrate.upgrade(database)
    started = time.perf_counter()
    key, watch_ids, agent_keys = seed(database, args.watches, args.agents)
    seeded = time.perf_counter() - started
    database.dispose()
    print(f"{label}: seeded in {seeded:.1f} s", flush=True)

    port = free_port()
    rng = random.Random(2)
    per_request = min(WATCH_IDS_PER_REQUEST, len(watch_ids))
    id_bodies = [{"watchIds": rng.sample(watch_ids, per_request)} for _ in range(BODIES)]
    agent_bodies = [{"agentId": agent} for agent in agent_keys]
    rng.shuffle(agent_bodies)
    scenarios: list[tuple[str, str, str, list[Any]]] = [
        ("health", "GET", "/health", [None]),
        ("preflight watchIds", "POST", "/api/preflight", id_bodies),
        ("preflight agentId", "POST", "/api/preflight", agent_bodies),
    ]
    process, log_path = start_server(url, work, label, port, args, root=args.root)
    rows = []
    probes = 0
    try:
        for name, method, path, bodies in scenarios * args.rounds:
            # One request outside the load, its answer parsed: the scenario measures what it
            # means to measure (not 401s or 404s).
            status, answer = request_once(port, method, path, bodies[0], key if bodies[0] else None)
            expected = "status" if path == "/health" else "decisionId"
            if status not in SUCCESS or not isinstance(answer, dict) or expected not in answer:
                raise SystemExit(f"{label} {name}: probe answered {status}: {answer!r:.500}")
            probes += path != "/health"
            requests = [
                build_request(port, method, path, body, key if body else "") for body in bodies
            ]
            row = run_scenario(name, port, process.pid, requests, args)
            row["store"] = label
            rows.append(row)
    finally:
        stop_server(process)
    database = Database(url)
    with database.session() as session:
        recorded = int(session.scalar(select(func.count()).select_from(PreflightDecision)) or 0)
    database.dispose()
    preflight_rows = [r for r in rows if r["scenario"] != "health"]
    return {
        "label": label,
        "rows": [combine([r for r in rows if r["scenario"] == name]) for name, *_ in scenarios],
        "recorded": recorded,
        "answered": probes + sum(r["successes_total"] for r in preflight_rows),
        "sent": probes + sum(r["sent_total"] for r in preflight_rows),
        "log": log_path,
    }


@contextmanager
def scratch_postgres(admin_url: str, prefix: str) -> Iterator[str]:
    """A fresh Postgres database next to `admin_url` for one benchmark run; dropped after."""
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def postgres_store(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    with scratch_postgres(args.postgres, "driftgate_pbench") as url:
        return bench_store("postgres", url, work, args)


# Report -------------------------------------------------------------------------------------


def report(args: argparse.Namespace, stores: list[dict[str, Any]]) -> None:
    print(
        f"\n{args.watches} watches, {args.agents} agents; gunicorn {args.workers} workers x "
        f"{args.threads} threads, log level {args.log_level}; load: {args.concurrency} "
        f"connections in {args.clients} client processes, {args.warmup:g} s warm-up + "
        f"{args.duration:g} s per scenario; {args.rounds} round(s), medians shown; "
        f"{os.cpu_count()} CPUs"
    )
    print(
        "store | scenario | req/s | p50 ms | p99 ms | max ms | statuses | errors "
        "| server CPU ms/req | generator CPU ms/req | Postgres CPU ms/req | machine busy "
        "| of it stolen | worker CPU split"
    )
    for store in stores:
        for r in store["rows"]:
            statuses = ", ".join(f"{s}: {n}" for s, n in sorted(r["statuses"].items()))
            split = "/".join(f"{share:.0%}" for share in r["worker_split"])
            print(
                f"{r['store']} | {r['scenario']} | {r['per_second']:.0f} | {r['p50']:.1f} | "
                f"{r['p99']:.1f} | {r['max']:.1f} | {statuses} | {r['errors']} | "
                f"{r['server_ms']:.2f} | {r['generator_ms']:.2f} | {r['store_ms']:.2f} | "
                f"{r['busy']:.0%} | {r['stolen']:.0%} | {split}"
            )
    if args.rounds > 1:
        print("\nreq/s per round (worker CPU split above is the first round's):")
        for store in stores:
            for r in store["rows"]:
                rounds = ", ".join(f"{x:.0f}" for x in r["per_round"])
                print(f"{r['store']} | {r['scenario']} | {rounds}")
    print()
    for store in stores:
        print(
            f"{store['label']}: preflight decisions recorded {store['recorded']} for "
            f"{store['answered']} preflight answers 200/409 ({store['sent']} sent)"
            + ("" if store["recorded"] == store["answered"] else "  <-- MISMATCH")
        )
    for store in stores:
        health = next(r for r in store["rows"] if r["scenario"] == "health")
        parts = []
        for r in store["rows"]:
            if r is health:
                continue
            throughput = r["per_second"] / max(0.001, health["per_second"])
            p99 = r["p99"] / max(0.001, health["p99"])
            parts.append(
                f"{r['scenario'].split()[1]} throughput {throughput:.2f}x "
                f"({'met' if throughput >= 0.5 else 'missed'}), "
                f"p99 {p99:.2f}x ({'met' if p99 <= 2.0 else 'missed'})"
            )
        errors = sum(r["errors"] for r in store["rows"])
        print(
            f"{store['label']}: preflight vs /health (goals: throughput >= 0.50x, "
            f"p99 <= 2.00x): " + "; ".join(parts) + f"; errors {errors}"
        )
        by_cpu = ", ".join(
            f"{r['scenario'].split()[1]} {cpu_per_request(health) / cpu_per_request(r):.2f}x"
            for r in store["rows"]
            if r is not health
        )
        print(
            f"{store['label']}: the same ratio by CPU per request (server + generator + "
            f"Postgres; what the throughput ratio would be on an equally busy machine): {by_cpu}"
        )


def cpu_per_request(row: dict[str, Any]) -> float:
    return max(0.001, row["server_ms"] + row["generator_ms"] + row["store_ms"])


def main() -> None:
    defaults = Settings.model_fields
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--watches", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=500)
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the three scenarios this many times in turn; the table shows medians",
    )
    parser.add_argument("--concurrency", type=int, default=16, help="connections in all")
    parser.add_argument("--clients", type=int, default=2, help="load generator processes")
    parser.add_argument(
        "--reconnect-every",
        type=int,
        default=200,
        help="answers per keep-alive connection before it is reopened (0: never)",
    )
    parser.add_argument("--workers", type=int, default=defaults["workers"].default)
    parser.add_argument("--threads", type=int, default=defaults["threads"].default)
    parser.add_argument(
        "--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR")
    )
    parser.add_argument("--postgres", help="also benchmark Postgres (a database is created)")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="serve from another checkout (an A/B of builds)"
    )
    parser.add_argument(
        "--skip-sqlite", action="store_true", help="with --postgres: benchmark Postgres only"
    )
    args = smoke.parse(parser, {"watches": 50, "agents": 5, **SMOKE_LOAD})
    if args.skip_sqlite and not args.postgres:
        parser.error("--skip-sqlite needs --postgres")
    work = Path(tempfile.mkdtemp(prefix="driftgate-preflight-bench-"))
    try:
        stores = []
        if not args.skip_sqlite:
            stores.append(bench_store("sqlite", f"sqlite:///{work / 'bench.db'}", work, args))
        if args.postgres:
            stores.append(postgres_store(work, args))
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the SQLite file and the server logs
    report(args, stores)


if __name__ == "__main__":
    main()
