"""Benchmark of runtime ingress validation: `POST /api/validate` beside `GET /health` under
real gunicorn, and the validator core beside raw `jsonschema_rs`.

The HTTP part runs like the preflight benchmark (`bench/preflight_bench.py`, whose server,
load generator and CPU accounting it reuses): a fresh store per run (SQLite always, Postgres
with `--postgres URL`), one pro org with an API key and a realistic profile `order` in its
registry (an order with a customer, an address and line items: types, enums, bounds,
patterns), `driftgate serve` on a free port, then three scenarios against the same server:

- `health`: `GET /health`;
- `validate valid`: a 20-item order that fits (`profileId: order`), answered 200;
- `validate invalid`: the same order with four errors (a missing field, a bad enum, a bound,
  an extra field), answered 422.

Every validation is metered (one upsert in the store), as in production; the quota and the
burst limit are set out of the way. The core part times, in this process, the compiled
profile's `validate` (aliases, envelope, error mapping included) against `jsonschema_rs` on
the same schema (`is_valid` for the valid order, `iter_errors` for the invalid one).

Goals (issue 21): throughput at least 0.5x `/health` on each store, p99 at most 2x
`/health`'s; the core within 2x of raw `jsonschema_rs`. Figures go to docs/performance.md;
nothing here fails on a time. Run: `python bench/validate_bench.py [--duration S]
[--warmup S] [--rounds N] [--concurrency C] [--clients N] [--postgres URL [--skip-sqlite]]`
(`--smoke`: preflight_bench's smoke load, 20 core repeats).
"""

from __future__ import annotations

import argparse
import copy
import shutil
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jsonschema_rs  # noqa: E402

from bench import preflight_bench as harness  # noqa: E402
from bench import smoke  # noqa: E402
from controller.ingress.validator import compile_profile, validate  # noqa: E402
from controller.model.ingress_profiles import check_profile  # noqa: E402
from controller.model.principal import Principal  # noqa: E402
from controller.orgs import auth_service  # noqa: E402
from controller.orgs import service as org_service  # noqa: E402
from controller.settings import Settings  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402

ITEM = {
    "type": "object",
    "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "qty": {"type": "integer", "minimum": 1, "maximum": 1000},
        "unitPrice": {"type": "number", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
    },
    "required": ["sku", "qty", "unitPrice"],
}
PROFILE: dict[str, Any] = {
    "id": "order",
    "version": 1,
    "requiredPolicy": "schemaOnly",
    "schema": {
        "type": "object",
        "$defs": {"item": ITEM},
        "properties": {
            "orderId": {"type": "string", "minLength": 8, "maxLength": 64},
            "currency": {"enum": ["USD", "EUR", "GBP", "JPY"]},
            "status": {"enum": ["new", "paid", "shipped", "cancelled"]},
            "customer": {
                "type": "object",
                "properties": {
                    "email": {"type": "string", "format": "email"},
                    "name": {"type": "string"},
                    "address": {
                        "type": "object",
                        "properties": {
                            "line1": {"type": "string"},
                            "city": {"type": "string"},
                            "postcode": {"type": "string"},
                            "country": {"type": "string", "minLength": 2, "maxLength": 2},
                        },
                        "required": ["line1", "city", "country"],
                    },
                },
                "required": ["email", "address"],
            },
            "items": {
                "type": "array",
                "minItems": 1,
                "maxItems": 100,
                "items": {"$ref": "#/$defs/item"},
            },
            "total": {"type": "number", "minimum": 0},
            "notes": {"type": ["string", "null"], "maxLength": 2000},
        },
        "required": ["orderId", "currency", "customer", "items", "total"],
    },
}
VALID: dict[str, Any] = {
    "orderId": "ord-2026-11-25-0001",
    "currency": "EUR",
    "status": "paid",
    "customer": {
        "email": "ada@example.com",
        "name": "Ada",
        "address": {"line1": "1 Main St", "city": "Paris", "postcode": "75001", "country": "FR"},
    },
    "items": [
        {
            "sku": f"SKU-{1000 + i}",
            "name": f"item {i}",
            "qty": 1 + i % 5,
            "unitPrice": 9.5 + i,
            "tags": ["a", "b"],
        }
        for i in range(20)
    ],
    "total": 590.0,
    "notes": None,
}
INVALID = copy.deepcopy(VALID)
del INVALID["customer"]["address"]["city"]  # required_missing
INVALID["currency"] = "BTC"  # enum_invalid
INVALID["items"][3]["qty"] = 0  # min_value
INVALID["coupon"] = "FREE"  # extra_field


