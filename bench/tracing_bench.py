"""Benchmark of tracing's cost per check (issue 43, point 2): the check engine with tracing off
(no endpoint: the no-op span) and on (the SDK, its batch processor and the OTLP/HTTP exporter
sending to a loopback sink, a process of its own, that answers 200), and on with 1 trace in
10 sampled (what `OTEL_TRACES_SAMPLER=parentbased_traceidratio` with `_ARG=0.1` sets up), in
the same process, rounds alternating.

Each round runs `--checks` checks of one watch on SQLite through `run_check` with a fetcher
that answers without the network: `unchanged` (the same bytes: fetch and record, 3 spans) and
`changing` (two documents in turn: parse, diff, a drift event; 5 spans). Figures are
microseconds per check, the process's CPU (the exporter's thread included: encoding and
sending are the cost of tracing too) and wall, median over the rounds; then a bare span's cost
off and on. Run: `python bench/tracing_bench.py [--checks N] [--rounds R]` (`--smoke`: 20
checks, 1 round). Prints figures only; nothing fails on a time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: E402
    OTLPSpanExporter,
)
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased  # noqa: E402

from bench import smoke  # noqa: E402
from controller import tracing  # noqa: E402
from controller.checks.engine import CheckInput, Fetched, run_check  # noqa: E402
from controller.crypto import load_secret_box  # noqa: E402
from controller.model.principal import Principal  # noqa: E402
from controller.model.watch import WatchCreate  # noqa: E402
from controller.orgs import service as orgs  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from controller.watches import service as watches  # noqa: E402
from tests.conftest import make_settings  # noqa: E402
from tests.specs import as_json, charges_spec  # noqa: E402

# An OTLP/HTTP endpoint in a process of its own (its CPU is not the checks'): reads each export
# and answers 200 with an empty body.
SINK = """
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def fetcher_of(documents: list[bytes]) -> Callable[[CheckInput], Fetched]:
    turn = [0]

    def fetch(check: CheckInput) -> Fetched:
        turn[0] += 1
        return Fetched(documents[turn[0] % len(documents)])

    return fetch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = smoke.parse(parser, {"checks": 20, "rounds": 1})

    tmp = Path(tempfile.mkdtemp())
    database = Database(f"sqlite:///{tmp / 'bench.db'}")
    migrate.upgrade(database)
    settings = make_settings(tmp, database_url=database.url)
    box = load_secret_box(settings, create=True)
    with database.transaction() as session:
        org = orgs.create_org(session, "bench", "pro", actor="bench")
        principal = Principal(org.id, org.name, "pro", frozenset(), "api_key", None)
        ids = {
            name: watches.create_watch(
                session,
                principal,
                WatchCreate.model_validate(
                    {"name": name, "url": f"https://{name}.example/o.json", "watchType": "openapi"}
                ),
                box,
            ).id
            for name in ("unchanged", "changing")
        }
    documents = {
        "unchanged": [as_json(charges_spec()).encode()],
        "changing": [
            as_json(charges_spec()).encode(),
            as_json(charges_spec(refunds=False)).encode(),
        ],
    }

    sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    assert sink.stdout is not None
    port = sink.stdout.readline().strip()
    assert port.isdigit(), "the sink did not start"
    endpoint = f"http://127.0.0.1:{port}/v1/traces"
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    # `OTEL_TRACES_SAMPLER=parentbased_traceidratio`, `OTEL_TRACES_SAMPLER_ARG=0.1`.
    sampled = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.1)))
    sampled.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))

    now = [datetime(2026, 12, 1, tzinfo=UTC)]

    def checks(case: str, count: int) -> tuple[float, float]:
        fetch = fetcher_of(documents[case])
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(count):
            now[0] += timedelta(minutes=1)
            run_check(database, ids[case], box=box, fetcher=fetch, now=now[0], controller="b")
        if tracing.enabled():
            provider.force_flush()  # what the exporter's thread owes is counted here
            sampled.force_flush()
        return (
            (time.process_time() - cpu) / count * 1e6,
            (time.perf_counter() - wall) / count * 1e6,
        )

    for case in documents:  # warm up: baselines, caches, the first export
        for setting in (None, provider, sampled):
            tracing.install(setting)
            checks(case, max(5, args.checks // 20))
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for index in range(args.rounds):
        order = [("off", None), ("on", provider), ("1/10", sampled)]
        for label, setting in order if index % 2 == 0 else order[::-1]:
            tracing.install(setting)
            for case in documents:
                results.setdefault((case, label), []).append(checks(case, args.checks))
    tracing.install(None)

    print(f"checks per round: {args.checks}, rounds: {args.rounds} (median per check)")
    print("| case | tracing | CPU µs | CPU added µs | wall µs |")
    print("|---|---|---:|---:|---:|")
    for case in documents:
        off_cpu = statistics.median(x[0] for x in results[(case, "off")])
        for label in ("off", "on", "1/10"):
            cpu = statistics.median(x[0] for x in results[(case, label)])
            wall = statistics.median(x[1] for x in results[(case, label)])
            added = "" if label == "off" else f"{cpu - off_cpu:+.0f}"
            print(f"| {case} | {label} | {cpu:.0f} | {added} | {wall:.0f} |")

    bare = max(1000, args.checks * 10)
    for label, setting in (("off", None), ("on", provider)):
        tracing.install(setting)
        cpu = time.process_time()
        for index in range(bare):
            with tracing.span("bare", {tracing.WATCH_ID: "w"}):
                pass
            if index % 256 == 255:
                provider.force_flush()  # within the batch queue's bound: no span dropped
        provider.force_flush()
        used = (time.process_time() - cpu) / bare * 1e6
        print(f"a bare span, tracing {label}: {used:.2f} µs of CPU (export included)")
    tracing.install(None)
    provider.shutdown()
    sampled.shutdown()
    sink.terminate()
    sink.wait()


if __name__ == "__main__":
    main()
