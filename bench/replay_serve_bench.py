"""Benchmark of `driftgate replay serve` on the largest real contracts: a fixture built from
Stripe's and GitHub's OpenAPI documents (../shared/bench/openapi), served on 127.0.0.1, and
requests through httpx: the time to build the fixture, to start the server (openapi-core
reading the document included), and per request (a valid one answered with its mock, and one
that does not fit, answered 400/401). A small fixture is the reference. Figures go to
docs/performance.md. Run: `python bench/replay_serve_bench.py [--requests N]` (`--smoke`: the
small fixture only, 5 requests each).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from controller.replay import serve  # noqa: E402
from controller.replay.fixtures import build_fixture  # noqa: E402
from tests.replay.conftest import payments_spec, write  # noqa: E402

SHARED = ROOT.parent / "shared" / "bench" / "openapi"
# (name, document, a valid request, a request that does not fit)
CASES: list[tuple[str, Any, tuple[str, str, dict[str, Any]], tuple[str, str, dict[str, Any]]]] = [
    (
        "small (5 operations)",
        lambda: payments_spec(),
        ("GET", "/v1/charges/ch_1", {}),
        ("POST", "/v1/charges", {"json": {"amount": 0}}),
    ),
    (
        "stripe-2022-04-12",
        lambda: json.loads((SHARED / "stripe-2022-04-12.json").read_text()),
        ("GET", "/v1/charges/ch_1", {"headers": {"Authorization": "Bearer sk_test"}}),
        (
            "POST",
            "/v1/charges",
            {"data": {"amount": "ten"}, "headers": {"Authorization": "Bearer sk_test"}},
        ),
    ),
    (
        "github-2022-07-18",
        lambda: json.loads((SHARED / "github-2022-07-18.json").read_text()),
        ("GET", "/repos/octo/hello", {}),
        ("POST", "/repos/octo/hello/issues", {"json": {}}),
    ),
]


def timed(
    http: httpx.Client, request: tuple[str, str, dict[str, Any]], n: int
) -> tuple[float, int]:
    method, path, kwargs = request
    status = http.request(method, path, **kwargs).status_code
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        http.request(method, path, **kwargs)
        samples.append(time.perf_counter() - started)
    return median(samples) * 1000, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    args = smoke.parse(parser, {"requests": 5})
    cases = CASES[:1] if args.smoke else CASES
    print(f"{'fixture':24} {'ops':>5} {'build s':>8} {'start s':>8} {'ok ms':>7} {'bad ms':>7}")
    for name, load_document, good, bad in cases:
        document = load_document()
        started = time.perf_counter()
        fixture = build_fixture(
            fixture_id=name,
            watch_type="openapi",
            before=document,
            after=document,
            changes=[],
            content_kind="oss-curated",
            source="bench",
            created_at="2026-11-25T00:00:00Z",
        )
        build = time.perf_counter() - started
        with tempfile.TemporaryDirectory() as directory:
            write(Path(directory), fixture.files)
            started = time.perf_counter()
            server = serve.ReplayServer(serve.load(directory))
            server.start()
            start = time.perf_counter() - started
            try:
                with httpx.Client(base_url=server.url, timeout=60) as http:
                    ok_ms, ok_status = timed(http, good, args.requests)
                    bad_ms, bad_status = timed(http, bad, args.requests)
            finally:
                server.stop()
        print(
            f"{name:24} {len(fixture.mock_responses):>5} {build:>8.2f} {start:>8.2f} "
            f"{ok_ms:>7.2f} {bad_ms:>7.2f}   (answers {ok_status} / {bad_status})"
        )
    if args.smoke:
        print(f"not run in smoke size: {', '.join(name for name, *_ in CASES[1:])} ({SHARED})")


if __name__ == "__main__":
    main()
