"""Benchmark of the portfolio views at scale: 10,000 watches, 200,000 drift events, 20,000
incidents (and check jobs) in one org, seeded like `tests/portfolio/seed.py`, on SQLite and
on Postgres. It times the overview and the compass (the service call: every SQL aggregate
and the shaping; the HTTP layer adds what any route adds) and prints p50 / p95 per view.
An Ask answer is timed the same way. Goal (issue 25): each under 200 ms p95.

`GET /api/portfolio/status` is asked through the app (Flask's client, an API key): its first
page and a walk through every page (`nextCursor`, `limit` 200), each with its size, p50 / p95
and the peak of memory allocated while it is answered (tracemalloc, one separate request)
(issue 33, point 9). Figures go to docs/performance.md.

Run: `python bench/portfolio_bench.py [--watches N] [--events N] [--incidents N]
[--rounds N] [--postgres URL] [--only views|status]` (`--smoke`: 250 watches, so two pages of
status, and one round).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from statistics import median, quantiles
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from bench.preflight_bench import scratch_postgres  # noqa: E402
from controller.orgs.auth_service import create_api_key  # noqa: E402
from controller.portfolio import service  # noqa: E402
from controller.settings import load_settings  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from controller.store.models import Org  # noqa: E402
from tests.portfolio.seed import seed  # noqa: E402

QUERIES = {
    "overview": ("overview", {}),
    "overview vendor": ("overview", {"vendor": "api.stripe.example.com"}),
    "overview environment": ("overview", {"environment": "production"}),
    "compass": ("compass", {}),
    "compass mcp": ("compass", {"watchType": "mcp"}),
    "ask hotspots": ("ask", {"question": "which vendors broke us most this quarter?"}),
    "ask mttr vendor": ("ask", {"question": "MTTR for stripe last 90 days"}),
    "ask mcp health": ("ask", {"question": "is any MCP server unhealthy?"}),
}


def seeded(url: str, args: argparse.Namespace) -> tuple[Database, Any, datetime]:
    """The store at `url`, migrated and seeded at the sizes of `args` (then analyzed on
    Postgres): the database, the seeded history and the time it was seeded at."""
    database = Database(url)
    migrate.upgrade(database)
    now = datetime.now(UTC)
    started = time.perf_counter()
    with database.transaction() as session:
        history = seed(
            session,
            "bench",
            now,
            watches=args.watches,
            events=args.events,
            incidents=args.incidents,
            jobs=args.jobs,
        )
    print(f"  seeded in {time.perf_counter() - started:.1f} s", flush=True)
    if database.url.startswith("postgresql"):
        with database.engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
            conn.commit()
    return database, history, now


def p50_p95(samples: list[float]) -> tuple[float, float]:
    """The median and the 95th percentile of timings (ms)."""
    p95 = quantiles(samples, n=20)[-1] if len(samples) > 1 else samples[0]
    return median(samples), p95


def run(url: str, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    database, history, now = seeded(url, args)
    figures: dict[str, tuple[float, float]] = {}
    if args.only in (None, "status"):
        status_route(database, history.org_id, args)
    if args.only == "status":
        database.dispose()
        return figures
    for label, (view, filters) in QUERIES.items():
        samples = []
        for _ in range(args.rounds):
            with database.session() as session:
                begin = time.perf_counter()
                if view == "overview":
                    query: Any = service.OverviewQuery.model_validate(filters)
                    service.overview(session, history.org_id, query, now)
                elif view == "ask":
                    question = service.AskIn.model_validate(filters)
                    service.ask(session, history.org_id, "pro", False, question, now)
                else:
                    query = service.CompassQuery.model_validate(filters)
                    service.compass(session, history.org_id, query, now)
                samples.append((time.perf_counter() - begin) * 1000)
        p50, p95 = figures[label] = p50_p95(samples)
        print(f"  {label:22} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms", flush=True)
    database.dispose()
    return figures


def status_route(database: Database, org_id: str, args: argparse.Namespace) -> None:
    """`GET /api/portfolio/status` through the app: the first page, then every page."""
    from web.app import create_app

    with database.transaction() as session:
        org = session.get(Org, org_id)
        assert org is not None
        key = create_api_key(session, org, "bench", actor="bench").secret
    with tempfile.TemporaryDirectory() as work:
        settings = load_settings(
            env={"DRIFTGATE_DATA_DIR": work, "DRIFTGATE_SECRET_KEY": "x" * 32},
            database_url=database.url,
            log_level="WARNING",  # one access-log line per request would be timed too
        )
        client = create_app(settings, database=database).test_client()
        headers = {"Authorization": f"Bearer {key}"}

        def first_page() -> tuple[int, int, int]:
            answer = client.get("/api/portfolio/status", headers=headers)
            assert answer.status_code == 200, answer.status_code
            body = answer.get_json()
            return len(answer.get_data()), len(body["watches"]), 1

        def every_page() -> tuple[int, int, int]:
            size = rows = pages = 0
            cursor = None
            while True:
                query = "?limit=200" + (f"&cursor={cursor}" if cursor else "")
                answer = client.get(f"/api/portfolio/status{query}", headers=headers)
                assert answer.status_code == 200, answer.status_code
                body = answer.get_json()
                size += len(answer.get_data())
                rows += len(body["watches"])
                pages += 1
                cursor = body.get("nextCursor")
                if not cursor:
                    return size, rows, pages

        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        first_page()  # warms the app up; the peak RSS it reaches is reported
        rss_grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
        print(f"  status: max RSS grew {rss_grew:.1f} MB on the first request", flush=True)
        for label, ask, rounds in (
            ("status first page", first_page, args.rounds),
            ("status every page", every_page, max(1, args.rounds // 4)),
        ):
            samples = []
            for _ in range(rounds):
                begin = time.perf_counter()
                size, rows, pages = ask()
                samples.append((time.perf_counter() - begin) * 1000)
            tracemalloc.start()
            ask()
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            p50, p95 = p50_p95(samples)
            print(
                f"  {label:22} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   {size / 1e6:6.3f} MB "
                f"in {pages} page(s), {rows} watches   peak allocated {peak:6.1f} MB",
                flush=True,
            )


def arguments() -> argparse.Namespace:
    """The sizes of the seeded portfolio, the rounds, and an optional Postgres admin URL (also
    console_bench's)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--watches", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--incidents", type=int, default=20_000)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--postgres", default=None, help="an admin URL; a scratch DB is made")
    parser.add_argument(
        "--only", choices=("views", "status"), default=None, help="time only these (both)"
    )
    sizes = {"watches": 250, "events": 300, "incidents": 30, "jobs": 50, "rounds": 1}
    return smoke.parse(parser, sizes)


def main() -> None:
    args = arguments()
    print(
        f"{args.watches} watches, {args.events} drift events, {args.incidents} incidents, "
        f"{args.jobs} check jobs; {args.rounds} rounds per view (goal: p95 < 200 ms)"
    )
    with tempfile.TemporaryDirectory() as work:
        print("SQLite:")
        run(f"sqlite:///{work}/bench.db", args)
    if args.postgres:
        print("Postgres:")
        with scratch_postgres(args.postgres, "driftgate_portfolio") as url:
            run(url, args)


if __name__ == "__main__":
    main()
