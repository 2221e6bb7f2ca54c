"""Benchmark of diff runs (`POST /api/openapi/diffs`) on large real specs.

Usage: python bench/diff_run_bench.py [--dir DIR] [--repeat N] [--smoke]

Per JSON pair of `--dir` (default `../shared/bench/openapi`, or `DRIFTGATE_BENCH_DATA`; see
bench/diff_bench.py for the files): the request through the app (Flask's client, a SQLite file,
`max_body_bytes` raised to 64 MB: the 1 MB default admits smaller documents only), from the
body's bytes to the stored run's answer, best and median of `--repeat` runs, with the body's
size and the change counts; `--smoke`: diff_bench's small pair from the repository, once.
Prints figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from bench.diff_bench import SMOKE_DIR, SMOKE_PAIRS  # noqa: E402
from controller.orgs import auth_service as auth  # noqa: E402
from controller.orgs import service as orgs  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from tests.conftest import make_settings  # noqa: E402
from web.app import create_app  # noqa: E402

PAIRS = (
    ("github-2021-09-27.json", "github-2022-07-18.json"),
    ("stripe-2021-10-19.json", "stripe-2022-04-12.json"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = os.environ.get("DRIFTGATE_BENCH_DATA", str(ROOT.parent / "shared/bench/openapi"))
    parser.add_argument("--dir", default=default)
    parser.add_argument("--repeat", type=int, default=3)
    args = smoke.parse(parser, {"dir": str(SMOKE_DIR), "repeat": 1})
    data = Path(args.dir)
    tmp = Path(tempfile.mkdtemp())
    database = Database(f"sqlite:///{tmp / 'bench.db'}")
    migrate.upgrade(database)
    with database.transaction() as session:
        org = orgs.create_org(session, "bench", "pro", actor="bench")
        key = auth.create_api_key(session, org, "bench", actor="bench").secret
    settings = make_settings(tmp, database_url=database.url, max_body_bytes=64 * 1_048_576)
    client = create_app(settings, database=database).test_client()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    print("| pair | body MB | best s | median s | changes (breaking / warning / info) |")
    print("|---|---|---|---|---|")
    for before, after in SMOKE_PAIRS if args.smoke else PAIRS:
        if not (data / before).exists():
            print(f"| {before} | missing in {data} | | | |")
            continue
        body = json.dumps(
            {
                "before": json.loads((data / before).read_text()),
                "after": json.loads((data / after).read_text()),
            }
        ).encode()
        times, counts = [], {}
        for _ in range(args.repeat):
            started = time.perf_counter()
            answer = client.post("/api/openapi/diffs", data=body, headers=headers)
            times.append(time.perf_counter() - started)
            assert answer.status_code == 201, answer.get_json()
            counts = answer.get_json()["counts"]
        print(
            f"| {before} -> {after} | {len(body) / 1e6:.1f} | {min(times):.2f} | "
            f"{statistics.median(times):.2f} | {counts['breaking']} / {counts['warning']} / "
            f"{counts['info']} |"
        )


if __name__ == "__main__":
    main()
