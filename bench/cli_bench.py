"""Benchmark of the CLI's start-up: whole `driftgate` processes, interpreter start to exit, as
a person runs them: the root help, each group's help, shell completion, and the store commands
(`orgs create`, `keys create`, `users create`, `orgs list`) on a fresh SQLite store.

Each command runs `--rounds` times in a new process; the figures are the median and the range
of the wall time and of the CPU time (user + system, from the child's rusage), in seconds.
With `--compare DIR` (another checkout, e.g. `git worktree add /tmp/before main`), each round
runs the other checkout's command right after this one's, so both meet the same load; the
other checkout's code runs with this interpreter (`python -m cli` from that directory).
Goal (issue 34, point 4): help under 0.3 s, store commands under 0.7 s. Figures go to
docs/performance.md. Run: `python bench/cli_bench.py [--rounds N] [--compare DIR]` (`--smoke`:
one round).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402

SECRET = "bench-secret-key-for-the-cli-benchmark"
HELP = [
    ["--help"],
    ["watches", "--help"],
    ["orgs", "--help"],
    ["db", "--help"],
    ["drift", "--help"],
    ["keys", "--help"],
    ["users", "--help"],
    ["sources", "--help"],
    ["replay", "--help"],
]
STORE = ["orgs create", "keys create", "users create", "orgs list"]


def run(checkout: Path, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One process of `python -m cli ARGS` from `checkout`: (wall seconds, CPU seconds)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", *args],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    error = process.stderr.read().decode() if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"{checkout}: driftgate {' '.join(args)} failed: {error[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def store_args(name: str, round_no: int, tag: str) -> list[str]:
    org = f"bench-{tag}"
    return {
        "orgs create": ["orgs", "create", f"{org}-{round_no}"],
        "keys create": ["keys", "create", "--org", org],
        "users create": ["users", "create", "--org", org, "--email", f"{tag}{round_no}@ex.com"],
        "orgs list": ["orgs", "list"],
    }[name]


def shown(values: list[float]) -> str:
    return f"{median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", type=Path, help="another checkout to measure alongside")
    options = smoke.parse(parser, {"rounds": 1})
    checkouts = {"this": ROOT}
    if options.compare:
        checkouts["other"] = options.compare.resolve()

    with tempfile.TemporaryDirectory(prefix="cli-bench-") as scratch:
        env = {
            **os.environ,
            "DRIFTGATE_DATA_DIR": scratch,
            "DRIFTGATE_DATABASE_URL": f"sqlite:///{scratch}/bench.db",
            "DRIFTGATE_SECRET_KEY": SECRET,
            "NO_COLOR": "1",
        }
        env.pop("DRIFTGATE_CONFIG", None)
        run(ROOT, ["db", "upgrade"], env)
        for tag, checkout in checkouts.items():
            run(checkout, ["orgs", "create", f"bench-{tag}"], env)

        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        cases = [(" ".join(args), args) for args in HELP]
        # `python -m cli` was named so before it ran as `driftgate`: either variable works.
        completion = {
            **env,
            "_DRIFTGATE_COMPLETE": "bash_complete",
            "_PYTHON _M CLI_COMPLETE": "bash_complete",
            "COMP_CWORD": "1",
        }
        for round_no in range(options.rounds):
            for tag, checkout in checkouts.items():
                for label, args in cases:
                    results.setdefault((label, tag), []).append(run(checkout, args, env))
                words = {**completion, "COMP_WORDS": "driftgate wat"}
                results.setdefault(("(tab) driftgate wat", tag), []).append(
                    run(checkout, [], words)
                )
                for name in STORE:
                    args = store_args(name, round_no, tag)
                    results.setdefault((name, tag), []).append(run(checkout, args, env))

    labels = list(dict.fromkeys(label for label, _ in results))
    print(f"{options.rounds} rounds; seconds: median (range)")
    header = "| command |" + "".join(f" {tag} wall | {tag} CPU |" for tag in checkouts)
    print(header)
    print("|---|" + "---:|---:|" * len(checkouts))
    for label in labels:
        cells = "".join(
            f" {shown([w for w, _ in results[(label, tag)]])} |"
            f" {shown([c for _, c in results[(label, tag)]])} |"
            for tag in checkouts
        )
        print(f"| `{label}` |{cells}")


if __name__ == "__main__":
    main()
