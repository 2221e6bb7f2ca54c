"""Every pair of real vendors' histories (`../shared/conformance/vendors`, issue 41 point 4):
diffed with no refusal and no crash, every breaking finding covered by a label (the corpus'
own `labels.json` and the project's `tests/diffs/vendor-labels/`), every label holding.

A project label may carry `known_miss` (why the engine cannot get it right yet, in one
line): it must still miss, so the mark goes when the engine learns it. Time per pair is a
goal of `bench/vendors.py` (it prints the slowest pair), never asserted here.
Skips, naming the corpus, where `../shared` is not beside the clone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.conformance import DEFAULT_CORPUS  # noqa: E402
from bench.vendors import LABELS, holds, labels, matches, pairs, run_pair, vendor_dirs  # noqa: E402

VENDORS = vendor_dirs(DEFAULT_CORPUS)
pytestmark = pytest.mark.skipif(
    not VENDORS, reason=f"the vendors' corpus is not present at {DEFAULT_CORPUS / 'vendors'}"
)


def _describe(label: dict[str, object]) -> str:
    return f"{label['pair']} {label['truth']} {label.get('operation')} :: {label['where']}"


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda p: p.name)
def test_every_pair_is_read_and_every_label_holds(vendor: Path) -> None:
    by_pair: dict[str, list[dict[str, object]]] = {}
    for label in labels(vendor):
        by_pair.setdefault(str(label["pair"]), []).append(label)
    problems: list[str] = []
    for pair in pairs(vendor):
        result = run_pair(pair)
        if result.error is not None:
            problems.append(f"{pair.name}: {result.error}")
            continue
        covered: set[int] = set()
        for label in by_pair.pop(pair.name, []):
            covered.update(id(c) for c in matches(label, result.changes))
            held = holds(label, result)
            if label.get("known_miss") and held:
                problems.append(f"marked as a known miss but holds now: {_describe(label)}")
            elif not label.get("known_miss") and not held:
                problems.append(f"does not hold: {_describe(label)}")
        for change in result.changes:
            if change.get("severity") == "breaking" and id(change) not in covered:
                problems.append(
                    f"{pair.name}: breaking {change['rule']} at "
                    f"{change.get('origin') or change['path']} has no label"
                )
    problems += [f"label for a pair that does not exist: {p}" for p in by_pair]
    assert not problems, "\n".join(problems)


def test_the_project_labels_name_vendors_of_the_corpus() -> None:
    names = {v.name for v in VENDORS}
    files = {p.stem for p in LABELS.glob("*.json")}
    assert files <= names, files - names
