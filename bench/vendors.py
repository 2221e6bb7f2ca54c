"""Real vendors' histories: per-rule noise, labels and coverage of the breaking verdicts.

Usage: python bench/vendors.py [--corpus DIR] [--vendor NAME ...] [--unlabelled] [--failing]
                               [--json FILE] [--smoke]

Every consecutive pair of every vendor folder of `../shared/conformance/vendors` (or
`--corpus DIR/vendors`, or `DRIFTGATE_CONFORMANCE`) is diffed in process exactly as
`driftgate diff OLD NEW --format json --fail-on never` diffs it (grouped by cause). The labels
are the corpus' own (`<vendor>/labels.json`) and the project's
(`tests/diffs/vendor-labels/<vendor>.json`, the same format, covering every breaking
finding): a label speaks of the findings of its pair that concern its `operation` (when one
is given) and carry its `where` in their path, origin, summary or cause (README of the
corpus). A `breaking` label holds when one of them is breaking; a `not-breaking` one when
none is.

Prints, per pair, the CPU seconds and the counts; then, per rule, the breaking findings it
makes across the corpus, the labels it breaks (a `not-breaking` label it matches as breaking)
and the breaking findings no label covers, the noisiest rules first; then the totals. A
label may carry `known_miss` (why the engine cannot get it right yet): it is counted like
any other, and reported apart when it holds after all.
`--unlabelled` lists each breaking finding no label covers; `--failing` each label that does
not hold. Prints figures only; it never fails on a number (tests/diffs/test_vendor_labels.py
holds the assertions). `--smoke` scores a corpus of one vendor it builds from the CLI tests'
shop API (`smoke_corpus`), unless given `--corpus`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import smoke  # noqa: E402
from bench.conformance import DEFAULT_CORPUS  # noqa: E402

LABELS = ROOT / "tests" / "diffs" / "vendor-labels"
_VERSION = re.compile(r"^v(\d+)\.(?:json|ya?ml)$")


@dataclass
class Pair:
    vendor: str
    name: str  # "v1-v2"
    base: Path
    revision: Path


@dataclass
class PairResult:
    pair: Pair
    changes: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    cpu: float = 0.0
    error: str | None = None  # a refusal or crash: every label on the pair fails


def vendor_dirs(corpus: Path, only: list[str] | None = None) -> list[Path]:
    root = corpus / "vendors"
    if not root.is_dir():
        return []
    return sorted(
        d for d in root.iterdir() if d.is_dir() and (not only or d.name in only) and _versions(d)
    )


def _versions(vendor: Path) -> list[Path]:
    found = sorted(
        (int(m[1]), p) for p in vendor.iterdir() if (m := _VERSION.match(p.name)) is not None
    )
    return [p for _, p in found]


def pairs(vendor: Path) -> list[Pair]:
    versions = _versions(vendor)
    return [
        Pair(vendor.name, f"{a.stem}-{b.stem}", a, b)
        for a, b in zip(versions, versions[1:], strict=False)
    ]


def run_pair(pair: Pair) -> PairResult:
    """The pair's grouped JSON report, as `driftgate diff --format json` writes it."""
    from controller.diffruns.offline_service import InputError, diff_contracts, render_report

    result = PairResult(pair)
    start = time.process_time()
    try:
        report = diff_contracts(str(pair.base), str(pair.revision))
        data = json.loads(render_report(report, "json", "never"))
    except InputError as exc:
        result.error = f"refused: {exc}"
    except Exception as exc:  # noqa: BLE001 - a crash is a result here, reported as such
        result.error = f"crashed: {type(exc).__name__}: {exc}"
    else:
        result.changes = data.get("changes") or []
        result.counts = data.get("counts") or {}
    result.cpu = time.process_time() - start
    return result


def labels(vendor: Path) -> list[dict[str, Any]]:
    """The corpus' labels of a vendor and the project's, each marked with where it came from."""
    out: list[dict[str, Any]] = []
    sources = [("corpus", vendor / "labels.json"), ("project", LABELS / f"{vendor.name}.json")]
    extra = os.environ.get("DG_EXTRA_LABELS")  # labels being written, before they land
    if extra:
        sources.append(("extra", Path(extra) / f"{vendor.name}.json"))
    for source, path in sources:
        if path.is_file():
            for entry in json.loads(path.read_text(encoding="utf-8")):
                out.append({**entry, "_source": source})
    return out


