"""Benchmark of the server front under slow clients: `/health` and preflight, with and without
200 half-open connections held against the same `driftgate serve`.

It seeds a SQLite store (one org with an API key, `--watches` watches, `--agents` agents, as
bench/preflight_bench.py does), starts `driftgate serve` (2 workers x 8 threads by default)
and runs each scenario twice: first alone, then while an attacker process holds
`--half-open` connections open against the server:

- half of them send a request line and part of the headers, then one more header byte every
  `--trickle` seconds and never the blank line that ends the headers (slowloris);
- the other half send complete headers announcing `Content-Length: 100000` and a few bytes of
  the body, then trickle the body the same way (a short body);
- a connection the server closes (its 408 after the header or body timeout) is opened again
  at once, so the count held stays at `--half-open` for the whole measurement.

Scenarios: `GET /health`, and `POST /api/preflight` by `agentId`. Goals (issue 16): with 200
half-open connections held, `/health` p99 under 100 ms, and preflight keeping at least 80% of
its throughput. `--root DIR` serves from another checkout (for example the commit before the
server front, in a `git worktree`) to measure the defect itself. Run:
`python bench/slow_clients_bench.py [--half-open N] [--duration S] [--warmup S] [--rounds N]
[--concurrency C] [--watches N] [--agents N] [--root DIR]` (`--smoke`: 4 half-open connections,
preflight_bench's smoke load). Figures go to docs/performance.md; nothing here fails on a time.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import shutil
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from bench.preflight_bench import (  # noqa: E402
    HOST,
    SMOKE_LOAD,
    build_request,
    free_port,
    request_once,
    run_scenario,
    seed,
    start_server,
    stop_server,
)
from controller.settings import Settings  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402


async def hold_one(port: int, index: int, trickle: float, stop: float, held: list[int]) -> None:
    """Keep one half-open connection against the server until `stop` (loop time)."""
    loop = asyncio.get_running_loop()
    slow_headers = index % 2 == 0
    while loop.time() < stop:
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        if slow_headers:
            writer.write(b"GET /health HTTP/1.1\r\nHost: bench\r\nX-Slow: ")
        else:
            writer.write(
                b"POST /api/preflight HTTP/1.1\r\nHost: bench\r\n"
                b'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a'
            )
        held[0] += 1
        try:
            while loop.time() < stop:
                try:
                    data = await asyncio.wait_for(reader.read(65536), timeout=trickle)
                except TimeoutError:
                    writer.write(b"a")
                    await writer.drain()
                    continue
                if not data:
                    break  # closed by the server (its timeout): open another one
        except OSError:
            pass
        finally:
            held[0] -= 1
            writer.close()


async def attack(port: int, count: int, trickle: float, seconds: float, ready: Any) -> None:
    loop = asyncio.get_running_loop()
    stop = loop.time() + seconds
    held = [0]
    tasks = [asyncio.create_task(hold_one(port, i, trickle, stop, held)) for i in range(count)]
    while held[0] < count and loop.time() < stop:
        await asyncio.sleep(0.05)
    ready.set()
    await asyncio.gather(*tasks)


def attacker_process(port: int, count: int, trickle: float, seconds: float, ready: Any) -> None:
    asyncio.run(attack(port, count, trickle, seconds, ready))


def measure(
    name: str,
    port: int,
    master: int,
    requests: list[bytes],
    args: argparse.Namespace,
    half_open: int,
) -> dict[str, Any]:
    attacker = None
    if half_open:
        ready = multiprocessing.get_context("fork").Event()
        seconds = args.warmup + args.duration + 5
        attacker = multiprocessing.get_context("fork").Process(
            target=attacker_process, args=(port, half_open, args.trickle, seconds, ready)
        )
        attacker.start()
        if not ready.wait(timeout=30):
            raise SystemExit("the attacker could not open its connections")
    try:
        row = run_scenario(name, port, master, requests, args)
    finally:
        if attacker is not None:
            attacker.terminate()
            attacker.join()
    row["half_open"] = half_open
    return row


def main() -> None:
    defaults = Settings.model_fields
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--half-open", type=int, default=200, help="connections held")
    parser.add_argument("--trickle", type=float, default=2.0, help="seconds between bytes")
    parser.add_argument("--watches", type=int, default=2_000)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--duration", type=float, default=8.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=16, help="load connections in all")
    parser.add_argument("--clients", type=int, default=2, help="load generator processes")
    parser.add_argument("--reconnect-every", type=int, default=200)
    parser.add_argument("--workers", type=int, default=defaults["workers"].default)
    parser.add_argument("--threads", type=int, default=defaults["threads"].default)
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to serve from")
    sizes = {"half_open": 4, "trickle": 0.5, "watches": 50, "agents": 5, **SMOKE_LOAD}
    args = smoke.parse(parser, sizes)

    work = Path(tempfile.mkdtemp(prefix="driftgate-slowbench-"))
    try:
        url = f"sqlite:///{work / 'bench.db'}"
        database = Database(url)
        migrate.upgrade(database)
        key, _watch_ids, agent_keys = seed(database, args.watches, args.agents)
        database.dispose()
        port = free_port()
        bodies = [{"agentId": agent} for agent in agent_keys]
        random.Random(2).shuffle(bodies)
        scenarios = [
            ("health", [build_request(port, "GET", "/health")]),
            (
                "preflight agentId",
                [build_request(port, "POST", "/api/preflight", b, key) for b in bodies],
            ),
        ]
        process, _log = start_server(url, work, "sqlite", port, args, root=args.root)
        rows: list[dict[str, Any]] = []
        try:
            status, answer = request_once(port, "POST", "/api/preflight", bodies[0], key)
            if status not in (200, 409):
                raise SystemExit(f"preflight probe answered {status}: {answer!r:.300}")
            for _ in range(args.rounds):
                for name, requests in scenarios:
                    for half_open in (0, args.half_open):
                        rows.append(measure(name, port, process.pid, requests, args, half_open))
                        print(_line(rows[-1]), flush=True)
        finally:
            stop_server(process)
        report(rows, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['scenario']:<18} half-open {row['half_open']:>4}: "
        f"{row['per_second']:8.0f} req/s  p50 {row['p50']:7.1f} ms  p99 {row['p99']:7.1f} ms  "
        f"max {row['max']:8.1f} ms  errors {row['errors']}"
    )


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    def pick(name: str, half_open: int, figure: str) -> float:
        return median(
            r[figure] for r in rows if (r["scenario"], r["half_open"]) == (name, half_open)
        )

    def kept_by_round(name: str) -> float:
        # Each held window against the window just before it: the VM's speed drifts between
        # rounds far more than within a pair.
        alone = [r["per_second"] for r in rows if (r["scenario"], r["half_open"]) == (name, 0)]
        held = [
            r["per_second"]
            for r in rows
            if (r["scenario"], r["half_open"]) == (name, args.half_open)
        ]
        return median(h / a if a else 0.0 for a, h in zip(alone, held, strict=True))

    print()
    print(f"medians of {args.rounds} round(s); {args.half_open} half-open connections held")
    print("| scenario | alone req/s | p99 ms | held req/s | p99 ms | throughput kept (pairs) |")
    print("|---|---|---|---|---|---|")
    for name in ("health", "preflight agentId"):
        alone, held = pick(name, 0, "per_second"), pick(name, args.half_open, "per_second")
        print(
            f"| {name} | {alone:.0f} | {pick(name, 0, 'p99'):.1f} | {held:.0f} | "
            f"{pick(name, args.half_open, 'p99'):.1f} | {kept_by_round(name):.2f}x |"
        )
    kept = kept_by_round("preflight agentId")
    print(
        f"goals: /health p99 under 100 ms with them held "
        f"({pick('health', args.half_open, 'p99'):.1f} ms); "
        f"preflight keeps at least 0.80x ({kept:.2f}x)"
    )


if __name__ == "__main__":
    main()
