"""Benchmark of the OpenAPI engine on large real specs.

Usage: python bench/diff_bench.py [--dir DIR] [--formats [--repeat N]] [--smoke]

The six files (three pairs) are public: `python bench/get_data.py DIR` downloads them from
the GitHub and Stripe OpenAPI repositories at fixed commits and checks their digests
(docs/performance.md lists the sources). `--dir` (or `DRIFTGATE_BENCH_DATA`) names the
directory; the default is `../shared/bench/openapi` beside the clone.

`--smoke` measures the small shop API of the CLI's tests (`tests/cli/fixtures`) instead, one
run each. `--formats` runs only `driftgate diff` end to end in each output format (text, markdown,
github, sarif, json; grouped), the best of `--repeat` runs, with the report's size.

Per pair: `driftgate diff --format json` end to end in a child process (interpreter start to
the last byte written, grouped and --flat, with the child's peak RSS); then in-process: parse
time of each side, fingerprint time, diff time, change counts, peak memory
(tracemalloc peak of Python allocations, plus the process' peak RSS), and the unchanged path
(same spec twice: parse once, fingerprint, equal fingerprints, no diff). Prints figures only;
a benchmark never fails a build on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from controller.collector import collector_paused  # noqa: E402
from controller.diffs.canonical import fingerprint  # noqa: E402
from controller.diffs.loader import load_document  # noqa: E402
from controller.diffs.openapi import diff_openapi  # noqa: E402

DEFAULT_DIR = Path(
    os.environ.get("DRIFTGATE_BENCH_DATA") or ROOT.parent / "shared" / "bench" / "openapi"
)
PAIRS = (
    ("github-2021-09-27.json", "github-2022-07-18.json"),
    ("stripe-2021-10-19.json", "stripe-2022-04-12.json"),
    ("stripe-2023-03-11.yaml", "stripe-2023-09-12.yaml"),
)
SMOKE_DIR = ROOT / "tests" / "cli" / "fixtures"
SMOKE_PAIRS = (("shop-v1.json", "shop-v2.json"),)


def _timed(fn, *args, **kw):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn(*args, **kw)
    return result, time.perf_counter() - start


def bench_pair(folder: Path, base_name: str, rev_name: str) -> dict[str, object]:
    """Measure one pair; return its figures."""
    base_bytes = (folder / base_name).read_bytes()
    rev_bytes = (folder / rev_name).read_bytes()
    base, t_parse_base = _timed(load_document, base_bytes, base_name, kind="openapi")
    rev, t_parse_rev = _timed(load_document, rev_bytes, rev_name, kind="openapi")
    start = time.perf_counter()
    fp_base, fp_rev = fingerprint(base), fingerprint(rev)
    t_fp = time.perf_counter() - start
    with collector_paused():  # as checks and `driftgate diff` run it
        changes, t_diff = _timed(diff_openapi, base, rev)
    # Peak RSS of the process so far: parse, fingerprint and diff of this pair only.
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    del base, rev
    # Memory in a second pass: tracemalloc slows allocation-heavy code several times over.
    tracemalloc.start()
    diff_openapi(
        load_document(base_bytes, base_name, kind="openapi"),
        load_document(rev_bytes, rev_name, kind="openapi"),
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    counts = Counter(c.severity.value for c in changes)
    return {
        "pair": f"{base_name} -> {rev_name}",
        "parse_s": t_parse_base + t_parse_rev,
        "fingerprint_s": t_fp,
        "diff_s": t_diff,
        "total_s": t_parse_base + t_parse_rev + t_diff,
        "peak_mb": peak / 1e6,
        "rss_mb": rss_mb,
        "changes": len(changes),
        "counts": dict(counts),
        "fingerprints_differ": fp_base != fp_rev,
    }


def bench_end_to_end(
    folder: Path, base_name: str, rev_name: str, flat: bool, fmt: str = "json"
) -> dict[str, float]:
    """`driftgate diff --format FMT` as a user runs it: interpreter start to the last byte
    written, the child's peak RSS and the report's size (grouped by default; `flat` adds
    --flat)."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report"
        command = [sys.executable, "-m", "cli", "diff", str(folder / base_name)]
        command += [str(folder / rev_name), "--format", fmt, "-o", str(report)]
        command += ["--flat"] if flat else []
        start = time.perf_counter()
        child = subprocess.Popen(command, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode not in (0, 1):
            raise SystemExit(f"driftgate diff exited with {child.returncode}")
        size = len(report.read_text(encoding="utf-8"))
    return {"seconds": elapsed, "rss_mb": usage.ru_maxrss / 1024, "chars": size}


FORMATS = ("text", "markdown", "github", "sarif", "json")


def bench_formats(folder: Path, repeat: int, pairs: tuple[tuple[str, str], ...] = PAIRS) -> None:
    """Each output format, grouped, end to end: the best of `repeat` runs per pair."""
    print(f"end to end, grouped, per format (best of {repeat}): pair | format | s | RSS MB | chars")
    for base_name, rev_name in pairs:
        for fmt in FORMATS:
            runs = [
                bench_end_to_end(folder, base_name, rev_name, flat=False, fmt=fmt)
                for _ in range(repeat)
            ]
            best = min(runs, key=lambda r: r["seconds"])
            print(
                f"{base_name} -> {rev_name} | {fmt} | {best['seconds']:.2f} | "
                f"{max(r['rss_mb'] for r in runs):.0f} | {best['chars']:,}"
            )


def bench_unchanged(folder: Path, name: str) -> dict[str, object]:
    """Same spec twice, the way a check sees it: parse the fetch, fingerprint, compare."""
    data = (folder / name).read_bytes()
    baseline_fp = fingerprint(load_document(data, name, kind="openapi"))
    start = time.perf_counter()
    doc = load_document(data, name, kind="openapi")
    fp = fingerprint(doc)
    t_total = time.perf_counter() - start
    start = time.perf_counter()
    fingerprint(doc)
    t_fp = time.perf_counter() - start
    other = load_document(data, name, kind="openapi")
    start = time.perf_counter()
    same = diff_openapi(doc, other)
    t_diff_same = time.perf_counter() - start
    return {
        "spec": name,
        "unchanged_total_s": t_total,
        "fingerprint_only_s": t_fp,
        "equal": fp == baseline_fp,
        "diff_of_equal_docs_s": t_diff_same,
        "diff_of_equal_docs_changes": len(same),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--pair", nargs=2, help=argparse.SUPPRESS)  # child process mode
    parser.add_argument(
        "--formats",
        action="store_true",
        help="only the end-to-end runs of every output format (grouped)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per format (--formats)")
    args = smoke.parse(parser, {"dir": SMOKE_DIR, "repeat": 1})
    pairs = SMOKE_PAIRS if args.smoke else PAIRS
    if args.formats:
        bench_formats(args.dir, args.repeat, pairs)
        return
    if args.pair is not None:
        result = bench_pair(args.dir, *args.pair)
        print(json.dumps(result))
        return
    print(
        "pair | parse s | fingerprint s | diff s | parse+diff s | peak MB (tracemalloc) "
        "| peak RSS MB (own process) | changes"
    )
    for pair in pairs:
        # Each pair in a fresh interpreter, so the peak RSS is that pair's alone.
        child = subprocess.run(
            [sys.executable, __file__, "--dir", str(args.dir), "--pair", *pair],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(child.stdout)
        print(
            f"{r['pair']} | {r['parse_s']:.2f} | {r['fingerprint_s']:.2f} | {r['diff_s']:.2f} | "
            f"{r['total_s']:.2f} | {r['peak_mb']:.0f} | {r['rss_mb']:.0f} | "
            f"{r['changes']} {r['counts']}"
        )
    print()
    print(
        "end to end: `driftgate diff A B --format json` (interpreter start to last byte) "
        "| grouped s | grouped RSS MB | --flat s | --flat RSS MB"
    )
    for base_name, rev_name in pairs:
        grouped = bench_end_to_end(args.dir, base_name, rev_name, flat=False)
        flat = bench_end_to_end(args.dir, base_name, rev_name, flat=True)
        print(
            f"{base_name} -> {rev_name} | {grouped['seconds']:.2f} | {grouped['rss_mb']:.0f} | "
            f"{flat['seconds']:.2f} | {flat['rss_mb']:.0f}"
        )
    print()
    print("unchanged spec | parse+fingerprint s | fingerprint only s | equal | diff(doc, doc) s")
    for base_name, _ in pairs:
        u = bench_unchanged(args.dir, base_name)
        print(
            f"{u['spec']} | {u['unchanged_total_s']:.2f} | {u['fingerprint_only_s']:.2f} | "
            f"{u['equal']} | {u['diff_of_equal_docs_s']:.2f} ({u['diff_of_equal_docs_changes']})"
        )


if __name__ == "__main__":
    main()