# -- matching (the corpus README's rules) ---------------------------------------------------


def _unescape(text: str) -> str:
    return text.replace("~1", "/").replace("~0", "~")


def _texts(change: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for key in ("path", "origin", "summary", "cause"):
        value = change.get(key)
        if isinstance(value, str) and value:
            texts.append(value)
            if key in ("path", "origin"):
                texts.append(_unescape(value))
    return texts


def _operation(op: str) -> str:
    parts = op.strip().split(None, 1)
    return f"{parts[0].upper()} {parts[1].strip()}" if len(parts) == 2 else op.strip()


def _operations(change: dict[str, Any]) -> set[str]:
    ops = [change.get("location", {}).get("operation"), *(change.get("affected") or ())]
    return {_operation(op) for op in ops if isinstance(op, str)}


def _wheres(where: str | list[str]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    for item in where if isinstance(where, list) else [where]:
        text = item.strip()
        anchored = text.endswith("$")
        text = text[:-1] if anchored else text
        for variant in {text, text[1:] if text.startswith("#") else text}:
            if variant:
                out.append((variant, anchored))
    return out


def matches(label: dict[str, Any], changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings a label speaks of."""
    op = _operation(label["operation"]) if label.get("operation") else None
    wheres = _wheres(label["where"])
    found = []
    for change in changes:
        if op and op not in _operations(change):
            continue
        texts = _texts(change)
        if any((t.endswith(v) if anchored else v in t) for v, anchored in wheres for t in texts):
            found.append(change)
    return found


def _breaking(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in changes if c.get("severity") == "breaking" and not c.get("ignored")]


def holds(label: dict[str, Any], result: PairResult) -> bool:
    if result.error is not None:
        return False
    found = _breaking(matches(label, result.changes))
    return bool(found) if label["truth"] == "breaking" else not found


@dataclass
class Score:
    results: list[PairResult] = field(default_factory=list)
    rules: Counter[str] = field(default_factory=Counter)  # breaking findings per rule
    broken: Counter[str] = field(default_factory=Counter)  # not-breaking labels broken, by rule
    uncovered: Counter[str] = field(default_factory=Counter)  # unlabelled breaking, by rule
    failing: list[tuple[PairResult, dict[str, Any]]] = field(default_factory=list)
    unlabelled: list[tuple[PairResult, dict[str, Any]]] = field(default_factory=list)
    known: int = 0  # failing labels marked `known_miss` (the reason is in the label)
    healed: list[tuple[PairResult, dict[str, Any]]] = field(default_factory=list)
    held: Counter[str] = field(default_factory=Counter)  # truth -> labels holding
    total: Counter[str] = field(default_factory=Counter)  # truth -> labels


def score(corpus: Path = DEFAULT_CORPUS, only: list[str] | None = None) -> Score:
    out = Score()
    for vendor in vendor_dirs(corpus, only):
        by_pair: dict[str, list[dict[str, Any]]] = {}
        for label in labels(vendor):
            by_pair.setdefault(label["pair"], []).append(label)
        for pair in pairs(vendor):
            result = run_pair(pair)
            out.results.append(result)
            pair_labels = by_pair.get(pair.name, [])
            covered: set[int] = set()
            for label in pair_labels:
                found = matches(label, result.changes)
                covered.update(id(c) for c in found)
                out.total[label["truth"]] += 1
                if holds(label, result):
                    out.held[label["truth"]] += 1
                    if label.get("known_miss"):
                        out.healed.append((result, label))
                    continue
                out.failing.append((result, label))
                if label.get("known_miss"):
                    out.known += 1
                if label["truth"] == "not-breaking":
                    for rule in {c["rule"] for c in _breaking(found)}:
                        out.broken[rule] += 1
            for change in _breaking(result.changes):
                out.rules[change["rule"]] += 1
                if id(change) not in covered:
                    out.uncovered[change["rule"]] += 1
                    out.unlabelled.append((result, change))
    return out


def _print(s: Score, unlabelled: bool, failing: bool) -> None:
    for r in s.results:
        c = r.counts
        state = r.error or f"{c.get('breaking', 0)}B/{c.get('warning', 0)}W/{c.get('info', 0)}I"
        print(f"{r.pair.vendor:10} {r.pair.name:6} cpu={r.cpu:5.2f}s  {state}")
    print()
    print(f"{'breaking findings':>18} {'labels broken':>14} {'unlabelled':>11}  rule")
    order = sorted(s.rules, key=lambda k: (-s.broken[k], -s.uncovered[k], -s.rules[k], k))
    for rule in order:
        print(f"{s.rules[rule]:18} {s.broken[rule]:14} {s.uncovered[rule]:11}  {rule}")
    if failing:
        print("\nlabels that do not hold:")
        for r, label in s.failing:
            found = matches(label, r.changes)
            rules = sorted({f"{c['severity']}:{c['rule']}" for c in found}) or ["no finding"]
            known = " (known miss)" if label.get("known_miss") else ""
            print(
                f"  {r.pair.vendor} {r.pair.name} {label['truth']} {label.get('operation')} "
                f":: {label['where']} [{label['_source']}]{known} -> {', '.join(rules)}"
            )
    if unlabelled:
        print("\nbreaking findings no label covers:")
        for r, c in s.unlabelled:
            op = c.get("location", {}).get("operation")
            where = c.get("origin") or c["path"]
            print(f"  {r.pair.vendor} {r.pair.name} {c['rule']} | {op} | {where}")
    refused = sum(1 for r in s.results if r.error)
    slowest = max(s.results, key=lambda r: r.cpu, default=None)
    print()
    print(
        f"labels: not-breaking {s.held['not-breaking']}/{s.total['not-breaking']} hold, "
        f"breaking {s.held['breaking']}/{s.total['breaking']} hold "
        f"({s.known} of the failing ones marked as known misses, {len(s.healed)} marked ones "
        f"hold now); {len(s.unlabelled)} breaking findings unlabelled"
    )
    if slowest is not None:
        print(f"slowest pair: {slowest.pair.vendor} {slowest.pair.name} {slowest.cpu:.2f} CPU s")
    print(
        f"vendors: {len(s.results)} pairs, {refused} refused, {sum(s.rules.values())} breaking "
        f"findings, labels {sum(s.held.values())}/{sum(s.total.values())} hold"
    )


def smoke_corpus(root: Path) -> Path:
    """A corpus under `root` of one vendor, `shop`, whose one pair is the CLI tests' shop API
    (v1 -> v2 removes `DELETE /orders/{id}`), with a breaking and a not-breaking label."""
    shop = ROOT / "tests" / "cli" / "fixtures"
    vendor = root / "vendors" / "shop"
    vendor.mkdir(parents=True)
    for version in ("v1", "v2"):
        shutil.copyfile(shop / f"shop-{version}.json", vendor / f"{version}.json")
    labels = [
        {
            "pair": "v1-v2",
            "operation": "DELETE /orders/{id}",
            "where": "/orders/{id}",
            "truth": "breaking",
        },
        {
            "pair": "v1-v2",
            "operation": "GET /customers",
            "where": "#/components/schemas/Customer/properties/email",
            "truth": "not-breaking",
        },
    ]
    (vendor / "labels.json").write_text(json.dumps(labels, indent=1), encoding="utf-8")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--vendor", action="append")
    parser.add_argument("--unlabelled", action="store_true")
    parser.add_argument("--failing", action="store_true")
    parser.add_argument("--json", type=Path, help="also write every pair's changes here")
    args = smoke.parse(parser, {"corpus": None})
    if args.corpus is None:
        args.corpus = smoke_corpus(smoke.scratch())
        print("corpus: one vendor, built from contracts the repository holds")
    if not (args.corpus / "vendors").is_dir():
        sys.exit(f"no vendors' corpus at {args.corpus / 'vendors'}")
    s = score(args.corpus, args.vendor)
    _print(s, args.unlabelled, args.failing)
    if args.json:
        args.json.write_text(
            json.dumps({f"{r.pair.vendor} {r.pair.name}": r.changes for r in s.results}, indent=1),
            encoding="utf-8",
        )


if __name__ == "__main__":
    os.environ.setdefault("DRIFTGATE_LOG_LEVEL", "warning")
    main()
