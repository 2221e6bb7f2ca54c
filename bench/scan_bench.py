"""Benchmark of the repository scan: a tree of 5,000 files (about 20 MB, a realistic mix) in
one `POST /api/repo/scan` request to a real gunicorn server, and through `driftgate scan DIR`
as a CI job runs it (interpreter start to the last byte).

The tree: source files (Python, TypeScript, Markdown; most of the bytes), a few hundred JSON
and YAML files (some of them OpenAPI documents), MCP client configurations at their paths,
`package.json` and `requirements.txt` with vendor SDKs, `.env.example` files, generator
configs and a binary file or two. The server runs with `max_body_bytes` raised to 32 MB (the
default, 1 MB, would refuse such a request: see docs/discovery.md). Goal (issue 22): under
2 s for either, memory bounded by the request cap. Figures go to docs/performance.md.
Run: `python bench/scan_bench.py [--files N] [--rounds N]` (`--smoke`: 50 files, one round, one
gunicorn worker).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench import preflight_bench as harness  # noqa: E402
from bench import smoke  # noqa: E402
from controller.orgs import auth_service  # noqa: E402
from controller.orgs import service as org_service  # noqa: E402
from controller.settings import Settings  # noqa: E402
from controller.store import migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402

OPENAPI = (
    "openapi: 3.0.0\ninfo: {title: t, version: '1'}\n"
    "servers:\n  - url: https://svc.example/v1\npaths: {}\n"
)
MCP = {"mcpServers": {"billing": {"type": "http", "url": "https://mcp.billing.example/mcp"}}}


def tree(root: Path, count: int) -> int:
    """Write `count` files under `root`; their total size in bytes."""
    rng = random.Random(7)
    total = 0
    fixed = {
        ".mcp.json": json.dumps(MCP),
        ".vscode/mcp.json": json.dumps(
            {"servers": {"d": {"type": "sse", "url": "https://d.example/sse"}}}
        ),
        "package.json": json.dumps({"dependencies": {"stripe": "^14", "react": "^18"}}),
        "requirements.txt": "flask\nopenai>=1\n",
        ".env.example": "API_BASE_URL=https://api.example.com/v1\n",
        "openapitools.json": json.dumps({"inputSpec": "https://specs.example/openapi.yaml"}),
        "assets/logo.png": "\x00PNG" * 256,
    }
    for path, text in fixed.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        total += len(text)
    line = "def handler(event, context):  # a line of ordinary source code\n"
    for index in range(count - len(fixed)):
        kind = rng.random()
        folder = root / f"pkg{index % 50}" / f"mod{index % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        if kind < 0.06:
            path = folder / f"config{index}.yaml"
            text = OPENAPI if kind < 0.01 else "key: value\n" * rng.randint(20, 200)
        elif kind < 0.10:
            path = folder / f"data{index}.json"
            text = json.dumps({"items": list(range(rng.randint(50, 600)))})
        else:
            path = folder / f"file{index}.{rng.choice(['py', 'ts', 'md'])}"
            text = line * rng.randint(20, 110)
        path.write_text(text)
        total += len(text)
    return total


def main() -> None:
    defaults = Settings.model_fields
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=defaults["workers"].default)
    parser.add_argument("--threads", type=int, default=defaults["threads"].default)
    parser.add_argument("--log-level", default="WARNING")
    args = smoke.parse(parser, {"files": 50, "rounds": 1, "workers": 1, "threads": 2})
    work = Path(tempfile.mkdtemp(prefix="driftgate-scan-bench-"))
    try:
        checkout = work / "repo"
        checkout.mkdir()
        size = tree(checkout, args.files)
        files = [
            {"path": p.relative_to(checkout).as_posix(), "content": p.read_text(errors="replace")}
            for p in sorted(checkout.rglob("*"))
            if p.is_file()
        ]
        body = json.dumps({"files": files}).encode()
        mb = 1_048_576
        print(f"tree: {len(files)} files, {size / mb:.1f} MB; request body {len(body) / mb:.1f} MB")
        url = f"sqlite:///{work / 'bench.db'}"
        database = Database(url)
        migrate.upgrade(database)
        with database.transaction() as session:
            org = org_service.create_org(session, "bench", "pro", actor="bench")
            key = auth_service.create_api_key(session, org, "bench", actor="bench").secret
        database.dispose()
        port = harness.free_port()
        process, _ = harness.start_server(
            url,
            work,
            "scan",
            port,
            args,
            settings={"DRIFTGATE_MAX_BODY_BYTES": str(32 * 1_048_576)},
        )
        api_times = []
        try:
            with httpx.Client(timeout=60) as client:
                for _ in range(args.rounds):
                    started = time.perf_counter()
                    answer = client.post(
                        f"http://127.0.0.1:{port}/api/repo/scan",
                        content=body,
                        headers={
                            "Authorization": f"Bearer {key}",
                            "Content-Type": "application/json",
                            "User-Agent": "driftgate-scan-bench",
                        },
                    )
                    api_times.append(time.perf_counter() - started)
                    assert answer.status_code == 200, answer.text[:300]
                    found = len(answer.json()["candidates"])
            rss = max(
                harness.process_cpu([process.pid])
                and [_rss(p) for p in harness.server_pids(process.pid)]
            )
        finally:
            harness.stop_server(process)
        cli_times, cli_rss = [], 0.0
        for _ in range(args.rounds):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", MEASURED, str(checkout)],
                cwd=ROOT,
                capture_output=True,
                check=True,
            )
            cli_times.append(time.perf_counter() - started)
            output, _, peak = done.stdout.decode().rstrip("\n").rpartition("\n")
            cli_rss = max(cli_rss, float(peak or 0))
        cli_found = len(json.loads(output)["candidates"])
        rounds = ", ".join(f"{t:.2f}" for t in api_times)
        cli_rounds = ", ".join(f"{t:.2f}" for t in cli_times)
        print("path | median s | all s | candidates | peak RSS MB")
        print(
            f"POST /api/repo/scan (one request) | {median(api_times):.2f} | {rounds} | {found} | "
            f"{rss:.0f} (the largest server process)"
        )
        print(
            f"driftgate scan DIR --format json | {median(cli_times):.2f} | {cli_rounds} | "
            f"{cli_found} | {cli_rss:.0f}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


# `driftgate scan DIR --format json` in a child, printing its own peak RSS (MB) last: the
# interpreter start and the output included.
MEASURED = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "cli", "scan", sys.argv[1], "--format", "json"],
                      capture_output=True, check=True)
sys.stdout.write(done.stdout.decode())
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"""


def _rss(pid: int) -> float:
    """Resident memory in MB (VmHWM: the peak) of a process."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


if __name__ == "__main__":
    main()