def seed(database: Database) -> str:
    from controller.ingress import service

    with database.transaction() as session:
        org = org_service.create_org(session, "bench", "pro", actor="bench")
        issued = auth_service.create_api_key(session, org, "bench", actor="bench")
        principal = Principal(org.id, org.name, org.plan, frozenset(), "api_key", issued.key.id)
        service.put_profile(session, principal, "order", PROFILE, harness_now())
        return issued.secret


def harness_now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def core(repeat: int) -> list[tuple[str, float, float]]:
    """(case, validator core µs, raw jsonschema_rs µs) per payload."""
    compiled = compile_profile(check_profile(PROFILE), "hosted")
    # The same schema as the compiled profile validates with (undeclared properties refused).
    raw = jsonschema_rs.validator_for(compiled.schema)
    rows = []
    for name, payload, raw_call in (
        ("valid order", VALID, lambda: raw.is_valid(VALID)),
        ("invalid order", INVALID, lambda: list(raw.iter_errors(INVALID))),
    ):
        ours, theirs = [], []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(repeat):
                validate(compiled, payload)
            ours.append((time.perf_counter() - started) / repeat * 1e6)
            started = time.perf_counter()
            for _ in range(repeat):
                raw_call()
            theirs.append((time.perf_counter() - started) / repeat * 1e6)
        rows.append((name, median(ours), median(theirs)))
    return rows


def bench_store(label: str, url: str, work: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    database = Database(url)
    migrate.upgrade(database)
    key = seed(database)
    database.dispose()
    port = harness.free_port()
    settings = {
        "DRIFTGATE_VALIDATE_QUOTA_PRO": "0",
        "DRIFTGATE_VALIDATE_PER_MINUTE": "100000000",
        "DRIFTGATE_VALIDATE_BURST": "100000000",
    }
    scenarios = [
        ("health", "GET", "/health", None, 200),
        ("validate valid", "POST", "/api/validate", {"payload": VALID, "profileId": "order"}, 200),
        (
            "validate invalid",
            "POST",
            "/api/validate",
            {"payload": INVALID, "profileId": "order"},
            422,
        ),
    ]
    process, _ = harness.start_server(url, work, label, port, args, settings=settings)
    rows = []
    try:
        for name, method, path, body, expected in scenarios * args.rounds:
            status, answer = harness.request_once(port, method, path, body, key if body else None)
            if status != expected:
                raise SystemExit(f"{label} {name}: probe answered {status}: {answer!r:.500}")
            request = harness.build_request(port, method, path, body, key if body else "")
            row = harness.run_scenario(name, port, process.pid, [request], args)
            row["store"] = label
            rows.append(row)
    finally:
        harness.stop_server(process)
    return [harness.combine([r for r in rows if r["scenario"] == s[0]]) for s in scenarios]


def postgres_store(work: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    with harness.scratch_postgres(args.postgres, "driftgate_vbench") as url:
        return bench_store("postgres", url, work, args)


def main() -> None:
    defaults = Settings.model_fields
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--reconnect-every", type=int, default=200)
    parser.add_argument("--workers", type=int, default=defaults["workers"].default)
    parser.add_argument("--threads", type=int, default=defaults["threads"].default)
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--core-repeat", type=int, default=2000)
    parser.add_argument("--postgres")
    parser.add_argument("--skip-sqlite", action="store_true")
    args = smoke.parse(parser, {"core_repeat": 20, **harness.SMOKE_LOAD})
    harness.SUCCESS = (200, 422)  # an invalid payload's answer is a success here
    print("validator core (per payload, median of 5 runs):")
    print("case | driftgate validate µs | raw jsonschema_rs µs | ratio")
    for name, ours, theirs in core(args.core_repeat):
        print(f"{name} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x")
    work = Path(tempfile.mkdtemp(prefix="driftgate-validate-bench-"))
    stores = []
    try:
        if not args.skip_sqlite:
            stores.append(bench_store("sqlite", f"sqlite:///{work / 'bench.db'}", work, args))
        if args.postgres:
            stores.append(postgres_store(work, args))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(
        "store | scenario | req/s | p50 ms | p99 ms | errors | server CPU ms/req"
        " | req/s vs health | p99 vs health"
    )
    for rows in stores:
        health = rows[0]
        for row in rows:
            print(
                f"{row['store']} | {row['scenario']} | {row['per_second']:.0f} | "
                f"{row['p50']:.2f} | {row['p99']:.2f} | {row['errors']} | {row['server_ms']:.2f} | "
                f"{row['per_second'] / health['per_second']:.2f} | {row['p99'] / health['p99']:.2f}"
            )


if __name__ == "__main__":
    main()
