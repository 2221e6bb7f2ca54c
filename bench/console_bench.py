"""Benchmark of the console's pages at the portfolio benchmark's scale: 10,000 watches,
200,000 drift events, 20,000 incidents in one org (seeded like `tests/portfolio/seed.py`), on
SQLite and on Postgres. A signed-in admin asks each page through the app (Flask's client:
server time, from the WSGI call to the last byte of the page; no network) and the p50 / p95
per page is printed. Goal (issue 26): every page under 300 ms server time. Figures go to
docs/performance.md.

Run: `python bench/console_bench.py [--watches N] [--events N] [--incidents N] [--rounds N]
[--postgres URL]` (`--smoke`: portfolio_bench's smoke size).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.portfolio_bench import arguments, p50_p95, seeded  # noqa: E402
from bench.preflight_bench import scratch_postgres  # noqa: E402
from controller.accounts import service as accounts  # noqa: E402
from controller.settings import load_settings  # noqa: E402
from controller.store.models import DriftEvent, Org  # noqa: E402

PASSWORD = "benchmark password 123"
GOAL_MS = 300.0


def run(url: str, work: Path, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    from web.app import create_app

    database, history, now = seeded(url, args)
    with database.transaction() as session:
        org = session.get(Org, history.org_id)
        assert org is not None
        _user, token = accounts.create_user(
            session, org, "bench@example.com", "admin", actor="bench", now=now
        )
        accounts.set_password(session, token, PASSWORD, now)
        event = session.query(DriftEvent).filter(DriftEvent.org_id == org.id).first()
        assert event is not None
        watch_id, event_id, org_name = event.watch_id, event.id, org.name
    settings = load_settings(
        env={"DRIFTGATE_DATA_DIR": str(work / "data"), "DRIFTGATE_SECRET_KEY": "x" * 32},
        database_url=url,
        log_level="WARNING",  # one access-log line per request would be timed too
    )
    client = create_app(settings, database=database).test_client()
    form = client.get("/console/sign-in").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert csrf is not None
    signed = client.post(
        "/console/sign-in",
        data={"email": "bench@example.com", "password": PASSWORD, "csrf_token": csrf.group(1)},
    )
    assert signed.status_code == 302, signed.status_code
    pages = {
        "overview": "/console/",
        "overview dashboard": "/console/?dashboard=system.production-agents",
        "compass part": "/console/compass",
        "watches": "/console/watches",
        "watches drifted": "/console/watches?status=drifted",
        "watches degraded": "/console/watches?health=degraded",
        "watches stale": "/console/watches?health=stale",
        "watches incident": "/console/watches?incident=open",
        "search": f"/console/search?q={org_name}-w00",
        "watch": f"/console/watches/{watch_id}",
        "drift event": f"/console/watches/{watch_id}/events/{event_id}",
        "agents": "/console/agents",
        "sources": "/console/sources",
        "templates": "/console/templates",
        "settings": "/console/settings",
        "api keys": "/console/settings/keys",
        "ask": "/console/ask?q=which+vendors+broke+us+most+this+quarter%3F",
        "ask drifted": "/console/ask?q=which+watches+drifted+this+week",
        # Issue 35: the activity timeline, the live strips (polled every 5 s) and the contract.
        "activity": "/console/activity",
        "activity incidents": "/console/activity?kind=incident&kind=baseline",
        "activity part org": "/console/activity/part",
        "activity part watch": f"/console/activity/part?object=watch:{watch_id}",
        "live overview": "/console/live/overview",
        "live watch": f"/console/live/watches/{watch_id}",
        "contract": f"/console/watches/{watch_id}/contract",
    }
    figures = {}
    for label, path in pages.items():
        samples = []
        for _ in range(args.rounds):
            begin = time.perf_counter()
            answer = client.get(path)
            samples.append((time.perf_counter() - begin) * 1000)
            assert answer.status_code == 200, (path, answer.status_code)
        p50, p95 = figures[label] = p50_p95(samples)
        print(
            f"  {label:20} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   goal ratio {p95 / GOAL_MS:4.2f}",
            flush=True,
        )
    database.dispose()
    return figures


def main() -> None:
    args = arguments()
    print(
        f"{args.watches} watches, {args.events} drift events, {args.incidents} incidents; "
        f"{args.rounds} requests per page (goal: p95 < {GOAL_MS:.0f} ms server time)"
    )
    with tempfile.TemporaryDirectory() as work:
        print("SQLite:")
        run(f"sqlite:///{work}/bench.db", Path(work), args)
    if args.postgres:
        print("Postgres:")
        with (
            tempfile.TemporaryDirectory() as work,
            scratch_postgres(args.postgres, "driftgate_console") as url,
        ):
            run(url, Path(work), args)


if __name__ == "__main__":
    main()
